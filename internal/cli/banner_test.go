package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
)

// serve's banner names every base URL its providers serve, the config it
// loaded and the fleet; with --log-format json every line of stderr is one
// JSON object (go-redis's own lines too); a fleet whose store does not
// answer says so at the start and shows degraded; stopping is logged.
func TestServeSaysWhatItServes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := spillwayBin(t)
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

// The banner lists the routes that answer, under the words the agents'
// settings use: a format only when a configured model speaks it (or
// unknown models pass through to its provider), a sign-in's route only on
// a gateway of one's own (beyond loopback or with gateway.keys it answers
// 403).
func TestBannerListsWhatAnswers(t *testing.T) {
	t.Parallel()
	const tail = "  dashboard: http://ADDR/\n  config: spillway.yaml\n  events: -\n  fleet: none (state: memory)\n"
	all := "spillway serve: listening on http://ADDR\n  OpenAI base URL: http://ADDR/v1\n  Codex on a ChatGPT plan (provider base_url): http://ADDR/backend-api/codex\n  Anthropic base URL: http://ADDR\n  Gemini base URL: http://ADDR\n  Gemini CLI signed in with Google (CODE_ASSIST_ENDPOINT): http://ADDR\n" + tail
	for _, c := range []struct{ name, yaml, addr, want string }{
		{"the built-in catalog", "listen: 127.0.0.1:8787\n", "127.0.0.1:8787", all},
		{"one OpenAI-compatible server, catalog: none", "catalog: none\nproviders:\n  local: { type: openai, base_url: \"http://127.0.0.1:9000/v1\" }\nmodels:\n  big: { provider: local, tier: heavy }\nchains:\n  mine: [big]\n", "127.0.0.1:8787",
			"spillway serve: listening on http://ADDR\n  OpenAI base URL: http://ADDR/v1\n  Codex on a ChatGPT plan (provider base_url): http://ADDR/backend-api/codex\n" + tail},
		{"Claude models only, catalog: none", "catalog: none\nmodels:\n  claude-opus-5-5: { provider: anthropic, tier: heavy }\n", "127.0.0.1:8787",
			"spillway serve: listening on http://ADDR\n  Anthropic base URL: http://ADDR\n" + tail},
		{"the same, unknown models passed through", "catalog: none\npassthrough_unknown: true\nmodels:\n  claude-opus-5-5: { provider: anthropic, tier: heavy }\n", "127.0.0.1:8787", all},
		{"a team gateway: gateway.keys", "gateway: { keys: [ { name: alice, key: \"sha256:1bd8fd47297046f993e608e398d5905b00a33e163c6b1172dd38887fed05ed6a\" } ] }\n", "127.0.0.1:8787",
			"spillway serve: listening on http://ADDR\n  OpenAI base URL: http://ADDR/v1\n  Anthropic base URL: http://ADDR\n  Gemini base URL: http://ADDR\n" + tail},
		{"beyond loopback", "listen: 10.1.2.3:8787\ngateway: { keys: [ { name: alice, key: \"sha256:1bd8fd47297046f993e608e398d5905b00a33e163c6b1172dd38887fed05ed6a\" } ] }\n", "10.1.2.3:8787",
			"spillway serve: listening on http://ADDR\n  OpenAI base URL: http://ADDR/v1\n  Anthropic base URL: http://ADDR\n  Gemini base URL: http://ADDR\n" + tail},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse("spillway.yaml", []byte(c.yaml), func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			addr, _ := net.ResolveTCPAddr("tcp", c.addr)
			var b strings.Builder
			newBanner(addr, cfg, "-", "none (state: memory)").write(&b)
			if want := strings.ReplaceAll(c.want, "ADDR", c.addr); b.String() != want {
				t.Fatalf("banner:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
}
