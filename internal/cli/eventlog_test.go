package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/sim"
)

// A gateway whose event log cannot be written (its disk full) says so in
// its log at once, with the cause; it never drops records silently.
func TestServeSaysTheEventLogIsLosingRecords(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full to fill a disk with")
	}
	srv, _ := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	bin := spillwayBin(t)
	dir := t.TempDir()
	base, logs := startServeLog(t, bin, dir, "providers:\n  openai: { base_url: \""+hs.URL+"/v1\" }\n",
		"--listen", "127.0.0.1:0", "--events", "/dev/full")
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-6-luna","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-test-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	resp.Body.Close()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs(), "record was not written to /dev/full") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if l := logs(); !strings.Contains(l, "event log") || !strings.Contains(l, "record was not written to /dev/full") || !strings.Contains(l, "no space left on device") {
		t.Fatalf("the gateway's log does not say the record was lost:\n%s", l)
	}
}

// An event log path of the user's (a flag, events.path) in a directory that
// does not exist is refused, naming it, by every command that writes one,
// as the queue's --db is; only the default location is made.
func TestAnEventLogInAMissingDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "dir")
	env := map[string]string{"HOME": dir}
	cfg := filepath.Join(dir, "spillway.yaml")
	os.WriteFile(cfg, []byte("events:\n  path: "+filepath.Join(missing, "e.jsonl")+"\n"), 0o600)
	for _, c := range []struct {
		name, from string
		args       []string
	}{
		{"serve", "--events", []string{"serve", "--listen", "127.0.0.1:0", "--events", filepath.Join(missing, "e.jsonl")}},
		{"exec", "--events", []string{"exec", "--events", filepath.Join(missing, "e.jsonl"), "--", "true"}},
		{"queue run", "--events", []string{"queue", "--db", "sqlite:" + filepath.Join(dir, "q.db"), "run", "--until-empty", "--events", filepath.Join(missing, "e.jsonl")}},
		{"serve with events.path", "events.path", []string{"--config", cfg, "serve", "--listen", "127.0.0.1:0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := run(t, env, "", c.args...)
			want := "the directory " + missing + " does not exist (create it, or leave " + c.from + " out for the default location)"
			if code != ExitFail || !strings.Contains(errOut, want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
				t.Fatal("the missing directory was made")
			}
		})
	}
}
