package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serve's banner names every base URL its providers serve, the config it
// loaded and the fleet; with --log-format json every line of stderr is one
// JSON object (go-redis's own lines too); a fleet whose store does not
// answer says so at the start and shows degraded; stopping is logged.
func TestServeSaysWhatItServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildSpillway(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spillway.yaml")
	os.WriteFile(cfg, []byte("state: redis://127.0.0.1:1/0\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--events", "-", "--log-format", "json")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var lines []map[string]any
	var listening map[string]any
	for listening == nil && sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		lines = append(lines, rec)
		if rec["msg"] == "listening" {
			listening = rec
		}
	}
	if listening == nil {
		t.Fatalf("no listening record: %v", lines)
	}
	base, _ := listening["listen"].(string)
	for k, want := range map[string]string{"openai_base_url": base + "/v1", "chatgpt_base_url": base + "/backend-api/codex", "anthropic_base_url": base,
		"gemini_base_url": base, "code_assist_endpoint": base, "config": cfg, "events": "-", "dashboard": base + "/"} {
		if listening[k] != want {
			t.Errorf("banner %s = %v, want %q", k, listening[k], want)
		}
	}
	if f, _ := listening["fleet"].(string); !strings.HasPrefix(f, "redis://127.0.0.1:1/0 (unreachable") {
		t.Errorf("banner fleet = %q", f)
	}
	said := false
	for _, rec := range lines {
		if m, _ := rec["msg"].(string); strings.Contains(m, "shared state") && strings.Contains(m, "unreachable") {
			said = true
		}
	}
	if !said {
		t.Errorf("the unreachable store was not said at the start: %v", lines)
	}
	resp, err := http.Get(base + "/spillway/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Fleet map[string]any `json:"fleet"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	json.Unmarshal(b, &st)
	if st.Fleet["degraded"] != true {
		t.Errorf("status before any request: %s", b)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Errorf("a line that is not JSON: %q", sc.Text())
		}
	}
	cmd.Wait()
	if !strings.Contains(strings.Join(rest, "\n"), `"msg":"stopped"`) {
		t.Errorf("nothing logged at shutdown: %v", rest)
	}
}
