package gateway_test

// The real agents, every model of their own vendor full, served through
// the gateway by another vendor's model in a scripted tool loop: the call
// comes back in the agent's own shape, it runs its tool, the result goes
// over translated, and the agent finishes with the answer quoting it.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// fullVendor makes every model of the vendor whose names start with prefix
// full.
func fullVendor(t *testing.T, r *rig, prefix string) {
	t.Helper()
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "gemini-3-pro", "gemini-3-flash", "gemini-3-flash-lite"} {
		if strings.HasPrefix(m, prefix) {
			r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
		}
	}
}

// translatedOK checks that target answered every turn (served n requests,
// each with its provider's own key) and that the records say so.
func translatedOK(t *testing.T, r *rig, target, from string, n int) {
	t.Helper()
	st := r.servedStats(t, target, n)
	if st == nil || st.Served != n || st.Received != n {
		t.Fatalf("%s's stats %+v, want %d requests served (each tool call once)", target, st, n)
	}
	vendor := map[string]string{"claude-sonnet-5-5": "anthropic", "gpt-6.1-sol": "openai"}[target]
	if want := sim.Fingerprint(ownKeys[vendor], ""); len(st.Credentials) != 1 || st.Credentials[want] != n {
		t.Fatalf("%s got credentials %v, want only its provider's own key", target, st.Credentials)
	}
	ok := 0
	for _, rec := range r.records() {
		if rec.Model == target && rec.Class == "ok" {
			ok++
			if rec.TranslatedFrom != from {
				t.Errorf("record translated_from %q, want %q", rec.TranslatedFrom, from)
			}
		}
	}
	if ok != n {
		t.Fatalf("%d ok records of %s, want %d", ok, target, n)
	}
}

func TestCodexAnsweredByClaude(t *testing.T) {
	clienttest.Codex(t)
	r := newRig(t, nil, spillTo("claude-sonnet-5-5"))
	fullVendor(t, r, "gpt-")
	if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := clienttest.RunCodex(t, ctx, clienttest.CodexOptions{BaseURL: r.url + "/v1", Model: "gpt-6.1-sol", Prompt: "Run the command and tell me what it printed",
		APIKey: "sk-codex-test-0123456789", ExtraArgs: []string{"--dangerously-bypass-approvals-and-sandbox"}})
	if res.ExitCode != 0 {
		t.Fatalf("codex exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stdout, "The command printed") || !strings.Contains(res.Stdout, "spill-42") {
		t.Fatalf("stdout %q lacks the answer quoting the command's output", res.Stdout)
	}
	translatedOK(t, r, "claude-sonnet-5-5", "responses", 2)
}

// A file edit: Claude asks for Codex's exec with a script that applies a
// patch; it comes back as the freeform call Codex runs, and the file is
// there.
func TestCodexAppliesClaudesEdit(t *testing.T) {
	clienttest.Codex(t)
	r := newRig(t, nil, spillTo("claude-sonnet-5-5"))
	fullVendor(t, r, "gpt-")
	patch := "*** Begin Patch\n*** Add File: spilled.txt\n+written by another vendor\n*** End Patch\n"
	js := "const r = await tools.apply_patch(" + strconv.Quote(patch) + ");\ntext(String(r));"
	if err := r.sim.AddScript(sim.Script{Turns: []sim.ScriptTurn{
		{Call: sim.ScriptCalls{{Tool: "exec", Arguments: map[string]any{"input": js}}}},
		{Text: "The patch said {result}"},
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := clienttest.RunCodex(t, ctx, clienttest.CodexOptions{BaseURL: r.url + "/v1", Model: "gpt-6.1-sol", Prompt: "Create spilled.txt",
		APIKey: "sk-codex-test-0123456789", ExtraArgs: []string{"--dangerously-bypass-approvals-and-sandbox"}})
	if res.ExitCode != 0 {
		t.Fatalf("codex exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(res.CodexHome), "work", "spilled.txt"))
	if err != nil || !strings.Contains(string(b), "written by another vendor") {
		t.Fatalf("Codex did not apply the edit (%v): %q\nstdout: %s", err, b, res.Stdout)
	}
	translatedOK(t, r, "claude-sonnet-5-5", "responses", 2)
}

func TestClaudeAnsweredByGPT(t *testing.T) {
	clienttest.Claude(t)
	r := newRig(t, nil, spillTo("gpt-6.1-sol"))
	fullVendor(t, r, "claude-")
	if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: "Run the command and tell me what it printed",
		APIKey: "sk-ant-claude-test-0123", ExtraArgs: []string{"--allowedTools", "Bash"}})
	if res.ExitCode != 0 {
		t.Fatalf("claude exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stdout, "The command printed") || !strings.Contains(res.Stdout, "spill-42") {
		t.Fatalf("stdout %q lacks the answer quoting the command's output", res.Stdout)
	}
	// streamed throughout: no request fell back to a whole answer
	for _, rec := range r.records() {
		if rec.Model == "gpt-6.1-sol" && !rec.Stream {
			t.Fatalf("Claude Code fell back to a non-streaming request: %+v", rec)
		}
	}
	translatedOK(t, r, "gpt-6.1-sol", "messages", 2)
}

func TestGeminiCLIAnsweredByClaude(t *testing.T) {
	clienttest.Gemini(t)
	r := newRig(t, nil, spillTo("claude-sonnet-5-5"))
	fullVendor(t, r, "gemini-")
	if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := clienttest.RunGemini(t, ctx, clienttest.GeminiOptions{BaseURL: r.url, Model: "gemini-3-pro", Prompt: "Run the command and tell me what it printed",
		APIKey: "AIza-gemini-cli-test-0123", MaxAttempts: 1, ExtraArgs: []string{"--allowed-tools", "run_shell_command"}})
	if res.ExitCode != 0 {
		t.Fatalf("gemini exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Stdout, "The command printed") || !strings.Contains(res.Stdout, "spill-42") {
		t.Fatalf("stdout %q lacks the answer quoting the command's output", res.Stdout)
	}
	st := r.servedStats(t, "claude-sonnet-5-5", 2)
	if st == nil || st.Served < 2 {
		t.Fatalf("claude-sonnet-5-5's stats %+v, want the call and the answer", st)
	}
}

// Claude Code while every Claude model's breaker is open and its lanes are
// under pressure: each of its requests goes to the overflow chain's OpenAI
// model at once. The overflow step's pace is its own lane's, which is not
// under pressure, so neither the request's log line nor its record says it
// waited (before, each request waited a pacing turn of the last open
// model, 0.5–2 s, which the record did not show).
func TestAnOverflowStepWaitsNothingWhileTheChainIsOpen(t *testing.T) {
	clienttest.Claude(t)
	r := newRig(t, nil, func(c *config.Config) {
		spillTo("gpt-6.1-sol")(c)
		c.Pacing = config.Default().Pacing // pacing under pressure, as served by default
		c.Breaker.Failures, c.Breaker.Consecutive = 5, 1
		c.Breaker.Cooldown, c.Breaker.MaxCooldown = config.Duration(time.Hour), config.Duration(time.Hour)
	})
	fullVendor(t, r, "claude-")
	// two requests open every Claude model's breaker and put their lanes
	// under pressure
	for range 2 {
		if resp, body := r.do(t, messages("claude-opus-5-5", "hi", false)); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	before := len(r.records())
	prompt := "Reply with pong"
	claude(t, r, prompt)
	recs := r.records()[before:]
	if len(recs) == 0 {
		t.Fatal("Claude Code's requests left no record")
	}
	for _, rec := range recs {
		if rec.Model != "gpt-6.1-sol" || rec.WaitMS != 0 {
			t.Fatalf("Claude Code's request: record %+v, want gpt-6.1-sol at once", rec)
		}
	}
	lines := requestLines(t, r)
	if len(lines) < 2+len(recs) {
		t.Fatalf("%d request lines, want %d", len(lines), 2+len(recs))
	}
	for _, l := range lines[2:] {
		if l["waited_ms"] != float64(0) || l["route"] != "claude-opus-5-5:breaker_open > claude-sonnet-5-5:breaker_open > claude-haiku-5-5:breaker_open > gpt-6.1-sol[openai]:ok" {
			t.Fatalf("request line %v: want the overflow at once", l)
		}
	}
}

// requestLines are the gateway's "request" log lines, decoded.
func requestLines(t *testing.T, r *rig) []map[string]any {
	t.Helper()
	r.mu.Lock()
	logs := r.logs.String()
	r.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// A request that waited says what for in its log line: a rate limit's
// Retry-After of 1 s on the same model is a retry's wait.
func TestARequestLineSaysWhatItWaitedFor(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6.1-sol", Kind: "rate_limit", RetryAfter: 1})
	if resp, body := r.do(t, chat("gpt-6.1-sol", "hi", false)); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	lines := requestLines(t, r)
	if len(lines) != 1 || lines[0]["waited_ms"] != float64(1000) || lines[0]["waited_for"] != "retry 1s" {
		t.Fatalf("request lines %v", lines)
	}
	if recs := r.records(); len(recs) != 2 || recs[1].WaitMS != 1000 {
		t.Fatalf("records %+v", recs)
	}
}
