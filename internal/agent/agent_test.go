package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/agent"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/sim"
)

// simFor starts a simulator; keys names special keys of the scenario.
func simFor(t *testing.T, keys map[string]sim.Key) (*sim.Server, string) {
	t.Helper()
	return simtest.Start(t, keys)
}

type run struct {
	res    agent.Result
	stdout string
	stderr string
	recs   []events.Record
}

func runAgent(t *testing.T, o agent.Options) run {
	t.Helper()
	var out, errb bytes.Buffer
	var recs []events.Record
	cfg := config.Default()
	// the ladders here are far shorter than a breaker's cooldown: with the
	// breakers on, a rung would end in refusals rather than runs
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	// and a rerun after a network failure waits milliseconds, not seconds
	cfg.Retry.NetworkGap = config.Duration(time.Millisecond)
	// no gap between starts: an agent's run takes real time, which the
	// fake clock below does not see pass (the pacer is the behaviour
	// suite's to test)
	cfg.Pacing.MinGap, cfg.Pacing.Jitter = 0, 0
	o.Config = cfg
	// the driver's waits (the ladder's rungs) on a fake clock: a sleep
	// moves it at once, and a run's waits are what the driver asked, to
	// the nanosecond
	o.Engine = policy.New(cfg, policy.WithClock(policytest.New(time.Now())))
	o.Stdout, o.Stderr = &out, &errb
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	o.Events = events.SinkFunc(func(r events.Record) { recs = append(recs, r) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := agent.Run(ctx, o)
	t.Logf("exit %d class %s attempts %+v\n--- stderr:\n%s", res.ExitCode, res.Class, res.Attempts, errb.String())
	return run{res, out.String(), errb.String(), recs}
}

func codexCmd(t *testing.T, base, key, model, prompt string, extra ...string) ([]string, []string, string, string) {
	zero := 0
	bin, env, home, codexHome := clienttest.CodexEnv(t, clienttest.CodexOptions{BaseURL: base + "/v1", APIKey: key, RequestMaxRetries: &zero})
	fullEnv, work := clienttest.Env(t, home, env)
	args := append([]string{bin, "exec", "--skip-git-repo-check", "-m", model}, extra...)
	return append(args, prompt), fullEnv, work, codexHome
}

func TestExecCodexFallsBackToTheNextModel(t *testing.T) {
	srv, base := simFor(t, nil)
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	prompt := "Reply with pong"
	cmd, env, dir, _ := codexCmd(t, base, "sk-exec-test-01234", "gpt-6-astra", prompt)
	r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, Ladder: []time.Duration{10 * time.Millisecond}})
	if r.res.ExitCode != 0 {
		t.Fatalf("exit %d", r.res.ExitCode)
	}
	if want := sim.Answer("gpt-6.1-sol", prompt, 16); !strings.Contains(r.stdout, want) {
		t.Fatalf("stdout %q lacks %q", r.stdout, want)
	}
	if len(r.res.Attempts) != 2 || r.res.Attempts[0].Class != "capacity" || r.res.Attempts[1].Model != "gpt-6.1-sol" {
		t.Fatalf("attempts %+v", r.res.Attempts)
	}
	if !strings.Contains(r.stderr, "run 1 on gpt-6-astra (named by the command)\n") || !strings.Contains(r.stderr, "spillway: gpt-6-astra is at capacity\nspillway: run 2 on gpt-6.1-sol\n") {
		t.Fatalf("stderr %s", r.stderr)
	}
	if len(r.recs) != 2 || r.recs[0].Source != events.SourceExec || r.recs[1].FallbackFrom != "gpt-6-astra" {
		t.Fatalf("event records %+v", r.recs)
	}
}

// The exec tests drive the real Codex CLI and Claude Code, processes with
// clocks of their own; the driver's waits run on the fake clock (the
// ladder's rungs are waited at once, and measured exactly). The behaviours exec shares with the other
// front ends run on the fake clock in internal/behaviour.
func TestExecCodexGlobalOutage(t *testing.T) {
	srv, base := simFor(t, nil)
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol"} {
		srv.AddFault(sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}
	cmd, env, dir, _ := codexCmd(t, base, "sk-exec-test-01234", "gpt-6-astra", "hi")
	ladder := []time.Duration{300 * time.Millisecond, 600 * time.Millisecond}
	r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, Models: []string{"gpt-6-astra", "gpt-6.1-sol"}, Ladder: ladder})
	if r.res.ExitCode != agent.ExitCapacity || !strings.Contains(r.stderr, "global outage") {
		t.Fatalf("exit %d, stderr %s", r.res.ExitCode, r.stderr)
	}
	// 2 models × (1 + 2 rungs) walks; waits exactly the ladder's
	if len(r.res.Attempts) != 6 {
		t.Fatalf("%d attempts", len(r.res.Attempts))
	}
	var waited float64
	for _, a := range r.res.Attempts {
		waited += a.WaitedS
	}
	if math.Abs(waited-0.9) > 1e-9 { // (seconds, as a float: 0.3 + 0.6)
		t.Fatalf("waited %.3fs, want the ladder's 0.9s", waited)
	}
	if got := r.res.Attempts[2].WaitedS; got != 0.3 {
		t.Fatalf("first rung waited %v, want 0.3s", got)
	}
}

func TestExecCodexInvalidKeyStopsAt77(t *testing.T) {
	_, base := simFor(t, map[string]sim.Key{"sk-revoked-key-0000": {State: "invalid"}})
	cmd, env, dir, _ := codexCmd(t, base, "sk-revoked-key-0000", "gpt-6-astra", "hi")
	r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, Ladder: []time.Duration{10 * time.Millisecond}})
	if r.res.ExitCode != agent.ExitAuth || len(r.res.Attempts) != 1 || r.res.Class != string(classify.Auth) {
		t.Fatalf("exit %d class %s attempts %d", r.res.ExitCode, r.res.Class, len(r.res.Attempts))
	}
	if !strings.Contains(r.stderr, "auth — stopping (exit 77)") {
		t.Fatalf("stderr %s", r.stderr)
	}
}

func TestExecCodexResumeKeepsTheSession(t *testing.T) {
	srv, base := simFor(t, nil)
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	cmd, env, dir, codexHome := codexCmd(t, base, "sk-exec-test-01234", "gpt-6-astra", "Refactor the parser", "--json")
	r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, Resume: true, ResumePrompt: "Continue the task", Ladder: []time.Duration{10 * time.Millisecond}})
	if r.res.ExitCode != 0 || len(r.res.Attempts) != 2 {
		t.Fatalf("exit %d attempts %+v", r.res.ExitCode, r.res.Attempts)
	}
	id := r.res.Attempts[1].Resumed
	if id == "" {
		t.Fatal("the second attempt did not resume a session")
	}
	// the same thread: --json says so, and there is one rollout file, with that id
	if strings.Count(r.stdout, `"thread_id":"`+id+`"`) != 2 {
		t.Fatalf("thread ids in stdout:\n%s", r.stdout)
	}
	var rollouts []string
	filepath.Walk(filepath.Join(codexHome, "sessions"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(fi.Name(), "rollout-") {
			rollouts = append(rollouts, p)
		}
		return nil
	})
	if len(rollouts) != 1 || !strings.Contains(rollouts[0], id) {
		t.Fatalf("rollouts %v, session %s", rollouts, id)
	}
	b, _ := os.ReadFile(rollouts[0])
	if !strings.Contains(string(b), "Refactor the parser") || !strings.Contains(string(b), "Continue the task") || !strings.Contains(string(b), "gpt-6.1-sol") {
		t.Fatalf("the session does not hold both turns on the new model")
	}
	if want := sim.Answer("gpt-6.1-sol", "Continue the task", 16); !strings.Contains(r.stdout, want) {
		t.Fatalf("stdout lacks %q", want)
	}
}

func TestExecClaudeFallsBackToTheNextModel(t *testing.T) {
	srv, base := simFor(t, nil)
	srv.AddFault(sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
	zero := 0
	bin, env, home := clienttest.ClaudeEnv(t, clienttest.ClaudeOptions{BaseURL: base, APIKey: "sk-ant-exec-test-0123", MaxRetries: &zero})
	fullEnv, work := clienttest.Env(t, home, env)
	prompt := "Reply with pong"
	r := runAgent(t, agent.Options{Command: []string{bin, "-p", prompt, "--model", "claude-opus-5-5"}, Env: fullEnv, Dir: work, Ladder: []time.Duration{10 * time.Millisecond}})
	if r.res.ExitCode != 0 {
		t.Fatalf("exit %d", r.res.ExitCode)
	}
	if want := sim.Answer("claude-sonnet-5-5", prompt, 16); !strings.Contains(r.stdout, want) {
		t.Fatalf("stdout %q lacks %q", r.stdout, want)
	}
	if r.res.Attempts[0].Class != "capacity" || r.res.Attempts[1].Model != "claude-sonnet-5-5" {
		t.Fatalf("attempts %+v", r.res.Attempts)
	}
}

// geminiCmd is `gemini -p PROMPT -m MODEL` against base, with a fresh home
// whose settings select API-key auth and one attempt, as setup gemini
// writes them (TestExecGeminiRetriesOff runs it without).
func geminiCmd(t *testing.T, base, model, prompt string) ([]string, []string, string) {
	bin, env, home := clienttest.GeminiEnv(t, clienttest.GeminiOptions{BaseURL: base, APIKey: "AIza-exec-test-0123", MaxAttempts: 1})
	fullEnv, work := clienttest.Env(t, home, env)
	return []string{bin, "-p", prompt, "-m", model}, fullEnv, work
}

// exec turns Gemini CLI's own retries off where the user's settings do
// not: with a system settings file in spillway's state directory, which
// Gemini CLI reads (its model full, one request, and the next model
// answers); and where Gemini CLI would skip that file (a state directory
// below /tmp, or spillway not root), exec says so before the agent starts.
func TestExecGeminiRetriesOff(t *testing.T) {
	clienttest.Gemini(t)
	prompt := "Reply with pong"
	run := func(t *testing.T, base, state string) (run, string) {
		bin, env, home := clienttest.GeminiEnv(t, clienttest.GeminiOptions{BaseURL: base, APIKey: "AIza-exec-test-0123"})
		fullEnv, work := clienttest.Env(t, home, env)
		getenv := func(k string) string {
			if k == "XDG_STATE_HOME" {
				return state
			}
			return ""
		}
		return runAgent(t, agent.Options{Command: []string{bin, "-p", prompt, "-m", "gemini-3-pro"}, Env: fullEnv, Dir: work, Getenv: getenv, Ladder: []time.Duration{10 * time.Millisecond}}),
			filepath.Join(home, ".gemini", "settings.json")
	}
	t.Run("said before the agent starts", func(t *testing.T) {
		state := t.TempDir()
		why := fmt.Sprintf("Gemini CLI reads a system settings file only when root owns it and every directory above it, and spillway runs as uid %d", os.Geteuid())
		if os.Geteuid() == 0 {
			if !strings.HasPrefix(state, "/tmp/") {
				t.Skip("SKIPPED: the temporary directory is not below /tmp")
			}
			why = "Gemini CLI skips a system settings file below a directory that group or others can write, and /tmp is one (mode 1777)"
		}
		_, base := simFor(t, nil)
		r, user := run(t, base, state)
		want := "spillway: cannot turn gemini's own retries off: " + why + "; so Gemini CLI retries a 503 up to 10 times, for minutes, before spillway sees it: set general.maxAttempts to 1 in " + user + " (spillway setup gemini does)\nspillway: run 1 on gemini-3-pro (named by the command)\n"
		if r.res.ExitCode != 0 || !strings.HasPrefix(r.stderr, want) {
			t.Fatalf("exit %d, stderr:\n%s\nwant it to start:\n%s", r.res.ExitCode, r.stderr, want)
		}
	})
	t.Run("a system settings file Gemini CLI reads", func(t *testing.T) {
		state := agent.SecureStateDir(t)
		srv, base := simFor(t, nil)
		srv.AddFault(sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
		r, _ := run(t, base, state)
		if got := srv.Snapshot().Models["gemini-3-pro"].Received; r.res.ExitCode != 0 || got != 1 || strings.Contains(r.stderr, "cannot turn") {
			t.Fatalf("exit %d, gemini-3-pro asked %d times (want once: no retries of Gemini CLI's own)\n%s", r.res.ExitCode, got, r.stderr)
		}
	})
}

// spillway exec wraps the real Gemini CLI: it fails fast (exec turns its
// ten retries of a 503 off), and exec reruns it on the next model; the
// outage ends in exit 75, a refused key in 77, as for the other agents.
func TestExecGemini(t *testing.T) {
	clienttest.Gemini(t)
	all := []string{"gemini-3-pro", "gemini-3-flash", "gemini-3-flash-lite"}
	for _, c := range []struct {
		name   string
		faults []sim.Fault
		code   int
		model  string // the model that answered
		first  string // the class of the first run's failure
		resume bool
		says   []string
	}{
		// (Gemini CLI 0.61 sends -m gemini-3-flash as gemini-3.8-flash, its
		// alias, which the simulator does not serve: that run is
		// model_not_found, and exec goes on to gemini-3-flash-lite)
		{"gemini-3-pro full: rerun on the next model", []sim.Fault{{Model: "gemini-3-pro", Kind: "capacity", Count: -1}}, 0, "gemini-3-flash-lite", "capacity", false, nil},
		{"every model full through the ladder: exit 75", func() (fs []sim.Fault) {
			for _, m := range all {
				fs = append(fs, sim.Fault{Model: m, Kind: "capacity", Count: -1})
			}
			return fs
		}(), agent.ExitCapacity, "", "", false, nil},
		{"a refused key: exit 77", []sim.Fault{{Model: "gemini-3-pro", Kind: "auth", Count: -1}}, agent.ExitAuth, "", "", false, nil},
		// --resume: exec names the session (--session-id); Gemini CLI
		// rewinds a turn that failed, so run 1 left nothing to resume and
		// run 2 starts again from the prompt, under a session id of its own
		// (the answer is the prompt's, not the resume prompt's)
		{"--resume after a first turn that failed: rerun from the prompt", []sim.Fault{{Model: "gemini-3-pro", Kind: "capacity", Count: -1}}, 0, "gemini-3-flash-lite", "capacity", true,
			[]string{"run 2 on gemini-3-flash, from the start: run 1 left no session to resume"}},
		// Gemini CLI exits 0 after a stream cut short, with "[ERROR] Model
		// stream ended without a finish reason.": exec reruns it
		{"a stream cut short, exit 0: rerun", []sim.Fault{{Model: "gemini-3-pro", Kind: "midstream", AfterTokens: func() *int { n := 3; return &n }(), Count: 1}}, 0, "gemini-3-pro", "network", false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, base := simFor(t, nil)
			for _, f := range c.faults {
				srv.AddFault(f)
			}
			prompt := "Reply with pong"
			cmd, env, dir := geminiCmd(t, base, "gemini-3-pro", prompt)
			ids := 0
			newID := func() string { ids++; return fmt.Sprintf("%08d-0000-4000-8000-000000000000", ids) }
			r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, Ladder: []time.Duration{10 * time.Millisecond}, Resume: c.resume, NewSessionID: newID})
			if r.res.ExitCode != c.code {
				t.Fatalf("exit %d, want %d", r.res.ExitCode, c.code)
			}
			for _, w := range c.says {
				if !strings.Contains(r.stderr, "spillway: "+w) {
					t.Errorf("stderr lacks %q", w)
				}
			}
			if c.resume && ids != len(r.res.Attempts) {
				t.Errorf("%d session ids for %d runs: each fresh run needs one of its own", ids, len(r.res.Attempts))
			}
			if c.model != "" {
				if last := r.res.Attempts[len(r.res.Attempts)-1]; last.Model != c.model || r.res.Attempts[0].Class != c.first || len(r.res.Attempts) < 2 {
					t.Fatalf("attempts %+v", r.res.Attempts)
				}
				if want := strings.Join(sim.Tokens(sim.Answer(c.model, prompt, 16))[:4], ""); !strings.Contains(r.stdout, want) {
					t.Fatalf("stdout %q lacks %q", r.stdout, want)
				}
			}
		})
	}
}

// exec --archive with Codex signed in with a ChatGPT plan, its model full:
// the archive keeps the failed run's output and session, each line still
// JSON, but none of the sign-in (tokens, account and user ids: Codex's
// session_meta names creator_account_id and creator_user_id), and neither
// exec's words nor its records hold it.
func TestExecArchiveKeepsNoSignIn(t *testing.T) {
	srv, base := simFor(t, nil)
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	zero := 0
	bin, env, home, codexHome := clienttest.CodexEnv(t, clienttest.CodexOptions{BaseURL: base + "/backend-api/codex", RequestMaxRetries: &zero})
	canary := clienttest.WriteChatGPTAuth(t, codexHome)
	// the provider as setup codex --chatgpt writes it: Codex sends its sign-in
	cfg, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	cfg = bytes.Replace(cfg, []byte(`env_key = "SPILLWAY_TEST_KEY"`), []byte("requires_openai_auth = true"), 1)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	fullEnv, dir := clienttest.Env(t, home, env)
	archive := t.TempDir()
	cmd := []string{bin, "exec", "--skip-git-repo-check", "-m", "gpt-6-astra", "Reply with pong"}
	r := runAgent(t, agent.Options{Command: cmd, Env: fullEnv, Dir: dir, Ladder: []time.Duration{10 * time.Millisecond}, Archive: archive})
	if r.res.ExitCode != 0 || len(r.res.Attempts) != 2 {
		t.Fatalf("exit %d, attempts %+v", r.res.ExitCode, r.res.Attempts)
	}
	if got := srv.Snapshot().Models["gpt-6-astra"].Credentials; got[sim.Fingerprint(canary.Access, canary.Account)] == 0 {
		t.Fatalf("gpt-6-astra saw %v: the run was not signed in", got)
	}
	// the runs were the plan's: recorded as such, not as the API's
	for _, rec := range r.recs {
		if rec.Provider != "chatgpt" {
			t.Fatalf("a ChatGPT plan's run recorded as provider %q: %+v", rec.Provider, rec)
		}
	}
	files, _ := filepath.Glob(filepath.Join(archive, "*-attempt1-gpt-6-astra.*"))
	var session []byte
	shown := map[string]string{"exec's stderr": r.stderr, "exec's records": fmt.Sprint(r.recs)}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		shown[f] = string(b)
		if strings.HasSuffix(f, ".session.jsonl") {
			session = b
		}
	}
	if len(session) == 0 {
		t.Fatalf("no session archived: %v", files)
	}
	if !bytes.Contains(session, []byte(`"creator_account_id":"[redacted]"`)) {
		t.Fatalf("the session's account id is not redacted:\n%s", session)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(session), []byte("\n")) {
		if !json.Valid(line) {
			t.Fatalf("archived session line %d is not JSON: %s", i+1, line)
		}
	}
	for where, text := range shown {
		for _, mark := range canary.Marks() {
			if strings.Contains(text, mark) {
				t.Errorf("%s holds the sign-in (%q)", where, mark[:min(len(mark), 24)])
			}
		}
	}
}

// exec --resume of a Claude Code run that named no session continues its
// most recent one (claude --continue), and says so in words.
func TestExecResumeContinuesClaudesLastSession(t *testing.T) {
	dir := t.TempDir()
	claude := filepath.Join(dir, "claude")
	script := `#!/bin/sh
for a in "$@"; do [ "$a" = --continue ] && { echo "continued: $*"; exit 0; }; done
echo "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}" >&2
exit 1
`
	if err := os.WriteFile(claude, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runAgent(t, agent.Options{Command: []string{claude, "-p", "refactor the parser", "--model", "claude-opus-5-5"}, Dir: dir, Resume: true,
		Ladder: []time.Duration{10 * time.Millisecond}})
	if r.res.ExitCode != 0 || !strings.Contains(r.stdout, "continued: -p Continue the task from where you left off. --model claude-sonnet-5-5 --continue") {
		t.Fatalf("exit %d, stdout %q", r.res.ExitCode, r.stdout)
	}
	if want := "spillway: claude-opus-5-5 is at capacity\nspillway: run 2 on claude-sonnet-5-5, continuing the most recent session (--continue)\n"; !strings.Contains(r.stderr, want) {
		t.Fatalf("stderr %q lacks %q", r.stderr, want)
	}
}

// A failure whose words echo the ChatGPT sign-in's account id does not
// carry it into exec's result (its reason, which a --notify webhook and
// the queue get), its words or its records.
func TestExecResultKeepsNoSignIn(t *testing.T) {
	dir := t.TempDir()
	codexHome := filepath.Join(dir, ".codex")
	canary := clienttest.WriteChatGPTAuth(t, codexHome)
	codex := filepath.Join(dir, "codex")
	script := "#!/bin/sh\necho 'ERROR: unexpected status 500 Internal Server Error: account " + canary.Account + " hit an internal error' >&2\nexit 1\n"
	if err := os.WriteFile(codex, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runAgent(t, agent.Options{Command: []string{codex, "exec", "-m", "gpt-6-luna", "hi"}, Env: []string{"CODEX_HOME=" + codexHome}, Dir: dir,
		Ladder: []time.Duration{10 * time.Millisecond}, Models: []string{"gpt-6-luna"}})
	if r.res.ExitCode == 0 || r.res.Reason == "" {
		t.Fatalf("exit %d, reason %q: the run should have failed with a reason", r.res.ExitCode, r.res.Reason)
	}
	b, _ := json.Marshal(r.res)
	var said []string // spillway's own lines (the agent's go through as they came)
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "spillway: ") {
			said = append(said, l)
		}
	}
	for where, text := range map[string]string{"the result": string(b), "exec's words": strings.Join(said, "\n"), "the records": fmt.Sprint(r.recs)} {
		if strings.Contains(text, canary.Account) {
			t.Errorf("%s holds the account id: %s", where, text)
		}
	}
	if !strings.Contains(r.res.Reason, "account [redacted] hit an internal error") {
		t.Errorf("reason %q: want the message, redacted", r.res.Reason)
	}
}

// TestExecExitCodesOfItsOwn: an agent that cannot be started exits 127
// (as a shell's "command not found"), and a run interrupted (Ctrl-C,
// SIGTERM: its context ended) exits 130, whatever the agent would have.
func TestExecExitCodesOfItsOwn(t *testing.T) {
	t.Run("agent not found", func(t *testing.T) {
		r := runAgent(t, agent.Options{Command: []string{filepath.Join(t.TempDir(), "no-such-agent")}, Models: []string{"gpt-6-astra"}})
		if r.res.ExitCode != 127 || len(r.res.Attempts) != 1 || !strings.Contains(r.stderr, "cannot run") {
			t.Fatalf("exit %d attempts %d, stderr %s", r.res.ExitCode, len(r.res.Attempts), r.stderr)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		cfg := config.Default()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Ctrl-C before the run: nothing is started
		var errb bytes.Buffer
		res := agent.Run(ctx, agent.Options{Command: []string{"sh", "-c", "exit 0"}, Models: []string{"gpt-6-astra"}, Config: cfg,
			Engine: policy.New(cfg, policy.WithClock(policytest.New(time.Now()))), Stdout: &bytes.Buffer{}, Stderr: &errb,
			Getenv: func(string) string { return "" }, Events: events.SinkFunc(func(events.Record) {})})
		if res.ExitCode != 130 || res.Class != "interrupted" {
			t.Fatalf("exit %d class %s, stderr %s", res.ExitCode, res.Class, errb.String())
		}
	})
}
