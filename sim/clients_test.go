package sim_test

// These tests drive the real Codex CLI and Claude Code (pinned versions,
// installed by scripts/install-clients) against an in-process simulator on
// 127.0.0.1: the simulator must speak each wire format well enough that the
// client prints the exact answer, and its capacity errors must come out as
// the texts users see from the real providers. Without the clients installed
// they are skipped (failed when CI=true).

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/sim"
)

const clientTestKey = "sk-spillway-clienttest-0001"

// clientSim starts a calm simulator that streams without delay and returns
// its base URL and the scenario's answer length.
func clientSim(t *testing.T) (base string, answerTokens int) {
	t.Helper()
	scn, _ := sim.Builtin("calm")
	srv, err := sim.New(sim.Options{Scenario: scn, Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler()) // listens on 127.0.0.1:0
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return hs.URL, scn.AnswerTokens
}

// clientSimFault injects a fault through the control API.
func clientSimFault(t *testing.T, base string, f sim.Fault) {
	t.Helper()
	body, _ := json.Marshal(f)
	resp, err := http.Post(base+"/_sim/faults", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /_sim/faults %s: %s", body, resp.Status)
	}
}

// clientSimStats reads one model's counters through the control API.
func clientSimStats(t *testing.T, base, model string) sim.ModelStats {
	t.Helper()
	resp, err := http.Get(base + "/_sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st sim.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("GET /_sim/stats: %v", err)
	}
	if m := st.Models[model]; m != nil {
		return *m
	}
	return sim.ModelStats{}
}

func clientCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func intp(n int) *int { return &n }

func TestCodexExecCompletes(t *testing.T) {
	clienttest.Codex(t)
	t.Parallel()
	const model, prompt = "gpt-6.1-sol", "Reply with pong"
	for _, jsonMode := range []bool{false, true} {
		name := "text"
		if jsonMode {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, answerTokens := clientSim(t)
			r := clienttest.RunCodex(t, clientCtx(t), clienttest.CodexOptions{
				BaseURL: base + "/v1", Model: model, Prompt: prompt, APIKey: clientTestKey,
				JSON: jsonMode, Timeout: 90 * time.Second,
			})
			// Codex puts its instructions, tools and an <environment_context>
			// user message before the prompt, but the prompt is the last user
			// message, so it is what the simulator echoes.
			want := sim.Answer(model, prompt, answerTokens)
			if r.ExitCode != 0 {
				t.Fatalf("codex exec: exit %d, want 0", r.ExitCode)
			}
			if jsonMode {
				var got []string
				for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
					var ev struct {
						Type string `json:"type"`
						Item struct {
							Type, Text string
						} `json:"item"`
					}
					if err := json.Unmarshal([]byte(line), &ev); err != nil {
						t.Fatalf("--json stdout line %q: %v", line, err)
					}
					if ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
						got = append(got, ev.Item.Text)
					}
				}
				if len(got) != 1 || got[0] != want {
					t.Errorf("agent messages = %q, want [%q]", got, want)
				}
			} else if got := strings.TrimSpace(r.Stdout); got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			st := clientSimStats(t, base, model)
			if st.Received != 1 || st.Served != 1 {
				t.Errorf("sim stats for %s: received %d, served %d; want 1 request, served", model, st.Received, st.Served)
			}
		})
	}
}

func TestCodexPrintsCapacity(t *testing.T) {
	clienttest.Codex(t)
	t.Parallel()
	const model = "gpt-6-astra"
	const capacityText = "Selected model is at capacity. Please try a different model."
	for _, style := range []string{
		"",       // the scenario's auto: response.failed after response.created on a Responses stream
		"status", // HTTP 503 server_is_overloaded
		"event",  // response.failed after response.created
	} {
		name := style
		if name == "" {
			name = "auto"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, _ := clientSim(t)
			clientSimFault(t, base, sim.Fault{Model: model, Kind: "capacity", Count: -1, Style: style})
			r := clienttest.RunCodex(t, clientCtx(t), clienttest.CodexOptions{
				BaseURL: base + "/v1", Model: model, Prompt: "Reply with pong", APIKey: clientTestKey,
				RequestMaxRetries: intp(0), Timeout: 90 * time.Second,
			})
			if r.ExitCode != 1 {
				t.Errorf("exit %d, want 1", r.ExitCode)
			}
			if !strings.Contains(r.Stderr, "ERROR: "+capacityText) {
				t.Errorf("stderr lacks %q", "ERROR: "+capacityText)
			}
			if strings.TrimSpace(r.Stdout) != "" {
				t.Errorf("stdout = %q, want empty", r.Stdout)
			}
			st := clientSimStats(t, base, model)
			if st.Rejected["capacity"] < 1 {
				t.Errorf("sim stats for %s: rejected capacity %d, want ≥ 1", model, st.Rejected["capacity"])
			}
			// request_max_retries=0 and stream_max_retries=0: one request,
			// whichever place the error is in.
			if st.Received != 1 || st.Served != 0 {
				t.Errorf("sim stats for %s: received %d, served %d; want 1 request, not served", model, st.Received, st.Served)
			}
		})
	}
}

func TestClaudeCompletes(t *testing.T) {
	clienttest.Claude(t)
	t.Parallel()
	const model, prompt = "claude-opus-5-5", "Reply with pong"
	base, answerTokens := clientSim(t)
	r := clienttest.RunClaude(t, clientCtx(t), clienttest.ClaudeOptions{
		BaseURL: base, Model: model, Prompt: prompt, APIKey: clientTestKey,
		MaxRetries: intp(0), Timeout: 90 * time.Second,
	})
	// Claude Code's last user message is a <system-reminder> block followed
	// by the prompt; the simulator skips reminders, so it echoes the prompt.
	want := sim.Answer(model, prompt, answerTokens)
	if r.ExitCode != 0 {
		t.Fatalf("claude -p: exit %d, want 0", r.ExitCode)
	}
	if got := strings.TrimSpace(r.Stdout); got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	st := clientSimStats(t, base, model)
	if st.Received != 1 || st.Served != 1 {
		t.Errorf("sim stats for %s: received %d, served %d; want 1 request, served", model, st.Received, st.Served)
	}
}

func TestClaudeOverloaded(t *testing.T) {
	clienttest.Claude(t)
	t.Parallel()
	const model = "claude-opus-5-5"
	for _, tc := range []struct {
		style    string
		requests int // what Claude sends with CLAUDE_CODE_MAX_RETRIES=0
	}{
		// HTTP 529 overloaded_error (the scenario's auto style for Messages).
		{"status", 1},
		// message_start, then event: error overloaded_error. Claude gives
		// up on the stream and asks again without streaming (stream:false),
		// which gets the 529.
		{"event", 2},
	} {
		t.Run(tc.style, func(t *testing.T) {
			t.Parallel()
			base, _ := clientSim(t)
			clientSimFault(t, base, sim.Fault{Model: model, Kind: "capacity", Count: -1, Style: tc.style})
			r := clienttest.RunClaude(t, clientCtx(t), clienttest.ClaudeOptions{
				BaseURL: base, Model: model, Prompt: "Reply with pong", APIKey: clientTestKey,
				MaxRetries: intp(0), Timeout: 90 * time.Second,
			})
			if r.ExitCode != 1 {
				t.Errorf("exit %d, want 1", r.ExitCode)
			}
			// Claude prints API errors on stdout in -p text mode:
			// "API Error: 529 Overloaded. This is a server-side issue, …"
			out := r.Stdout + r.Stderr
			for _, want := range []string{"529", "Overloaded"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			st := clientSimStats(t, base, model)
			if st.Received != tc.requests || st.Rejected["capacity"] != tc.requests || st.Served != 0 {
				t.Errorf("sim stats for %s: received %d, rejected capacity %d, served %d; want %d, %d, 0",
					model, st.Received, st.Rejected["capacity"], st.Served, tc.requests, tc.requests)
			}
		})
	}
}
