package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/agent"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// The model fails in the middle of the agent's tool loop: its call was
// answered and the command ran, then the request bringing the output back
// finds the model full. exec --resume continues the same session on the
// next model, which holds the call and its output: the next model answers
// with the text quoting that output, and the command is not run again.

// resumedMidLoop checks what every agent's resumed run must show: exit 0,
// run 2 resumed, the scripted text quoting the output, and the next model
// asked once (for the answer, no second call).
func resumedMidLoop(t *testing.T, srv *sim.Server, r run, heavy, next string) {
	t.Helper()
	if r.res.ExitCode != 0 || len(r.res.Attempts) != 2 || r.res.Attempts[0].Class != "capacity" || r.res.Attempts[1].Model != next {
		t.Fatalf("exit %d attempts %+v", r.res.ExitCode, r.res.Attempts)
	}
	if r.res.Attempts[1].Resumed == "" {
		t.Fatal("run 2 did not resume the session")
	}
	if !strings.Contains(r.stdout, "The command printed") || !strings.Contains(r.stdout, "spill-42") {
		t.Fatalf("stdout %q lacks the answer quoting the command's output", r.stdout)
	}
	stats := srv.Snapshot().Models
	// heavy: the call served, the request with its output refused
	if h := stats[heavy]; h == nil || h.Served != 1 || h.Rejected["capacity"] != 1 {
		t.Fatalf("%s's stats %+v", heavy, h)
	}
	// next: one request, which brought the output back, answered with text
	if n := stats[next]; n == nil || n.Received != 1 || n.Served != 1 {
		t.Fatalf("%s's stats %+v: the resumed session should need one answer, not a second call", next, n)
	}
}

func TestExecCodexResumesMidLoop(t *testing.T) {
	srv, base := simFor(t, nil)
	if err := srv.AddScript(simtest.ShellScript()); err != nil {
		t.Fatal(err)
	}
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1, MidLoop: true})
	cmd, env, dir, codexHome := codexCmd(t, base, "sk-exec-test-01234", "gpt-6-astra", "Run the command and tell me what it printed", "--dangerously-bypass-approvals-and-sandbox")
	r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, Resume: true, ResumePrompt: "Continue the task", Ladder: []time.Duration{10 * time.Millisecond}})
	resumedMidLoop(t, srv, r, "gpt-6-astra", "gpt-6.1-sol")
	// one session, holding the one call, its output and both prompts
	var rollouts []string
	filepath.Walk(filepath.Join(codexHome, "sessions"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(fi.Name(), "rollout-") {
			rollouts = append(rollouts, p)
		}
		return nil
	})
	if len(rollouts) != 1 {
		t.Fatalf("rollouts %v", rollouts)
	}
	b, _ := os.ReadFile(rollouts[0])
	s := string(b)
	if strings.Count(s, `"type":"custom_tool_call"`) != 1 || !strings.Contains(s, `"type":"custom_tool_call_output"`) || !strings.Contains(s, "Continue the task") {
		t.Fatalf("the session does not hold the one call, its output and the resume prompt:\n%s", clipText(s))
	}
}

func TestExecClaudeResumesMidLoop(t *testing.T) {
	srv, base := simFor(t, nil)
	if err := srv.AddScript(simtest.ShellScript()); err != nil {
		t.Fatal(err)
	}
	srv.AddFault(sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1, MidLoop: true})
	zero := 0
	bin, env, home := clienttest.ClaudeEnv(t, clienttest.ClaudeOptions{BaseURL: base, APIKey: "sk-ant-exec-test-0123", MaxRetries: &zero})
	fullEnv, work := clienttest.Env(t, home, env)
	r := runAgent(t, agent.Options{Command: []string{bin, "-p", "Run the command and tell me what it printed", "--model", "claude-opus-5-5", "--allowedTools", "Bash"},
		Env: fullEnv, Dir: work, Resume: true, ResumePrompt: "Continue the task", Ladder: []time.Duration{10 * time.Millisecond}})
	resumedMidLoop(t, srv, r, "claude-opus-5-5", "claude-sonnet-5-5")
}

// Gemini CLI 0.61 resumes a session whose turn failed in its tool loop with
// the function response written twice (and the call's thought signature
// gone), a history the API refuses with a 400, as it would every later
// request of that session (its users' "lost my progress"): exec says so and
// runs the agent again from the start on the same model, which finishes.
func TestExecGeminiResumesMidLoop(t *testing.T) {
	clienttest.Gemini(t)
	srv, base := simFor(t, nil)
	if err := srv.AddScript(simtest.ShellScript()); err != nil {
		t.Fatal(err)
	}
	srv.AddFault(sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1, MidLoop: true})
	cmd, env, dir := geminiCmd(t, base, "gemini-3-pro", "Run the command and tell me what it printed")
	cmd = append(cmd, "--allowed-tools", "run_shell_command")
	ids := 0
	newID := func() string { ids++; return fmt.Sprintf("%08d-0000-4000-8000-000000000000", ids) }
	// (gemini-3-flash left out: Gemini CLI 0.61 sends it as its alias,
	// which the simulator does not serve; see TestExecGemini)
	r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, Models: []string{"gemini-3-pro", "gemini-3-flash-lite"}, Resume: true, ResumePrompt: "Continue the task",
		NewSessionID: newID, Ladder: []time.Duration{10 * time.Millisecond}})
	if r.res.ExitCode != 0 || len(r.res.Attempts) != 3 {
		t.Fatalf("exit %d attempts %+v", r.res.ExitCode, r.res.Attempts)
	}
	resumed, again := r.res.Attempts[1], r.res.Attempts[2]
	if resumed.Resumed == "" || resumed.Class != "bad_request" || again.Resumed != "" || again.Class != "ok" || again.Model != "gemini-3-flash-lite" {
		t.Fatalf("attempts %+v: want the resumed run refused, then a run from the start", r.res.Attempts)
	}
	if !strings.Contains(r.stderr, "spillway: gemini-3-flash-lite refused the resumed session (") || !strings.Contains(r.stderr, "run 2 on gemini-3-flash-lite, from the start") {
		t.Fatalf("stderr does not say why it starts again:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "The command printed") || !strings.Contains(r.stdout, "spill-42") {
		t.Fatalf("stdout %q lacks the answer quoting the command's output", r.stdout)
	}
	// the resumed history, then the fresh run's call and its answer
	if n := srv.Snapshot().Models["gemini-3-flash-lite"]; n == nil || n.Rejected["bad_request"] != 1 || n.Served != 2 {
		t.Fatalf("gemini-3-flash-lite's stats %+v", n)
	}
}

func clipText(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "…"
	}
	return s
}

// exec --until-reset: Codex stops at its plan's usage limit (it prints the
// reset time); exec waits for it (on the fake clock), then resumes the
// session on the same model, which finishes. Without the flag: exit 77.
func TestExecCodexUntilReset(t *testing.T) {
	for _, until := range []bool{true, false} {
		srv, base := simFor(t, nil)
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "usage_limit", Count: 1, ResetsIn: 60})
		cmd, env, dir, _ := codexCmd(t, base, "sk-exec-test-01234", "gpt-6-astra", "Reply with pong", "--json")
		r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, UntilReset: until, ResumePrompt: "Continue the task", Ladder: []time.Duration{10 * time.Millisecond}})
		if !until {
			if r.res.ExitCode != agent.ExitAuth || r.res.Class != "usage_limit" || len(r.res.Attempts) != 1 {
				t.Fatalf("without --until-reset: exit %d class %s attempts %+v", r.res.ExitCode, r.res.Class, r.res.Attempts)
			}
			continue
		}
		if r.res.ExitCode != 0 || len(r.res.Attempts) != 2 || r.res.Attempts[0].Class != "usage_limit" {
			t.Fatalf("exit %d attempts %+v", r.res.ExitCode, r.res.Attempts)
		}
		again := r.res.Attempts[1]
		// the wait is to the reset Codex printed (to the minute), not the ladder's
		if again.Model != "gpt-6-astra" || again.Resumed == "" || again.WaitedS <= 0 || again.WaitedS > 120 {
			t.Fatalf("the run after the reset: %+v", again)
		}
		if !strings.Contains(r.stderr, "for the plan's usage limit to reset, then gpt-6-astra again") {
			t.Fatalf("stderr does not say what it waits for:\n%s", r.stderr)
		}
		if want := sim.Answer("gpt-6-astra", "Continue the task", 16); !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout lacks the resumed answer %q", want)
		}
	}
}

// exec --until-reset --max-wait 5s, the reset two minutes away: it stops
// with 77 and says the reset lies beyond --max-wait, not to use the flag
// it was given.
func TestExecCodexResetBeyondMaxWait(t *testing.T) {
	srv, base := simFor(t, nil)
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "usage_limit", Count: -1, ResetsIn: 120})
	cmd, env, dir, _ := codexCmd(t, base, "sk-exec-test-01234", "gpt-6-astra", "Reply with pong")
	r := runAgent(t, agent.Options{Command: cmd, Env: env, Dir: dir, UntilReset: true, MaxWait: 5 * time.Second, Ladder: []time.Duration{10 * time.Millisecond}})
	if r.res.ExitCode != agent.ExitAuth || r.res.Class != "usage_limit" || len(r.res.Attempts) != 1 {
		t.Fatalf("exit %d class %s attempts %+v", r.res.ExitCode, r.res.Class, r.res.Attempts)
	}
	last := r.stderr[strings.LastIndex(strings.TrimSuffix(r.stderr, "\n"), "\n")+1:]
	if !regexp.MustCompile(`^spillway: usage_limit — stopping \(exit 77\)\. Your plan's usage window is used up; it resets at \d{4}-\d\d-\d\d \d\d:\d\d UTC \(in \d+m?\d*s\), beyond --max-wait 5s: give a longer --max-wait, or none, to wait for it\.\n$`).MatchString(last) {
		t.Fatalf("last line %q", last)
	}
}
