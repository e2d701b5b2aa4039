package cli

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/sim"
)

// Qwen Code 0.24.4, the real agent, through the gateway and under exec,
// against the simulator: each part a parallel subtest with models of its
// own, so the faults of one never touch another.

// qwenUserSettings is a settings.json of the user's own: comments, a
// theme, a model provider of their own and Qwen Code's own fallbacks.
const qwenUserSettings = `{
  // my Qwen Code settings
  "ui": { "theme": "GitHub" }, /* my theme */
  "model": {
    "name": "local-llama"
  },
  "modelProviders": {
    "openai": [
      // my local model
      { "id": "local-llama", "name": "Local", "baseUrl": "http://127.0.0.1:9/v1", "envKey": "LOCAL_KEY" }
    ]
  },
  "modelFallbacks": "qwen-plus"
}
`

// qwenGatewayConfig: chains whose first models the tests fill.
const qwenGatewayConfig = `catalog: none
providers:
  openai: { base_url: "SIM/v1" }
  anthropic: { base_url: "SIM", api_key: env:SPILLWAY_TEST_KEY }
models:
  gpt-6-sol:         { provider: openai, tier: medium }
  gpt-6.1-sol:       { provider: openai, tier: medium }
  gpt-6-astra:       { provider: openai, tier: medium }
  gpt-6-luna:        { provider: openai, tier: medium }
  gpt-5.5:           { provider: openai, tier: medium }
  claude-sonnet-5-5: { provider: anthropic, tier: medium }
chains:
  setup: [gpt-6-sol, gpt-6.1-sol]
  tools: [gpt-6-astra, gpt-6-luna]
  cross:
    models: [gpt-5.5]
    overflow: claude
  claude: [claude-sonnet-5-5]
`

func TestQwenCode(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs Qwen Code")
	}
	clienttest.Qwen(t)
	bin := spillwayBin(t)
	srv, _ := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	// full: the first of each chain the gateway walks, and exec's; a
	// retry-after of 1 ms, which Qwen Code waits between its own
	// attempts, keeps its seven attempts short
	for _, m := range []string{"gpt-6-sol", "gpt-6-astra", "gpt-5.5", "gpt-5.6-luna"} {
		if err := srv.AddFault(sim.Fault{Model: m, Kind: "capacity", Count: -1, RetryAfter: 0.001}); err != nil {
			t.Fatal(err)
		}
	}
	// exec's first model: full once the tool loop is under way
	if err := srv.AddFault(sim.Fault{Model: "gpt-5.6-sol", Kind: "capacity", Count: -1, RetryAfter: 0.001, MidLoop: true}); err != nil {
		t.Fatal(err)
	}
	// a tool loop: the shell tool cats token.txt, then the answer quotes it
	for _, m := range []string{"gpt-6-luna", "gpt-5.6-sol", "gpt-6.1-terra"} {
		script := sim.Script{Model: m, Turns: []sim.ScriptTurn{
			{Call: sim.ScriptCalls{{Tool: "shell", Arguments: map[string]any{"command": "cat token.txt"}}}},
			{Text: "The command printed {result}"},
		}}
		if err := srv.AddScript(script); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir() // spillway's home
	events := filepath.Join(dir, "events.jsonl")
	base := startServe(t, bin, dir, strings.ReplaceAll(qwenGatewayConfig, "SIM", hs.URL), "--listen", "127.0.0.1:0", "--events", events)
	ctx := t.Context()

	t.Run("setup, then a fallback it did not name, then undo", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		qdir := filepath.Join(home, ".qwen")
		os.MkdirAll(qdir, 0o700)
		path := filepath.Join(qdir, "settings.json")
		if err := os.WriteFile(path, []byte(qwenUserSettings), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "setup", "qwen", "--url", base, "--model", "gpt-6-sol", "--env-key", "QWEN_TEST_KEY")
		cmd.Env = append(dashEnv(dir), "HOME="+home)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("setup qwen: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(path)
		for _, kept := range []string{"// my Qwen Code settings", "/* my theme */", `"local-llama"`, `"theme": "GitHub"`} {
			if !bytes.Contains(b, []byte(kept)) {
				t.Fatalf("the merged file lost %s:\n%s", kept, b)
			}
		}
		prompt := "Reply with pong"
		res := clienttest.RunQwen(t, ctx, clienttest.QwenOptions{Home: home, Prompt: prompt, Timeout: 4 * time.Minute,
			Env: []string{"QWEN_TEST_KEY=sk-test-qwen-setup"}})
		if want := sim.Answer("gpt-6.1-sol", prompt, 16); res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
			t.Fatalf("exit %d, stdout %q: want the fallback's answer %q", res.ExitCode, res.Stdout, want)
		}
		// (as set up, on the Responses API)
		if got := routes(t, events, "/v1/responses"); !strings.Contains(got, "openai/gpt-6-sol:capacity > openai/gpt-6.1-sol:ok") {
			t.Fatalf("routes %q: want gpt-6-sol full, then gpt-6.1-sol", got)
		}
		if err := exec.Command("sh", "-c", undoCommand(t, string(out))).Run(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, []byte(qwenUserSettings)) {
			t.Fatalf("after the undo line the file is\n%s\nnot the original", b)
		}
	})

	t.Run("a tool loop through the gateway", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		work := filepath.Join(home, "work")
		os.MkdirAll(work, 0o700)
		token := writeToken(t, work)
		res := clienttest.RunQwen(t, ctx, clienttest.QwenOptions{BaseURL: base, Model: "gpt-6-astra", APIKey: "sk-test-qwen-tools",
			Home: home, Prompt: "What does token.txt say?", Timeout: 4 * time.Minute})
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, "The command printed") || !strings.Contains(res.Stdout, token) {
			t.Fatalf("exit %d, stdout %q: want the answer quoting the file, %s", res.ExitCode, res.Stdout, token)
		}
		if got := routes(t, events, "/v1/chat/completions"); !strings.Contains(got, "openai/gpt-6-astra:capacity > openai/gpt-6-luna:ok") {
			t.Fatalf("routes %q: want gpt-6-astra full, then gpt-6-luna", got)
		}
	})

	t.Run("another vendor's model when its own are full", func(t *testing.T) {
		t.Parallel()
		prompt := "Reply with pong"
		res := clienttest.RunQwen(t, ctx, clienttest.QwenOptions{BaseURL: base, Model: "gpt-5.5", APIKey: "sk-test-qwen-cross",
			Prompt: prompt, Timeout: 4 * time.Minute})
		if want := sim.Answer("claude-sonnet-5-5", prompt, 16); res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
			t.Fatalf("exit %d, stdout %q: want Claude's answer %q", res.ExitCode, res.Stdout, want)
		}
		if got := routes(t, events, "/v1/chat/completions"); !strings.Contains(got, "openai/gpt-5.5:capacity > anthropic/claude-sonnet-5-5:ok") {
			t.Fatalf("routes %q: want gpt-5.5 full, then claude-sonnet-5-5", got)
		}
	})

	// exec, Qwen Code pointed straight at the simulator, in work (with
	// token.txt) under a home of its own
	execQwen := func(t *testing.T, key string, args ...string) (code int, stdout, stderr, token string) {
		t.Helper()
		home := t.TempDir()
		env, work := clienttest.Env(t, home, append(clienttest.QwenQuiet(t, home), "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY="+key))
		token = writeToken(t, work)
		cmd := exec.CommandContext(ctx, bin, append([]string{"exec", "--events", "-"}, args...)...)
		cmd.Env, cmd.Dir = env, work
		code, stdout, stderr = runCmd(t, cmd)
		t.Logf("spillway exec %s: exit %d\n--- stdout:\n%s\n--- stderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
		return code, stdout, stderr, token
	}
	qwen := clienttest.Qwen(t)

	t.Run("exec resumes it on the next model in the middle of its tool loop", func(t *testing.T) {
		t.Parallel()
		code, out, errOut, token := execQwen(t, "sk-test-qwen-exec", "--resume", "--models", "gpt-5.6-sol,gpt-6.1-terra", "--ladder", "1ms", "--",
			qwen, "--auth-type", "openai", "--yolo", "What does token.txt say?")
		if code != 0 || !strings.Contains(out, "The command printed") || !strings.Contains(out, token) {
			t.Fatalf("exit %d, stdout %q: want the answer quoting %s", code, out, token)
		}
		if !regexp.MustCompile(`run 2 on gpt-6.1-terra, resuming session [0-9a-f-]{36}`).MatchString(errOut) {
			t.Fatalf("stderr %q: want run 2 resuming the session", errOut)
		}
		// the resumed session held the call and its output: the next model
		// was asked once, for the answer
		if st := srv.Snapshot().Models["gpt-6.1-terra"]; st == nil || st.Received != 1 || st.Served != 1 {
			t.Fatalf("gpt-6.1-terra's stats %+v: want one request, the answer", st)
		}
	})

	t.Run("exec exits 75 when every model stays full", func(t *testing.T) {
		t.Parallel()
		code, _, errOut, _ := execQwen(t, "sk-test-qwen-full", "--models", "gpt-5.6-luna", "--ladder", "1ms", "--", qwen, "--auth-type", "openai", "--yolo", "Reply with pong")
		if code != 75 || !strings.Contains(errOut, "global outage") {
			t.Fatalf("exit %d, want 75 (global outage)", code)
		}
	})

	t.Run("exec exits 77 on a refused key", func(t *testing.T) {
		t.Parallel()
		asrv, _ := sim.New(sim.Options{Seed: 2, TokenRate: 0})
		ahs := httptest.NewServer(asrv.Handler())
		t.Cleanup(func() { asrv.Close(); ahs.Close() })
		asrv.AddFault(sim.Fault{Model: "*", Kind: "auth", Count: -1})
		home := t.TempDir()
		env, work := clienttest.Env(t, home, append(clienttest.QwenQuiet(t, home), "OPENAI_BASE_URL="+ahs.URL+"/v1", "OPENAI_API_KEY=sk-test-qwen-bad"))
		cmd := exec.CommandContext(ctx, bin, "exec", "--events", "-", "--models", "gpt-6-sol,gpt-6.1-sol", "--ladder", "1ms", "--", qwen, "--auth-type", "openai", "--yolo", "Reply with pong")
		cmd.Env, cmd.Dir = env, work
		code, stdout, stderr := runCmd(t, cmd)
		if out := stdout + stderr; code != 77 || !strings.Contains(out, "auth") {
			t.Fatalf("exit %d, want 77 (auth):\n%s", code, out)
		}
	})
}

// writeToken writes token.txt into dir, holding a token only a command
// that reads the file can know, and returns the token.
func writeToken(t *testing.T, dir string) string {
	t.Helper()
	token := fmt.Sprintf("spill-%d", time.Now().UnixNano()%1000003)
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return token
}

// setup qwen without the agent: --print changes nothing, a write keeps a
// backup and prints the line that undoes it, and what it cannot do is a
// usage error that says what to give.
func TestSetupQwen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		existing string // ~/.qwen/settings.json; "" for none
		args     []string
		code     int
		out      []string
		changed  bool
	}{
		{"--print changes nothing", qwenUserSettings, []string{"--model", "gpt-6-sol", "--print"}, ExitOK,
			[]string{`"baseUrl": "http://127.0.0.1:8790/v1"`, `"maxRetries": 0`, `"wireApi": "responses"`, `"modelFallbacks": ""`, "export OPENAI_API_KEY="}, false},
		{"a write keeps a backup, and says how to undo it", qwenUserSettings, []string{"--model", "gpt-6-sol"}, ExitOK,
			[]string{"updated ", "old file kept as ", "undo: cp "}, true},
		{"no file yet", "", []string{"--model", "gpt-6-sol"}, ExitOK, []string{"wrote ", "undo: rm "}, true},
		{"a file Qwen Code cannot read", "{\"ui\": {},}", []string{"--model", "m"}, ExitFail, []string{"line 1, column 10: a trailing comma"}, false},
		{"a bad --env-key", "", []string{"--model", "m", "--env-key", "MY KEY"}, ExitUsage, []string{"--env-key"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			path := filepath.Join(home, ".qwen", "settings.json")
			if c.existing != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				os.WriteFile(path, []byte(c.existing), 0o600)
			}
			stdout, stderr, code := runSetup(t, map[string]string{"HOME": home}, append([]string{"qwen", "--url", "http://127.0.0.1:8790"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			for _, w := range c.out {
				if !strings.Contains(stdout+stderr, w) {
					t.Fatalf("output lacks %q:\n%s%s", w, stdout, stderr)
				}
			}
			b, err := os.ReadFile(path)
			if changed := string(b) != c.existing; changed != c.changed {
				t.Fatalf("file changed: %v, want %v (%v)\n%s", changed, c.changed, err, b)
			}
		})
	}
}
