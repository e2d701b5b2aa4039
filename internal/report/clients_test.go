package report_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/gateway"
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

// The real flow: the pinned Codex CLI works through the gateway against the
// simulator, leaving its rollouts and the gateway's event log. The report
// counts each turn once, from the log; with an empty log, every turn from
// the rollouts.
func TestReportCountsCodexTurnsThroughTheGatewayOnce(t *testing.T) {
	srv, base := simtest.Start(t, nil)
	log := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := events.NewWriter(log, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Options{Config: simtest.Config(base), Events: w})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw.Handler())
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zero := 0
	codex := func(prompt string, extra ...string) clienttest.Result {
		r := clienttest.RunCodex(t, ctx, clienttest.CodexOptions{BaseURL: hs.URL + "/v1", Model: "gpt-6-astra", Prompt: prompt,
			APIKey: "sk-report-gateway", RequestMaxRetries: &zero, ExtraArgs: extra})
		if r.ExitCode != 0 {
			t.Fatalf("codex: exit %d\n%s", r.ExitCode, r.Stderr)
		}
		return r
	}
	// a turn answered; a tool loop's turn (two requests); a turn the
	// gateway spilled from the full model to the next (two attempts)
	runs := []clienttest.Result{codex("Say hello")}
	script := simtest.ShellScript()
	script.Count = 1
	if err := srv.AddScript(script); err != nil {
		t.Fatal(err)
	}
	runs = append(runs, codex("Run the command and tell me what it printed", "--dangerously-bypass-approvals-and-sandbox"))
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	runs = append(runs, codex("Say hello again"))
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// the three sessions in one CODEX_HOME, as one user's
	home := t.TempDir()
	for i, r := range runs {
		files, _ := filepath.Glob(filepath.Join(r.CodexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
		if len(files) != 1 {
			t.Fatalf("run %d left %d rollouts", i, len(files))
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(home, "sessions", "2026", "12", fmt.Sprintf("%02d", i+1))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(files[0])), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	records := 0
	if err := events.ReadFile(log, func(events.Record) error { records++; return nil }); err != nil {
		t.Fatal(err)
	}
	if records != 5 {
		t.Fatalf("%d records in the gateway's log, want 5", records)
	}
	empty := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(empty, nil, 0o600)
	for _, c := range []struct {
		log                 string
		attempts, turns, in int
	}{
		{log, 5, 0, 3},   // each turn once, from the log
		{empty, 3, 3, 0}, // every turn, from the rollouts
	} {
		r := build(t, report.Options{EventLog: c.log, EventLogNamed: true, CodexHome: home, Only: []string{"spillway", "codex"}, Loc: time.UTC})
		turns, in := 0, 0
		for _, i := range r.Inputs {
			if i.Source == "codex" {
				turns, in = turns+i.Events, in+i.Duplicates
			}
		}
		if r.Totals.Attempts != c.attempts || turns != c.turns || in != c.in {
			t.Fatalf("log %s: %d attempts, %d turns from the rollouts, %d left to the log: want %d, %d and %d (%+v)",
				c.log, r.Totals.Attempts, turns, in, c.attempts, c.turns, c.in, r.Inputs)
		}
	}
}
