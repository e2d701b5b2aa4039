package setup

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The generated units, against golden files (go test ./internal/setup -update
// rewrites them).
func TestServiceUnits(t *testing.T) {
	s := Service{Binary: "/usr/local/bin/spillway", Args: []string{"--config", "/home/me/.config/spillway/spillway.yaml", "--listen", "127.0.0.1:8787"}, Home: "/home/me"}
	for goos, golden := range map[string]string{"linux": "spillway.service.golden", "darwin": "dev.spillway.serve.plist.golden"} {
		t.Run(goos, func(t *testing.T) {
			path, text, enable, err := s.For(goos)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("..", "..", "testdata", "setup", golden)
			if *update {
				os.WriteFile(file, []byte(text), 0o644)
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if text != string(want) {
				t.Errorf("%s differs from %s:\n%s", goos, file, text)
			}
			if !strings.HasPrefix(path, "/home/me/") || len(enable) < 2 {
				t.Errorf("path %s enable %v", path, enable)
			}
		})
	}
	if _, _, _, err := s.For("windows"); err == nil {
		t.Error("a service for windows")
	}
	if _, _, _, err := (Service{Binary: "spillway", Home: "/home/me"}).For("linux"); err == nil {
		t.Error("a relative binary path accepted")
	}
}

func TestWriteServiceKeepsABackup(t *testing.T) {
	dir := t.TempDir()
	s := Service{Binary: "/usr/local/bin/spillway", Home: dir}
	path, text, _, _ := s.For("linux")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if p, backup, err := WriteService(path, text, now); err != nil || p != path || backup != "" {
		t.Fatalf("first write: %s %s %v", p, backup, err)
	}
	if _, backup, _ := WriteService(path, text, now); backup != "" {
		t.Fatal("an unchanged unit was written again")
	}
	s.Args = []string{"--listen", "127.0.0.1:9000"}
	_, text2, _, _ := s.For("linux")
	_, backup, err := WriteService(path, text2, now)
	if err != nil || backup == "" {
		t.Fatalf("a changed unit: backup %q %v", backup, err)
	}
	if b, _ := os.ReadFile(backup); string(b) != text {
		t.Fatal("the backup is not the old unit")
	}
}
