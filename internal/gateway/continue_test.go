package gateway_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// cn 1.5.47's recorded requests (Chat Completions, streamed, its Bash
// tool among nine): with gpt-6-astra full the chain's next model answers
// in cn's own stream, the shell call in the first turn's answer and the
// command's output quoted in the tool result's; with every gpt- model
// full, the overflow's Claude model answers, translated.
func TestContinueCLIRequests(t *testing.T) {
	cases := []struct {
		recording string
		full      []string // models full
		spill     string   // overflow target, "" for none
		model     string   // who answers
		want      string
	}{
		{"cn-1.5.47-first", []string{"gpt-6-astra"}, "", "gpt-6.1-sol", `"name":"Bash"`},
		{"cn-1.5.47-tool-result", []string{"gpt-6-astra"}, "", "gpt-6.1-sol", "The command printed the token is spill-4471-okapi"},
		{"cn-1.5.47-first", []string{"gpt-"}, "claude-sonnet-5-5", "claude-sonnet-5-5", `"name":"Bash"`},
		{"cn-1.5.47-tool-result", []string{"gpt-"}, "claude-sonnet-5-5", "claude-sonnet-5-5", "spill-4471-okapi"},
	}
	for _, tc := range cases {
		t.Run(tc.recording+"→"+tc.model, func(t *testing.T) {
			var r *rig
			if tc.spill != "" {
				r = newRig(t, nil, spillTo(tc.spill))
				fullVendor(t, r, tc.full[0])
			} else {
				r = newRig(t, nil, nil)
				for _, m := range tc.full {
					r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
				}
			}
			if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
				t.Fatal(err)
			}
			rec := loadRecording(t, tc.recording)
			resp, body := rec.send(t, r, rec.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("X-Spillway-Model"); got != tc.model {
				t.Errorf("X-Spillway-Model = %q, want %q", got, tc.model)
			}
			sseEvents(t, []byte(body))
			if !strings.Contains(body, "data: [DONE]") {
				t.Errorf("cn's stream has no [DONE]:\n%s", clipText(body))
			}
			if !strings.Contains(body, tc.want) && !strings.Contains(behaviour.Text([]byte(body)), tc.want) {
				t.Errorf("the answer has no %s:\n%s", tc.want, clipText(body))
			}
			if tc.spill != "" {
				translatedOK(t, r, tc.model, "chat", 1)
			}
		})
	}
}
