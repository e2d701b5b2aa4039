package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/sim"
)

// Qwen Code 0.24.4's recorded requests (its first turn, with its fourteen
// tools, and the turn bringing its run_shell_command's output back; on
// Chat Completions, and on the Responses API as setup qwen sets it up)
// stay accepted: asked for the codex chain's first model, which is full, the
// next answers; with every OpenAI model full, the overflow's Claude model
// answers, translated, its call in Qwen Code's own tool.
func TestQwenRecordingsThroughTheGateway(t *testing.T) {
	cases := []struct {
		recording, full, spill, target string
		want                           []string
	}{
		{"qwen-0.24.4-first", "gpt-6-astra", "", "gpt-6.1-sol", []string{`"name":"run_shell_command"`, `"finish_reason":"tool_calls"`, "[DONE]"}},
		{"qwen-0.24.4-tool-result", "gpt-6-astra", "", "gpt-6.1-sol", []string{"The command printed", "spill-4711", "[DONE]"}},
		{"qwen-0.24.4-first", "gpt-", "claude-sonnet-5-5", "claude-sonnet-5-5", []string{`"name":"run_shell_command"`, `"finish_reason":"tool_calls"`}},
		{"qwen-0.24.4-tool-result", "gpt-", "claude-sonnet-5-5", "claude-sonnet-5-5", []string{"The command printed", "spill-4711"}},
		// as spillway setup qwen sets it up: the Responses API
		{"qwen-0.24.4-responses-first", "gpt-6-astra", "", "gpt-6.1-sol", []string{`"type":"function_call"`, `"name":"run_shell_command"`, "response.completed"}},
		{"qwen-0.24.4-responses-tool-result", "gpt-6-astra", "", "gpt-6.1-sol", []string{"The command printed", "spill-4711", "response.completed"}},
		{"qwen-0.24.4-responses-first", "gpt-", "claude-sonnet-5-5", "claude-sonnet-5-5", []string{`"name":"run_shell_command"`, "response.completed"}},
		{"qwen-0.24.4-responses-tool-result", "gpt-", "claude-sonnet-5-5", "claude-sonnet-5-5", []string{"The command printed", "spill-4711"}},
	}
	for _, tc := range cases {
		t.Run(tc.recording+"→"+tc.target, func(t *testing.T) {
			var r *rig
			if tc.spill != "" {
				r = newRig(t, nil, spillTo(tc.spill))
				fullVendor(t, r, tc.full)
			} else {
				r = newRig(t, nil, nil)
				r.fault(t, sim.Fault{Model: tc.full, Kind: "capacity", Count: -1})
			}
			// the shell call the recordings hold, then the answer quoting
			// its output
			if err := r.sim.AddScript(sim.Script{Turns: []sim.ScriptTurn{
				{Call: sim.ScriptCalls{{Tool: "shell", Arguments: map[string]any{"command": "cat token.txt"}}}},
				{Text: "The command printed {result}"},
			}}); err != nil {
				t.Fatal(err)
			}
			rec := loadRecording(t, tc.recording)
			var body map[string]any
			if err := json.Unmarshal(rec.Body, &body); err != nil {
				t.Fatal(err)
			}
			body["model"] = "gpt-6-astra" // the codex chain's first
			b, _ := json.Marshal(body)
			resp, out := rec.send(t, r, b)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			if got := resp.Header.Get("X-Spillway-Model"); got != tc.target {
				t.Errorf("X-Spillway-Model = %q, want %q", got, tc.target)
			}
			sseEvents(t, []byte(out))
			text := behaviour.Text([]byte(out))
			for _, w := range tc.want {
				if !strings.Contains(out, w) && !strings.Contains(text, w) {
					t.Errorf("the answer has no %s:\n%s", w, clipText(out))
				}
			}
			if st := r.servedStats(t, tc.target, 1); st == nil || st.Served != 1 {
				t.Fatalf("%s served %+v, want 1", tc.target, st)
			}
		})
	}
}
