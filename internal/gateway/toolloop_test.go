package gateway_test

// The real agents run a real tool loop through the gateway: the simulator's
// script asks for a shell command in each client's own shell tool, the
// client runs it and sends its output back, and the scripted answer quotes
// it. With the first model full, the loop goes on on the next model.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// toolLoopClients are the three agents, each run with its shell tool
// allowed and without approvals, on its heavy model; next is the model
// that answers when heavy is full.
var toolLoopClients = []struct {
	name, heavy, next string
	run               func(t *testing.T, ctx context.Context, r *rig) clienttest.Result
}{
	{"codex", "gpt-6-astra", "gpt-6.1-sol", func(t *testing.T, ctx context.Context, r *rig) clienttest.Result {
		return clienttest.RunCodex(t, ctx, clienttest.CodexOptions{BaseURL: r.url + "/v1", Model: "gpt-6-astra", Prompt: "Run the command and tell me what it printed",
			APIKey: "sk-codex-test-0123456789", ExtraArgs: []string{"--dangerously-bypass-approvals-and-sandbox"}})
	}},
	{"claude", "claude-opus-5-5", "claude-sonnet-5-5", func(t *testing.T, ctx context.Context, r *rig) clienttest.Result {
		zero := 0
		return clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: "Run the command and tell me what it printed",
			APIKey: "sk-ant-claude-test-0123", MaxRetries: &zero, ExtraArgs: []string{"--allowedTools", "Bash"}})
	}},
	{"gemini", "gemini-3-pro", "gemini-3-flash", func(t *testing.T, ctx context.Context, r *rig) clienttest.Result {
		return clienttest.RunGemini(t, ctx, clienttest.GeminiOptions{BaseURL: r.url, Model: "gemini-3-pro", Prompt: "Run the command and tell me what it printed",
			APIKey: "AIza-gemini-cli-test-0123", MaxAttempts: 1, ExtraArgs: []string{"--allowed-tools", "run_shell_command"}})
	}},
}

func TestAgentsRunAToolLoopThroughGateway(t *testing.T) {
	for _, c := range toolLoopClients {
		for _, full := range []bool{false, true} {
			name := c.name + " healthy"
			if full {
				name = c.name + " with " + c.heavy + " full"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t, nil, nil)
				if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
					t.Fatal(err)
				}
				answering := c.heavy
				if full {
					r.fault(t, sim.Fault{Model: c.heavy, Kind: "capacity", Count: -1})
					answering = c.next
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				res := c.run(t, ctx, r)
				if res.ExitCode != 0 {
					t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
				}
				if !strings.Contains(res.Stdout, "The command printed") || !strings.Contains(res.Stdout, "spill-42") {
					t.Fatalf("stdout %q lacks the scripted answer quoting the command's output\nstderr: %s", res.Stdout, res.Stderr)
				}
				st := r.sim.Snapshot().Models[answering]
				// the call, then the answer to its result: each sent once,
				// and streamed (no fall-back to a whole answer)
				if st == nil || st.Served != 2 || st.Streamed != 2 || st.Received != 2 {
					t.Fatalf("%s's stats %+v: want the call and the answer, each streamed once", answering, st)
				}
				var oks, hops int
				for _, rec := range r.records() {
					switch {
					case rec.Model == answering && rec.Class == "ok":
						oks++
					case rec.Model == c.heavy && rec.Class == "capacity":
						hops++
					default:
						t.Errorf("unexpected attempt %s:%s", rec.Model, rec.Class)
					}
				}
				if wantHops := map[bool]int{false: 0, true: 2}[full]; oks != 2 || hops != wantHops {
					t.Fatalf("records: %d answers, %d capacity hops; want 2 and %d (%v)", oks, hops, wantHops, routeOf(r))
				}
			})
		}
	}
}
