package gateway_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/simtest"
)

// Cline 3.0.65's recorded requests (Chat Completions, streamed, its
// run_commands tool taking a list of commands) stay accepted: with
// gpt-6-astra full the next model of its chain answers, the shell call
// comes back in run_commands' own shape and the tool result's turn is
// answered; with every gpt- model full another vendor's model answers.
func TestClineRequestsThroughTheGateway(t *testing.T) {
	cases := []struct {
		recording, full, target string
		want                    []string
	}{
		{"cline-3.0.65-first", "gpt-6-astra", "gpt-6.1-sol", []string{`"name":"run_commands"`, `"finish_reason":"tool_calls"`}},
		{"cline-3.0.65-tool-result", "gpt-6-astra", "gpt-6.1-sol", []string{"The command printed", "spill-48213-tok"}},
		{"cline-3.0.65-first", "gpt-", "claude-sonnet-5-5", []string{`"name":"run_commands"`, `"finish_reason":"tool_calls"`}},
		{"cline-3.0.65-tool-result", "gpt-", "claude-sonnet-5-5", []string{"The command printed", "spill-48213-tok"}},
	}
	for _, tc := range cases {
		t.Run(tc.recording+"→"+tc.target, func(t *testing.T) {
			r := newRig(t, nil, spillTo(tc.target))
			fullVendor(t, r, tc.full)
			if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
				t.Fatal(err)
			}
			rec := loadRecording(t, tc.recording)
			resp, body := rec.send(t, r, rec.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("X-Spillway-Model"); got != tc.target {
				t.Errorf("X-Spillway-Model = %q, want %q (route %s)", got, tc.target, resp.Header.Get("X-Spillway-Route"))
			}
			sseEvents(t, []byte(body))
			text := behaviour.Text([]byte(body))
			for _, w := range tc.want {
				if !strings.Contains(body, w) && !strings.Contains(text, w) {
					t.Errorf("the answer has no %s:\n%s", w, clipText(body))
				}
			}
			if st := r.servedStats(t, tc.target, 1); st == nil || st.Served != 1 {
				t.Fatalf("%s served %+v, want 1", tc.target, st)
			}
			if st := r.servedStats(t, "gpt-6-astra", 0); st != nil && st.Served != 0 {
				t.Errorf("the full gpt-6-astra served %d", st.Served)
			}
		})
	}
}
