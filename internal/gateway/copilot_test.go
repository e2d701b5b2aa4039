package gateway_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// GitHub Copilot CLI's recorded requests (1.0.102 in its bring-your-own-
// provider mode: Chat Completions, streamed, its bash tool) are answered
// through the gateway: with gpt-6.1-sol full, by the next model of its
// chain; with every OpenAI model full, by Anthropic's through the chain's
// overflow. The shell call comes back as Copilot's own bash call, and the
// tool-result turn's answer quotes the command's output.
func TestCopilotCLIRecordedRequests(t *testing.T) {
	cases := []struct {
		recording, full, target string
		want                    []string
	}{
		{"copilot-1.0.102-first", "gpt-6.1-sol", "gpt-6-luna", []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"copilot-1.0.102-tool-result", "gpt-6.1-sol", "gpt-6-luna", []string{"The command printed", "spill-42"}},
		{"copilot-1.0.102-first", "gpt-", "claude-sonnet-5-5", []string{`"name":"bash"`, `"finish_reason":"tool_calls"`}},
		{"copilot-1.0.102-tool-result", "gpt-", "claude-sonnet-5-5", []string{"The command printed", "spill-42"}},
	}
	for _, tc := range cases {
		t.Run(tc.recording+"→"+tc.target, func(t *testing.T) {
			t.Parallel()
			cross := strings.HasSuffix(tc.full, "-")
			var mut func(*config.Config)
			if cross {
				mut = spillTo(tc.target)
			}
			r := newRig(t, nil, mut)
			if cross {
				fullVendor(t, r, tc.full)
			} else {
				r.fault(t, sim.Fault{Model: tc.full, Kind: "capacity", Count: -1})
			}
			if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
				t.Fatal(err)
			}
			rec := loadRecording(t, tc.recording)
			if rec.Path != "/v1/chat/completions" {
				t.Fatalf("the recording's path %q", rec.Path)
			}
			resp, body := rec.send(t, r, rec.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("X-Spillway-Model"); got != tc.target {
				t.Errorf("X-Spillway-Model = %q, want %q (route %q)", got, tc.target, resp.Header.Get("X-Spillway-Route"))
			}
			if len(sseEvents(t, []byte(body))) == 0 {
				t.Fatalf("no stream:\n%s", clipText(body))
			}
			text := behaviour.Text([]byte(body))
			for _, w := range tc.want {
				if !strings.Contains(body, w) && !strings.Contains(text, w) {
					t.Errorf("the answer has no %s:\n%s", w, clipText(body))
				}
			}
			var served bool
			for _, rec := range r.records() {
				if rec.Model == tc.target && rec.Class == "ok" {
					served = true
					if cross && rec.TranslatedFrom == "" {
						t.Errorf("the answer's record does not say it was translated: %+v", rec)
					}
				}
			}
			if !served {
				t.Errorf("no record of %s answering: %+v", tc.target, r.records())
			}
		})
	}
}
