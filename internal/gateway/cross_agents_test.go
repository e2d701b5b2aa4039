package gateway_test

// The real agents, every model of their own vendor full, served through
// the gateway by another vendor's model in a scripted tool loop: the call
// comes back in the agent's own shape, it runs its tool, the result goes
// over translated, and the agent finishes with the answer quoting it.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
	st := r.servedStats(target, n)
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
	st := r.servedStats("claude-sonnet-5-5", 2)
	if st == nil || st.Served < 2 {
		t.Fatalf("claude-sonnet-5-5's stats %+v, want the call and the answer", st)
	}
}
