package gateway_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// OpenCode 1.18.33's recorded Chat Completions requests (its first turn,
// and the turn with its bash tool's result) stay accepted: with
// gpt-6-astra full the chain's next model answers in a Chat stream, and
// with every OpenAI model full Claude answers through the overflow, the
// shell call coming back as OpenCode's own bash tool.
func TestOpenCodeRecordedRequests(t *testing.T) {
	cases := []struct {
		recording, target string
		cross             bool
		want              []string
	}{
		{"opencode-1.18.33-first", "gpt-6.1-sol", false, []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"opencode-1.18.33-tool-result", "gpt-6.1-sol", false, []string{"The command printed", "spill-42"}},
		{"opencode-1.18.33-first", "claude-sonnet-5-5", true, []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"opencode-1.18.33-tool-result", "claude-sonnet-5-5", true, []string{"The command printed", "spill-42"}},
	}
	for _, tc := range cases {
		t.Run(tc.recording+"→"+tc.target, func(t *testing.T) {
			var r *rig
			if tc.cross {
				r = newRig(t, nil, spillTo(tc.target))
				fullVendor(t, r, "gpt-")
			} else {
				r = newRig(t, nil, nil)
				r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
			}
			if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
				t.Fatal(err)
			}
			rec := loadRecording(t, tc.recording)
			resp, body := rec.send(t, r, rec.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("X-Spillway-Model"); got != tc.target {
				t.Errorf("X-Spillway-Model = %q, want %q", got, tc.target)
			}
			sseEvents(t, []byte(body))
			text := behaviour.Text([]byte(body))
			for _, w := range tc.want {
				if !strings.Contains(body, w) && !strings.Contains(text, w) {
					t.Errorf("the answer has no %s:\n%s", w, clipText(body))
				}
			}
		})
	}
}
