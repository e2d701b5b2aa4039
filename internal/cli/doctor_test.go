package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// spillway doctor from the command line: the verdict first, the exit codes
// a CI step branches on (0, 3, 4), and JSON.
func TestDoctorCommand(t *testing.T) {
	t.Parallel()
	srv, base := simtest.Start(t, nil)
	dir := t.TempDir()
	writeCfg := func(base string) string {
		p := filepath.Join(dir, strings.NewReplacer(":", "_", "/", "_").Replace(base)+".yaml")
		body := "providers:\n  openai: { base_url: \"" + base + "/v1\" }\n  anthropic: { base_url: \"" + base + "\" }\n  gemini: { base_url: \"" + base + "\" }\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := map[string]string{"HOME": dir, "OPENAI_API_KEY": "sk-cli", "ANTHROPIC_API_KEY": "sk-ant-cli", "GEMINI_API_KEY": "AIza-cli"}
	cfg := writeCfg(base)

	out, errs, code := run(t, env, "", "doctor", "--config", cfg, "--offline", "--samples", "3")
	if code != 0 || !strings.HasPrefix(out, "The keys checked and the network are fine") || !strings.Contains(out, "STATUS") {
		t.Fatalf("healthy: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, ".local", "state", "spillway", "doctor-baseline.json")); err != nil {
		t.Fatalf("a healthy run keeps the network baseline: %v", err)
	}

	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 1})
	out, _, code = run(t, env, "", "doctor", "--config", cfg, "--offline", "--samples", "3", "--probe", "--json")
	var r struct {
		Verdict string `json:"verdict"`
		Status  string `json:"status"`
		Cost    string `json:"cost"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 3 || r.Status != "degraded" || !strings.Contains(r.Verdict, "gpt-6-astra is at capacity right now") {
		t.Fatalf("capacity: exit %d %+v", code, r)
	}

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String()
	l.Close()
	out, _, code = run(t, env, "", "doctor", "--config", writeCfg(closed), "--offline", "--samples", "3")
	if code != 4 || !strings.Contains(out, "cannot be reached (TCP connect fails (3 of 3): connection refused)") {
		t.Fatalf("closed port: exit %d\n%s", code, out)
	}
	if _, errs, code = run(t, env, "", "doctor", "--status-page", "openai"); code != ExitUsage || !strings.Contains(errs, "PROVIDER=URL") {
		t.Fatalf("bad --status-page: exit %d %s", code, errs)
	}
}

// serve will not listen beyond loopback without gateway keys.
func TestServeRefusesAnOpenListenWithoutKeys(t *testing.T) {
	t.Parallel()
	_, errs, code := run(t, map[string]string{"HOME": t.TempDir()}, "", "serve", "--listen", "0.0.0.0:0", "--events", "-")
	if code != ExitUsage || !strings.Contains(errs, "reachable from other machines: set gateway.keys") {
		t.Fatalf("exit %d %s", code, errs)
	}
}
