package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// The recorded requests of the five agents added after the first three
// (testdata/clients: each one's first turn, with its own tools, and the
// turn bringing its shell tool's output back) stay accepted through the
// gateway: with the model they ask for full, the chain's next model
// answers in the stream the agent reads, the shell call in the agent's own
// tool (OpenCode's and Copilot CLI's bash, Qwen Code's run_shell_command,
// Cline's run_commands, cn's Bash) and the tool result's output quoted;
// with every OpenAI model full, the overflow's Claude model answers,
// translated, with the gateway's own key.
func TestAgentRecordingsThroughTheGateway(t *testing.T) {
	const claude = "claude-sonnet-5-5"
	cases := []struct {
		recording string
		full      string // the model made full; "gpt-": every OpenAI model, the target reached through the overflow
		target    string // the model that answers
		model     string // the model the request names instead of the recording's ("" keeps it)
		want      []string
	}{
		{"opencode-1.18.33-first", "gpt-6-astra", "gpt-6.1-sol", "", []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"opencode-1.18.33-tool-result", "gpt-6-astra", "gpt-6.1-sol", "", []string{"The command printed", "spill-42"}},
		{"opencode-1.18.33-first", "gpt-", claude, "", []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"opencode-1.18.33-tool-result", "gpt-", claude, "", []string{"The command printed", "spill-42"}},

		{"copilot-1.0.102-first", "gpt-6.1-sol", "gpt-6-luna", "", []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"copilot-1.0.102-tool-result", "gpt-6.1-sol", "gpt-6-luna", "", []string{"The command printed", "spill-42"}},
		{"copilot-1.0.102-first", "gpt-", claude, "", []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"copilot-1.0.102-tool-result", "gpt-", claude, "", []string{"The command printed", "spill-42"}},

		// Qwen Code on Chat Completions (its default) and on the Responses
		// API (as setup qwen sets it up), asked for the codex chain's first
		{"qwen-0.24.4-first", "gpt-6-astra", "gpt-6.1-sol", "gpt-6-astra", []string{`"name":"run_shell_command"`, `"finish_reason":"tool_calls"`, "[DONE]"}},
		{"qwen-0.24.4-tool-result", "gpt-6-astra", "gpt-6.1-sol", "gpt-6-astra", []string{"The command printed", "spill-4711", "[DONE]"}},
		{"qwen-0.24.4-first", "gpt-", claude, "gpt-6-astra", []string{`"name":"run_shell_command"`, `"finish_reason":"tool_calls"`}},
		{"qwen-0.24.4-tool-result", "gpt-", claude, "gpt-6-astra", []string{"The command printed", "spill-4711"}},
		{"qwen-0.24.4-responses-first", "gpt-6-astra", "gpt-6.1-sol", "gpt-6-astra", []string{`"type":"function_call"`, `"name":"run_shell_command"`, "response.completed"}},
		{"qwen-0.24.4-responses-tool-result", "gpt-6-astra", "gpt-6.1-sol", "gpt-6-astra", []string{"The command printed", "spill-4711", "response.completed"}},
		{"qwen-0.24.4-responses-first", "gpt-", claude, "gpt-6-astra", []string{`"name":"run_shell_command"`, "response.completed"}},
		{"qwen-0.24.4-responses-tool-result", "gpt-", claude, "gpt-6-astra", []string{"The command printed", "spill-4711"}},

		{"cline-3.0.65-first", "gpt-6-astra", "gpt-6.1-sol", "", []string{`"name":"run_commands"`, `"finish_reason":"tool_calls"`}},
		{"cline-3.0.65-tool-result", "gpt-6-astra", "gpt-6.1-sol", "", []string{"The command printed", "spill-48213-tok"}},
		{"cline-3.0.65-first", "gpt-", claude, "", []string{`"name":"run_commands"`, `"finish_reason":"tool_calls"`}},
		{"cline-3.0.65-tool-result", "gpt-", claude, "", []string{"The command printed", "spill-48213-tok"}},

		{"cn-1.5.47-first", "gpt-6-astra", "gpt-6.1-sol", "", []string{`"name":"Bash"`, "data: [DONE]"}},
		{"cn-1.5.47-tool-result", "gpt-6-astra", "gpt-6.1-sol", "", []string{"The command printed the token is spill-4471-okapi", "data: [DONE]"}},
		{"cn-1.5.47-first", "gpt-", claude, "", []string{`"name":"Bash"`}},
		{"cn-1.5.47-tool-result", "gpt-", claude, "", []string{"spill-4471-okapi"}},
	}
	for _, tc := range cases {
		t.Run(tc.recording+"→"+tc.target, func(t *testing.T) {
			t.Parallel()
			cross := strings.HasSuffix(tc.full, "-")
			var r *rig
			if cross {
				r = newRig(t, nil, spillTo(tc.target))
				fullVendor(t, r, tc.full)
			} else {
				r = newRig(t, nil, nil)
				r.fault(t, sim.Fault{Model: tc.full, Kind: "capacity", Count: -1})
			}
			if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
				t.Fatal(err)
			}
			rec := loadRecording(t, tc.recording)
			body := rec.Body
			if tc.model != "" {
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatal(err)
				}
				m["model"] = tc.model
				body, _ = json.Marshal(m)
			}
			resp, out := rec.send(t, r, body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			if got := resp.Header.Get("X-Spillway-Model"); got != tc.target {
				t.Errorf("X-Spillway-Model = %q, want %q (route %q)", got, tc.target, resp.Header.Get("X-Spillway-Route"))
			}
			if len(sseEvents(t, []byte(out))) == 0 {
				t.Fatalf("no stream:\n%s", clipText(out))
			}
			text := behaviour.Text([]byte(out))
			for _, w := range tc.want {
				if !strings.Contains(out, w) && !strings.Contains(text, w) {
					t.Errorf("the answer has no %s:\n%s", w, clipText(out))
				}
			}
			if cross {
				from := "chat"
				if strings.HasSuffix(rec.Path, "/responses") {
					from = "responses"
				}
				translatedOK(t, r, tc.target, from, 1)
				return
			}
			if st := r.servedStats(t, tc.target, 1); st == nil || st.Served != 1 {
				t.Fatalf("%s served %+v, want 1", tc.target, st)
			}
			if st := r.servedStats(t, tc.full, 0); st != nil && st.Served != 0 {
				t.Errorf("the full %s served %d", tc.full, st.Served)
			}
		})
	}
}
