package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
)

// The real OpenCode (1.18.33) through spillway: set up by spillway setup
// opencode, answered through the gateway with its first model full, its
// own bash tool in the loop, another vendor's model answering when every
// OpenAI model is full, and wrapped by spillway exec. Each run of OpenCode
// takes tens of seconds to start here, so the tests run in parallel and
// each runs it as few times as what it shows needs.

// openCodeTimeout bounds one run of OpenCode (it is no expectation of how
// long one takes).
const openCodeTimeout = 3 * time.Minute

// simPost posts body to the simulator at addr's control path.
func simPost(t *testing.T, addr, path, body string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s %s: %d", path, body, resp.StatusCode)
	}
}

// tokenScript is a script for every model: OpenCode's bash tool cats
// token.txt, and the answer quotes what it printed.
const tokenScript = `{"model":"*","turns":[{"call":{"tool":"shell","arguments":{"command":"cat token.txt"}}},{"text":"The token is {result}"}]}`

// openCodeToken is in token.txt only: the model never sees it but in
// what the command printed.
const openCodeToken = "spill-opencode-4f1d93"

// openCodeHome is a home for one OpenCode run with token.txt in its
// working directory (home/work, as clienttest runs it).
func openCodeHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "work", "token.txt"), []byte(openCodeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// gatewayFor is a gateway configuration in front of the simulator at
// addr: OpenAI passed the client's key, Anthropic with a key of its own
// (for the codex chain's overflow to the claude chain).
func gatewayFor(addr string) string {
	return "providers:\n  openai: { base_url: \"http://" + addr + "/v1\" }\n" +
		"  anthropic: { base_url: \"http://" + addr + "\", api_key: sk-ant-test-own-0123456789, auth: key }\n" +
		"chains:\n  codex:\n    models: [gpt-6-astra, gpt-6.1-sol, gpt-6-luna]\n    overflow: claude\n"
}

// The user's own OpenCode configuration: comments, a trailing comma, a
// provider and settings of its own.
const openCodeUserConfig = `{
  // mine: OpenCode's own settings
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false, /* no update checks */
  "share": "disabled",
  "provider": {
    "local": { "npm": "@ai-sdk/openai-compatible", "name": "Local", "options": { "baseURL": "http://127.0.0.1:9/v1" }, "models": { "m": {} } },
  },
}
`

// setup opencode on the user's own opencode.jsonc merges the provider;
// OpenCode then answers through the gateway with gpt-6-astra full (from
// gpt-6.1-sol, which it never named), after its own bash tool printed the
// token; the printed undo line restores the file byte for byte.
func TestOpenCodeSetUpThroughGateway(t *testing.T) {
	t.Parallel()
	clienttest.OpenCode(t)
	bin := spillwayBin(t)
	simAddr := startReadmeSim(t, bin)
	simPost(t, simAddr, "/_sim/faults", `{"model":"gpt-6-astra","fault":"capacity","count":-1}`)
	simPost(t, simAddr, "/_sim/script", tokenScript)
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	base, _, stop := startServeStop(t, bin, dir, gatewayFor(simAddr), "--listen", "127.0.0.1:0", "--events", events)

	home := openCodeHome(t)
	cfgDir := clienttest.OpenCodeConfigDir(home)
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cfgDir, "opencode.jsonc")
	if err := os.WriteFile(file, []byte(openCodeUserConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	setup := exec.Command(bin, "--config", filepath.Join(dir, "spillway.yaml"), "setup", "opencode", "--url", base)
	setup.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "OPENAI_API_KEY=sk-test-opencode-0123"}, clienttest.OpenCodeVars(home)...)
	var setupOut, setupErr bytes.Buffer
	setup.Stdout, setup.Stderr = &setupOut, &setupErr
	if err := setup.Run(); err != nil {
		t.Fatalf("setup opencode: %v\n%s%s", err, setupOut.String(), setupErr.String())
	}
	merged, _ := os.ReadFile(file)
	for _, want := range []string{"// mine: OpenCode's own settings", `"autoupdate": false, /* no update checks */`, `"local": {`, `"baseURL": "` + base + `/v1"`, `"apiKey": "{env:OPENAI_API_KEY}"`} {
		if !strings.Contains(string(merged), want) {
			t.Errorf("merged %s lacks %s:\n%s", file, want, merged)
		}
	}
	if strings.Contains(string(merged), "sk-test-opencode-0123") {
		t.Errorf("the key's value was written into %s", file)
	}
	undo := undoCommand(t, setupOut.String())

	ctx := waitCtx(t)
	r := clienttest.RunOpenCode(t, ctx, openCodeTimeout, home, []string{"-m", "spillway/gpt-6-astra", "What does token.txt hold? Cat it."}, []string{"OPENAI_API_KEY=sk-test-opencode-0123"})
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "The token is "+openCodeToken) {
		t.Fatalf("exit %d; the answer does not quote the token:\n%s\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "cat token.txt") {
		t.Errorf("OpenCode's bash tool did not run the command:\n%s", r.Stderr)
	}
	stop()
	got := routes(t, events, "/v1/chat/completions")
	// the turn's two requests (the call, then its output) answered by
	// gpt-6.1-sol, after gpt-6-astra's capacity (a later request may go
	// straight to gpt-6.1-sol: the gateway remembers), never by gpt-6-astra
	if !strings.Contains(got, "openai/gpt-6-astra:capacity") || strings.Count(got, "openai/gpt-6.1-sol:ok") < 2 || strings.Contains(got, "gpt-6-astra:ok") {
		t.Errorf("routes %q: want the call and the answer each from gpt-6.1-sol after gpt-6-astra's capacity", got)
	}

	undoCmd := exec.Command("sh", "-c", undo)
	if out, err := undoCmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", undo, err, out)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, []byte(openCodeUserConfig)) {
		t.Fatalf("after %q the file is not the original:\n%s", undo, b)
	}
}

// Every OpenAI model full: the codex chain's overflow to Claude answers
// OpenCode's Chat Completions, the bash call and its output carried across
// formats.
func TestOpenCodeAnsweredByClaude(t *testing.T) {
	t.Parallel()
	clienttest.OpenCode(t)
	bin := spillwayBin(t)
	simAddr := startReadmeSim(t, bin)
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
		simPost(t, simAddr, "/_sim/faults", `{"model":"`+m+`","fault":"capacity","count":-1}`)
	}
	simPost(t, simAddr, "/_sim/script", tokenScript)
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	base, _, stop := startServeStop(t, bin, dir, gatewayFor(simAddr), "--listen", "127.0.0.1:0", "--events", events)
	home := openCodeHome(t)
	clienttest.WriteOpenCodeConfig(t, home, base, "gpt-6-astra", "gpt-6.1-sol")
	r := clienttest.RunOpenCode(t, waitCtx(t), openCodeTimeout, home, []string{"-m", "spillway/gpt-6-astra", "What does token.txt hold? Cat it."}, []string{"OPENAI_API_KEY=sk-test-opencode-0123"})
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "The token is "+openCodeToken) {
		t.Fatalf("exit %d; the answer does not quote the token:\n%s\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	stop()
	got := routes(t, events, "/v1/chat/completions")
	if n := regexp.MustCompile(`anthropic/claude-[a-z0-9-]+:ok`).FindAllString(got, -1); len(n) < 2 || !strings.Contains(got, "openai/gpt-6-luna:capacity") || strings.Contains(got, "openai/gpt-6-astra:ok") {
		t.Errorf("routes %q: want the call and the answer each from a Claude model after every OpenAI model's capacity", got)
	}
}

// spillway exec wraps OpenCode pointed straight at the simulator: its
// first model full, run 2 resumes its session on the next model (exit 0);
// every model full, 75 after one walk (the ladder's first wait passes --max-wait); a refused key, 77. The simulator
// says retry-after 10 ms, which OpenCode waits out instead of its own
// backoff (its five retries cannot be turned off).
func TestOpenCodeExec(t *testing.T) {
	t.Parallel()
	clienttest.OpenCode(t)
	bin := spillwayBin(t)
	cases := []struct {
		name   string
		faults []string
		args   []string
		code   int
		want   []string // in spillway's stderr
	}{
		{"first model full: resumed on the next", []string{`{"model":"gpt-6-astra","fault":"capacity","count":-1,"retry_after":0.01}`},
			[]string{"--resume", "--ladder", "1ms"}, 0, []string{"gpt-6-astra is at capacity", "run 2 on gpt-6.1-sol, resuming session ses_"}},
		{"every model full: 75", []string{`{"model":"*","fault":"capacity","count":-1,"retry_after":0.01}`},
			[]string{"--models", "gpt-6-astra", "--ladder", "1m", "--max-wait", "1ms"}, 75, []string{"gpt-6-astra is at capacity", "giving up (exit 75)"}},
		{"a refused key: 77", []string{`{"model":"*","fault":"auth","count":-1}`},
			nil, 77, []string{"auth — stopping (exit 77)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			simAddr := startReadmeSim(t, bin)
			for _, f := range c.faults {
				simPost(t, simAddr, "/_sim/faults", f)
			}
			home := openCodeHome(t)
			clienttest.WriteOpenCodeConfig(t, home, "http://"+simAddr, "gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna")
			env, work := clienttest.Env(t, home, append(clienttest.OpenCodeVars(home), "OPENAI_API_KEY=sk-test-opencode-0123"))
			args := append([]string{"exec", "--events", filepath.Join(home, "events.jsonl")}, c.args...)
			args = append(args, "--", clienttest.OpenCode(t), "run", "-m", "spillway/gpt-6-astra", "Say hello")
			ctx, cancel := context.WithTimeout(waitCtx(t), 3*openCodeTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir, cmd.Env = work, env
			code, stdout, stderr := runCmd(t, cmd)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n--- stdout:\n%s\n--- stderr:\n%s", code, c.code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if c.code == 0 && !strings.Contains(stdout, "[gpt-6.1-sol]") {
				t.Errorf("the answer is not gpt-6.1-sol's:\n%s", stdout)
			}
		})
	}
}

// setup opencode itself: --print changes nothing; a first run writes the
// file and says how to undo it; a second changes nothing; on a file of the
// user's it keeps a backup byte for byte and prints the line that restores
// it; a file OpenCode cannot read is refused, named with its line, and
// left as it is.
func TestSetupOpenCode(t *testing.T) {
	t.Parallel()
	cfgYAML := "listen: 127.0.0.1:9787\n"
	cases := []struct {
		name     string
		existing string // opencode.jsonc's text; "" for none
		args     []string
		code     int
		want     []string // in stdout and stderr
		changed  bool
	}{
		{"print", openCodeUserConfig, []string{"--print"}, 0, []string{`"baseURL": "http://127.0.0.1:9787/v1"`, `"apiKey": "{env:OPENAI_API_KEY}"`, "# merge into "}, false},
		{"no file yet", "", nil, 0, []string{"wrote ", "there was no opencode.json before; undo: rm ", "opencode run -m spillway/gpt-6-astra"}, true},
		{"the user's file", openCodeUserConfig, []string{"--env-key", "MY_OPENAI_KEY"}, 0, []string{"updated ", "old file kept as ", "undo: cp ", "the key from $MY_OPENAI_KEY", "note: MY_OPENAI_KEY is not set here"}, true},
		{"a file OpenCode cannot read", "{\n  \"theme\": \"x\"\n  \"share\": \"disabled\"\n}\n", nil, 1, []string{"opencode.jsonc", "line 3, column 3", "OpenCode cannot start with this file"}, false},
		{"a bad --env-key", openCodeUserConfig, []string{"--env-key", "MY-KEY"}, 2, []string{"--env-key"}, false},
		{"an empty --env-key", openCodeUserConfig, []string{"--env-key", ""}, 2, []string{"--env-key \"\"", "the name of the variable"}, false},
		{"an empty --env-key, no file yet", "", []string{"--env-key="}, 2, []string{"--env-key \"\""}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			env := withConfig(t, map[string]string{"HOME": home, "OPENAI_API_KEY": "sk-test-x"}, cfgYAML)
			dir := filepath.Join(home, ".config", "opencode")
			file := filepath.Join(dir, "opencode.json")
			if c.existing != "" {
				file = filepath.Join(dir, "opencode.jsonc")
				os.MkdirAll(dir, 0o700)
				os.WriteFile(file, []byte(c.existing), 0o600)
			}
			out, errOut, code := runSetup(t, env, append([]string{"opencode"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
			b, err := os.ReadFile(file)
			if changed := (c.existing == "" && err == nil) || (c.existing != "" && string(b) != c.existing); changed != c.changed {
				t.Fatalf("changed %v, want %v:\n%s", changed, c.changed, b)
			}
			if !c.changed {
				return
			}
			if strings.Contains(string(b), "sk-test-x") {
				t.Error("the key's value was written")
			}
			if again, _, code := runSetup(t, env, append([]string{"opencode"}, c.args...)...); code != 0 || !strings.Contains(again, "nothing changed") {
				t.Errorf("again: exit %d\n%s", code, again)
			}
			if m := undoRe.FindStringSubmatch(out); m != nil {
				if err := exec.Command("sh", "-c", m[1]).Run(); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(file); string(b) != c.existing {
					t.Errorf("undo left:\n%s", b)
				}
			}
		})
	}
}
