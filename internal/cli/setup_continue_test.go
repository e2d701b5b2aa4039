package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/setup"
)

func TestSetupContinue(t *testing.T) {
	t.Parallel()
	entry := setup.ContinueSetup{BaseURL: "http://127.0.0.1:9000", Model: "gpt-6-astra"}
	cases := []struct {
		name     string
		existing string // "" for no file
		args     []string
		env      map[string]string // beside HOME
		code     int
		stdout   []string
		stderr   []string
		file     string // the file after; "" for the existing one unchanged (or none)
	}{
		{"print changes nothing", "name: a\nversion: \"1\"\n", []string{"--print", "--url", "http://127.0.0.1:9000"}, nil, 0,
			[]string{entry.Entry("")}, []string{"put first under models:"}, ""},
		{"a new file", "", []string{"--url", "http://127.0.0.1:9000"}, nil, 0,
			[]string{"wrote ", "there was no config.yaml before; undo: rm ", "start the gateway with: spillway serve"},
			[]string{"note: OPENAI_API_KEY is not set here"},
			"name: Local Config\nversion: 1.0.0\nschema: v1\nmodels:\n" + entry.Entry("  ")},
		{"merged, its key variable set", "name: a\nversion: \"1\"\nmodels:\n  - name: b\n    provider: openai\n    model: m\n",
			[]string{"--url", "http://127.0.0.1:9000", "--env-key", "SPILLWAY_KEY", "--model", "gpt-6.1-sol"}, map[string]string{"SPILLWAY_KEY": "sk-test-x"}, 0,
			[]string{"updated ", "cn now uses spillway at http://127.0.0.1:9000/v1 (running gpt-6.1-sol)", "old file kept as ", "undo: cp "}, nil,
			"name: a\nversion: \"1\"\nmodels:\n" + setup.ContinueSetup{BaseURL: "http://127.0.0.1:9000", Model: "gpt-6.1-sol", EnvKey: "SPILLWAY_KEY"}.Entry("  ") + "  - name: b\n    provider: openai\n    model: m\n"},
		{"a file cn cannot read", "name: a\nmodels:\n  - name: b\n    provider: openai\n    model: m\n", []string{"--url", "http://127.0.0.1:9000"}, nil, ExitFail,
			nil, []string{"config.yaml: version: cn requires a string"}, ""},
		{"a bad --env-key", "", []string{"--env-key", "1X"}, nil, ExitUsage, nil, []string{"--env-key"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			dir := filepath.Join(home, "cn")
			path := filepath.Join(dir, "config.yaml")
			if c.existing != "" {
				os.MkdirAll(dir, 0o700)
				os.WriteFile(path, []byte(c.existing), 0o600)
			}
			env := map[string]string{"HOME": home, "CONTINUE_GLOBAL_DIR": dir}
			for k, v := range c.env {
				env[k] = v
			}
			out, errOut, code := runSetup(t, env, append([]string{"continue"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, out, errOut)
			}
			for _, w := range c.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout has no %q:\n%s", w, out)
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr has no %q:\n%s", w, errOut)
				}
			}
			b, err := os.ReadFile(path)
			switch {
			case c.file != "":
				if string(b) != c.file {
					t.Errorf("the file:\n%s\nwant:\n%s", b, c.file)
				}
			case c.existing == "":
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a file was written: %v\n%s", err, b)
				}
			default:
				if string(b) != c.existing {
					t.Errorf("the file changed:\n%s", b)
				}
				if backups, _ := filepath.Glob(path + ".spillway-backup-*"); len(backups) > 0 {
					t.Errorf("a backup was made: %v", backups)
				}
			}
		})
	}
}
