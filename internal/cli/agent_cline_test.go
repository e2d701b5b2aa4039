package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/sim"
)

// clineGateway is a spillway serve in front of an in-process simulator
// with faults: chain openai (gpt-6-astra, gpt-6.1-sol) overflowing into
// chain claude (claude-sonnet-5-5, with spillway's own Anthropic key). It
// returns the simulator, the gateway's URL and the event log, and a stop
// that ends the gateway (its event log then whole).
func clineGateway(t *testing.T, faults ...sim.Fault) (srv *sim.Server, base, events string, stop func()) {
	t.Helper()
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	for _, f := range faults {
		if err := srv.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	events = filepath.Join(dir, "events.jsonl")
	cfg := "catalog: none\nproviders:\n  openai: { base_url: \"" + hs.URL + "/v1\" }\n  anthropic: { base_url: \"" + hs.URL + "\", api_key: sk-ant-test-cline-own, auth: key }\n" +
		"models:\n  gpt-6-astra: { provider: openai, tier: heavy, context: 272000 }\n  gpt-6.1-sol: { provider: openai, tier: medium, context: 272000 }\n" +
		"  claude-sonnet-5-5: { provider: anthropic, tier: medium, context: 200000 }\n" +
		"chains:\n  openai:\n    models: [gpt-6-astra, gpt-6.1-sol]\n    overflow: claude\n  claude: [claude-sonnet-5-5]\n"
	base, _, stop = startServeStop(t, spillwayBin(t), dir, cfg, "--listen", "127.0.0.1:0", "--events", events)
	return srv, base, events, stop
}

// clineOwn is a providers.json as Cline 3.0.65 writes it, with its own
// settings: an Anthropic provider it runs, a voice-input mode.
const clineOwn = `{
  "version": 1,
  "lastUsedProvider": "anthropic",
  "modes": {
    "voiceInput": {
      "providerId": "openai-native",
      "modelId": "whisper-1"
    }
  },
  "providers": {
    "anthropic": {
      "settings": {
        "provider": "anthropic",
        "apiKey": "sk-ant-test-users-own",
        "model": "claude-sonnet-5-5"
      },
      "updatedAt": "2026-12-06T15:20:03.633Z",
      "tokenSource": "manual"
    }
  }
}
`

// `spillway setup cline` on Cline's own providers.json merges spillway's
// provider; the real Cline then answers through the gateway with its
// model (gpt-6-astra) full, from gpt-6.1-sol, which it never named,
// sending $OPENAI_API_KEY; the printed undo line puts the old file back
// byte for byte; no Cline process is left behind.
func TestClineSetupThroughGateway(t *testing.T) {
	t.Parallel()
	clienttest.Cline(t)
	srv, base, events, stop := clineGateway(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	home, path := clienttest.ClineHome(t, clineOwn)

	setup := exec.Command(spillwayBin(t), "setup", "cline", "--url", base, "--model", "gpt-6-astra")
	setup.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	out, err := setup.CombinedOutput()
	if err != nil {
		t.Fatalf("setup cline: %v\n%s", err, out)
	}
	undo := undoCommand(t, string(out))
	if !strings.Contains(string(out), "updated "+path) {
		t.Fatalf("setup cline did not update %s:\n%s", path, out)
	}

	const key = "sk-test-cline-setup-5a"
	const prompt = "Reply with pong"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := clienttest.RunCline(t, ctx, home, 150*time.Second, []string{"OPENAI_API_KEY=" + key}, prompt)
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "[gpt-6.1-sol] "+prompt) {
		t.Fatalf("cline: exit %d, want the answer of gpt-6.1-sol\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	stop()
	if got := routes(t, events, "/v1/chat/completions"); got != "openai/gpt-6-astra:capacity > openai/gpt-6.1-sol:ok" {
		t.Errorf("routes %q: want gpt-6-astra full, then gpt-6.1-sol", got)
	}
	if got := srv.Snapshot().Models["gpt-6.1-sol"].Credentials; got[sim.Fingerprint(key, "")] != 1 {
		t.Errorf("gpt-6.1-sol saw credentials %v, want $OPENAI_API_KEY's once", got)
	}

	if b, err := exec.Command("sh", "-c", undo).CombinedOutput(); err != nil {
		t.Fatalf("undo %q: %v\n%s", undo, err, b)
	}
	if b, _ := os.ReadFile(path); string(b) != clineOwn {
		t.Errorf("after the undo line providers.json is not the old file byte for byte:\n%s", b)
	}
	if n := clienttest.ReapClineDaemons(home); n != 0 {
		t.Errorf("%d cline hub daemon(s) were left running", n)
	}
}

// The real Cline's own shell tool (run_commands) through the gateway: it
// runs `cat token.txt`, whose content only the command can know, and the
// answer quotes it; with gpt-6-astra full the next model of the chain
// answers both turns, and with every OpenAI model full Anthropic's
// claude-sonnet-5-5 does (the requests translated, spillway's own key).
func TestClineToolLoopThroughGateway(t *testing.T) {
	t.Parallel()
	clienttest.Cline(t)
	cases := []struct {
		name   string
		full   []string
		answer string
		route  string
	}{
		{"next model", []string{"gpt-6-astra"}, "gpt-6.1-sol", "openai/gpt-6-astra:capacity > openai/gpt-6.1-sol:ok"},
		{"another vendor", []string{"gpt-6-astra", "gpt-6.1-sol"}, "claude-sonnet-5-5", "openai/gpt-6-astra:capacity > openai/gpt-6.1-sol:capacity > anthropic/claude-sonnet-5-5:ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var faults []sim.Fault
			for _, m := range c.full {
				faults = append(faults, sim.Fault{Model: m, Kind: "capacity", Count: -1})
			}
			srv, base, events, stop := clineGateway(t, faults...)
			if err := srv.AddScript(sim.Script{Model: c.answer, Turns: []sim.ScriptTurn{
				{Call: sim.ScriptCalls{{Tool: "shell", Arguments: map[string]any{"command": "cat token.txt"}}}},
				{Text: "The token is: {result}"},
			}}); err != nil {
				t.Fatal(err)
			}
			home, _ := clienttest.ClineHome(t, clienttest.ClineProviders(base+"/v1", "sk-test-cline-tools", "gpt-6-astra"))
			token := fmt.Sprintf("spill-%x", sha256.Sum256([]byte(home)))[:22]
			_, work := clienttest.Env(t, home, nil)
			if err := os.WriteFile(filepath.Join(work, "token.txt"), []byte(token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r := clienttest.RunCline(t, ctx, home, 150*time.Second, nil, "What does token.txt say?")
			if r.ExitCode != 0 || !strings.Contains(r.Stdout, "run_commands") || !strings.Contains(r.Stdout, "The token is: ") {
				t.Fatalf("cline: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
			}
			_, answer, _ := strings.Cut(r.Stdout, "The token is: ")
			if !strings.Contains(answer, token) {
				t.Errorf("the answer does not quote the command's output %s:\n%s", token, r.Stdout)
			}
			stop()
			// two turns (the call, then its result), each walking the chain;
			// the event log may hold them under one request id or two
			got := strings.ReplaceAll(routes(t, events, "/v1/chat/completions"), " | ", " > ")
			if want := c.route + " > " + c.route; got != want {
				t.Errorf("routes %q, want %q", got, want)
			}
		})
	}
}

// `spillway exec -- cline …` pointed straight at the simulator (no
// gateway): reruns Cline on the next model when its first is full (Cline
// cannot resume headless), exits 75 when every model stays full and 77
// when the key is refused. The faults carry a retry-after of 1 ms, which
// Cline's own retries (the AI SDK's five, no setting turns them off)
// honour: they would take about a minute otherwise.
func TestExecCline(t *testing.T) {
	t.Parallel()
	cline := clienttest.Cline(t)
	const prompt = "Reply with pong"
	cases := []struct {
		name    string
		models  string
		faults  []sim.Fault
		code    int
		stdout  string // in Cline's output
		stderr  string // in exec's
		minRuns int
	}{
		{"next model", "gpt-6-astra,gpt-6.1-sol", []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1, RetryAfter: 0.001}}, 0, "[gpt-6.1-sol] " + prompt, "run 2 on gpt-6.1-sol", 2},
		// one model, so that the ladder's one rung costs two runs, not four
		{"every model full", "gpt-6-astra", []sim.Fault{{Model: "*", Kind: "capacity", Count: -1, RetryAfter: 0.001}}, 75, "", "global outage", 2},
		{"bad key", "gpt-6-astra,gpt-6.1-sol", []sim.Fault{{Model: "*", Kind: "auth", Count: -1}}, 77, "", "auth", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv.Handler())
			t.Cleanup(func() { srv.Close(); hs.Close() })
			for _, f := range c.faults {
				if err := srv.AddFault(f); err != nil {
					t.Fatal(err)
				}
			}
			home, providers := clienttest.ClineHome(t, clienttest.ClineProviders(hs.URL+"/v1", "sk-test-cline-exec", "gpt-6-astra"))
			before, err := os.ReadFile(providers)
			if err != nil {
				t.Fatal(err)
			}
			env, work := clienttest.Env(t, home, clienttest.ClineQuiet)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, spillwayBin(t), "exec", "--models", c.models, "--ladder", "1ms", "--", cline, prompt)
			cmd.Env, cmd.Dir = env, work
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			err = cmd.Run()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("spillway exec: exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
			if code != c.code || !strings.Contains(stdout.String()+stderr.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
				t.Fatalf("exit %d, want %d with %q and %q", code, c.code, c.stdout, c.stderr)
			}
			if runs := strings.Count(stderr.String(), "spillway: run "); runs < c.minRuns {
				t.Errorf("%d runs, want at least %d", runs, c.minRuns)
			}
			if strings.Contains(stderr.String(), "resuming") {
				t.Errorf("Cline cannot resume headless, yet exec says it resumed:\n%s", stderr.String())
			}
			// cline -m saves the model of each run; exec puts the user's file back
			if after, err := os.ReadFile(providers); err != nil || !bytes.Equal(after, before) {
				t.Errorf("providers.json after exec (%v):\n%s\nwant the bytes before:\n%s", err, after, before)
			}
		})
	}
}

// setup cline without the agent: --print changes nothing, --cline-dir and
// $CLINE_DIR move the file, and a file Cline cannot read is named (its
// path and line) and left as it is.
func TestSetupCline(t *testing.T) {
	t.Parallel()
	const broken = "{\n  // Cline's JSON.parse takes no comments\n  \"version\": 1, \"providers\": {}\n}\n"
	const elsewhere = `{"version":1,"lastUsedProvider":"openai-compatible","modes":{},"providers":{"openai-compatible":{"settings":{"provider":"openai-compatible","apiKey":"sk-test-or-0000","model":"my-own","baseUrl":"https://openrouter.example.test/api/v1"},"updatedAt":"2026-12-06T15:20:03.633Z","tokenSource":"manual"}}}`
	cases := []struct {
		name     string
		args     []string
		env      func(home string) map[string]string
		file     func(home string) string // the providers.json expected
		existing string
		code     int
		want     []string
		written  bool
	}{
		{"print", []string{"cline", "--print", "--url", "http://127.0.0.1:9000"}, nil, nil, "", 0,
			[]string{`"baseUrl": "http://127.0.0.1:9000/v1"`, `"lastUsedProvider": "openai-compatible"`, "$OPENAI_API_KEY"}, false},
		{"home", []string{"cline", "--url", "http://127.0.0.1:9000"}, nil, nil, "", 0,
			[]string{"wrote ", "there was no providers.json before; undo: rm "}, true},
		{"--cline-dir", []string{"cline", "--cline-dir", "CLINEDIR"}, nil, func(home string) string { return filepath.Join(home, "moved", "data", "settings", "providers.json") }, "", 0,
			[]string{"moved/data/settings/providers.json"}, true},
		{"$CLINE_DIR", []string{"cline"}, func(home string) map[string]string {
			return map[string]string{"HOME": home, "CLINE_DIR": filepath.Join(home, "moved")}
		}, func(home string) string { return filepath.Join(home, "moved", "data", "settings", "providers.json") }, "", 0,
			[]string{"moved/data/settings/providers.json"}, true},
		{"a file Cline cannot read", []string{"cline"}, nil, nil, broken, ExitFail,
			[]string{"providers.json", "line 2, column 3", "nothing was changed"}, false},
		// an entry of another endpoint: its model gives way to the codex
		// chain's first, and its emptied key is said
		{"another endpoint's entry", []string{"cline", "--url", "http://127.0.0.1:9000"}, nil, nil, elsewhere, 0,
			[]string{"model gpt-6-astra", "note: the apiKey of providers.openai-compatible was removed (kept in ", "providers.json.spillway-backup-", "Cline now sends $OPENAI_API_KEY"}, true},
		{"the gateway's entry keeps its model", []string{"cline", "--url", "http://127.0.0.1:9000", "--print"}, nil, nil, strings.Replace(elsewhere, "https://openrouter.example.test/api/v1", "http://127.0.0.1:9000/v1", 1), 0,
			[]string{`"model": "my-own"`}, false},
		{"--print shows the model it would write", []string{"cline", "--url", "http://127.0.0.1:9000", "--print"}, nil, nil, elsewhere, 0,
			[]string{`"model": "gpt-6-astra"`}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			env := map[string]string{"HOME": home}
			if c.env != nil {
				env = c.env(home)
			}
			path := filepath.Join(home, ".cline", "data", "settings", "providers.json")
			if c.file != nil {
				path = c.file(home)
			}
			if c.existing != "" {
				_ = os.MkdirAll(filepath.Dir(path), 0o700)
				if err := os.WriteFile(path, []byte(c.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string(nil), c.args...)
			for i, a := range args {
				if a == "CLINEDIR" {
					args[i] = filepath.Join(home, "moved")
				}
			}
			out, errOut, code := runSetup(t, env, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
			b, err := os.ReadFile(path)
			switch {
			case c.existing != "" && !c.written && string(b) != c.existing:
				t.Errorf("the file changed:\n%s", b)
			case c.existing == "" && c.written != (err == nil):
				t.Errorf("written %v (%v), want %v", err == nil, err, c.written)
			}
		})
	}
}
