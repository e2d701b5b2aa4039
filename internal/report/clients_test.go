package report_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/report"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// The real clients, run against the simulator with a model at capacity,
// leave files that the report reads: the capacity failure appears on the
// right model, in the hour it happened; the answered run beside it too.
func TestReportReadsTheRealClients(t *testing.T) {
	zero := 0
	one := 1
	for _, c := range []struct {
		name, model string
		run         func(t *testing.T, ctx context.Context, base, prompt string) clienttest.Result
		options     func(o *report.Options, r clienttest.Result)
	}{
		{"codex", "gpt-6-astra", func(t *testing.T, ctx context.Context, base, prompt string) clienttest.Result {
			return clienttest.RunCodex(t, ctx, clienttest.CodexOptions{BaseURL: base + "/v1", Model: "gpt-6-astra", Prompt: prompt, APIKey: "sk-report", RequestMaxRetries: &zero})
		}, func(o *report.Options, r clienttest.Result) { o.CodexHome = r.CodexHome }},
		{"claude", "claude-opus-5-5", func(t *testing.T, ctx context.Context, base, prompt string) clienttest.Result {
			return clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: base, Model: "claude-opus-5-5", Prompt: prompt, APIKey: "sk-ant-report", MaxRetries: &zero})
		}, func(o *report.Options, r clienttest.Result) { o.ClaudeHome = filepath.Join(r.Home, ".claude") }},
		{"gemini", "gemini-3-pro", func(t *testing.T, ctx context.Context, base, prompt string) clienttest.Result {
			return clienttest.RunGemini(t, ctx, clienttest.GeminiOptions{BaseURL: base, Model: "gemini-3-pro", Prompt: prompt, APIKey: "AIza-report", MaxAttempts: one})
		}, func(o *report.Options, r clienttest.Result) {
			o.GeminiHome, o.TempDir = filepath.Join(r.Home, ".gemini"), filepath.Join(r.Home, "tmp")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, base := simtest.Start(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// one session that answered, then one at capacity: each in a
			// home of its own, read together
			ok := c.run(t, ctx, base, "Say hello")
			srv.AddFault(sim.Fault{Model: c.model, Kind: "capacity", Count: -1, Style: "status"})
			before := time.Now().UTC()
			full := c.run(t, ctx, base, "Say hello again")
			after := time.Now().UTC()
			if full.ExitCode == 0 {
				t.Fatalf("the run at capacity succeeded:\n%s", full.Stderr)
			}
			for i, r := range []clienttest.Result{ok, full} {
				o := report.Options{Only: []string{c.name}, Loc: time.UTC}
				c.options(&o, r)
				got := build(t, o)
				m := modelStats(got, c.model)
				if i == 0 && (m == nil || m.Classes["ok"] != 1) {
					t.Fatalf("the answered run: models %+v", got.Models)
				}
				if i == 1 {
					if got.Totals.Capacity < 1 {
						t.Fatalf("no capacity failure read: totals %+v inputs %+v", got.Totals, got.Inputs)
					}
					if c.name != "gemini" && (m == nil || m.Classes["capacity"] < 1) { // Gemini CLI records no model for a failed prompt
						t.Fatalf("the capacity failure is not on %s: %+v", c.model, got.Models)
					}
					d := (int(before.Weekday()) + 6) % 7
					if got.Heatmap[d][before.Hour()].Capacity+got.Heatmap[(int(after.Weekday())+6)%7][after.Hour()].Capacity < 1 {
						t.Fatalf("the capacity failure is not in the hour it happened (%s)", before.Format(time.RFC3339))
					}
				}
			}
		})
	}
}

func modelStats(r report.Result, model string) *report.ModelStats {
	for i := range r.Models {
		if r.Models[i].Model == model {
			return &r.Models[i]
		}
	}
	return nil
}
