package bench

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// run is a report of one run at 500 req/s: the bare proxy adds bareUS
// (p50 and time to first byte) over direct's 1000 µs, spillway swUS.
func run(bareUS, swUS, cpuRatio, rssRatio, tputRatio float64) *OverheadReport {
	const d = 1000
	return &OverheadReport{Procs: true, BareRSSMB: 100, SpillwayRSSMB: 100 * rssRatio,
		Paths: []PathResult{
			{Name: Direct, RPS: 500, P50US: d, TTFBP50US: d},
			{Name: Bare, RPS: 500, P50US: d + bareUS, TTFBP50US: d + bareUS, AddedP50US: bareUS, AddedP99US: bareUS, CPUPerReqUS: 10},
			{Name: Spillway, RPS: 500, P50US: d + swUS, TTFBP50US: d + swUS, AddedP50US: swUS, AddedP99US: swUS, CPUPerReqUS: 10 * cpuRatio},
		},
		MaxThroughput: []Throughput{{Name: Bare, RPS: 1000}, {Name: Spillway, RPS: 1000 * tputRatio}},
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	runs := []*OverheadReport{
		run(400, 480, 1.1, 1.2, 0.9), // ratio 1.2
		run(400, 600, 1.3, 1.1, 1.0), // 1.5
		run(30, 90, 1.2, 1.3, 0.95),  // floor under 50 µs: n/a for the time ratios
		run(400, 440, 1.0, 1.2, 0.8), // 1.1
		run(400, 520, 1.2, 1.2, 0.9), // 1.3
	}
	var goals []Goal
	for _, s := range []string{"ttfb500<=1.25", "added500<=1.3", "cpu500<=1.2", "rss<=1.2", "throughput>=0.95"} {
		g, err := ParseGoal(s)
		if err != nil {
			t.Fatal(err)
		}
		goals = append(goals, g)
	}
	rr, err := summarize(runs, goals)
	if err != nil {
		t.Fatal(err)
	}
	if r := rr.Ratios["added500"]; r.Runs != 4 || r.Median != 1.25 || r.Min != 1.1 || r.Max != 1.5 {
		t.Fatalf("added500 %+v: the median of 1.1, 1.2, 1.3, 1.5 (the 30 µs floor left out)", r)
	}
	if r := rr.Ratios["cpu500"]; r.Runs != 5 || r.Median != 1.2 {
		t.Fatalf("cpu500 %+v", r)
	}
	met := map[string]bool{}
	for _, g := range rr.Goals {
		met[g.Name] = g.Met
	}
	if !met["ttfb500"] || !met["added500"] || !met["cpu500"] || !met["rss"] || met["throughput"] {
		t.Fatalf("verdicts %v: throughput's median 0.9 misses >= 0.95, the rest hold", met)
	}
	var b strings.Builder
	rr.WriteText(&b)
	if !strings.Contains(b.String(), "added500     1.25  (1.10–1.50, 4 of 5 runs)") || !strings.Contains(b.String(), "goal throughput>=0.95: not met (median 0.90)") {
		t.Fatalf("text:\n%s", b.String())
	}
	if _, err := summarize(runs, []Goal{{Name: "ttfb2000", Op: "<=", Bound: 1}}); err == nil || !strings.Contains(err.Error(), "measure no ratio") {
		t.Fatalf("a goal of a ratio not measured: %v", err)
	}
	for _, bad := range []string{"ttfb500<1.2", "1.2>=ttfb", "ttfb500<=x"} {
		if _, err := ParseGoal(bad); err == nil {
			t.Fatalf("ParseGoal(%q) took it", bad)
		}
	}
}

// The speed goals are judged when no goal is given: each one the runs
// measure, in a table; the others are named as not measured.
func TestSpeedGoals(t *testing.T) {
	t.Parallel()
	runs := []*OverheadReport{run(400, 480, 1.1, 1.3, 0.96), run(400, 520, 1.3, 1.1, 0.97), run(400, 440, 1.0, 1.25, 0.9)}
	goals := SpeedGoals(OverheadOptions{Stream: true})
	for _, g := range goals {
		if strings.HasPrefix(g.What, "whole answers") {
			t.Fatalf("a streams run judges %s", g.What)
		}
	}
	rr, err := summarize(runs, goals)
	if err != nil {
		t.Fatal(err)
	}
	verdict := map[string]bool{}
	for _, g := range rr.Goals {
		verdict[g.Name] = g.Met
	}
	// at 500 req/s: ttfb 1.2 (met), cpu 1.1 (met), rss 1.25 (not), throughput 0.96 (met)
	if len(verdict) != 4 || !verdict["ttfb500"] || !verdict["cpu500"] || verdict["rss"] || !verdict["throughput"] {
		t.Fatalf("verdicts %v", verdict)
	}
	var b strings.Builder
	rr.WriteText(&b)
	for _, want := range []string{
		"streams: added time to first byte p50 @500 req/s  1.20",
		"streams: peak RSS with the open streams",
		"1.25    1.10–1.30  ≤ 1.2   not met",
		"not measured by these runs: ttfb1000<=1.3, cpu1000<=1.2, failover50_p50<=1000, failover50_p99<=3000",
	} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("no %q in:\n%s", want, b.String())
		}
	}
	whole := SpeedGoals(OverheadOptions{})
	if len(whole) != 4 || whole[0].Name != "added1000" || whole[1].Bound != 0.9 {
		t.Fatalf("whole-answer goals %+v", whole)
	}
}

// The Bedrock goals (issue 48: at most 1.3×) are judged by default only
// when the runs measure the Bedrock paths; other stream runs do not name
// them.
func TestSpeedGoalsBedrock(t *testing.T) {
	t.Parallel()
	names := func(o OverheadOptions) (out []string) {
		for _, g := range SpeedGoals(o) {
			out = append(out, g.Name+g.Op+strconv.FormatFloat(g.Bound, 'f', -1, 64))
		}
		return out
	}
	if got := names(OverheadOptions{Stream: true, Procs: true, Bedrock: true}); !slices.Contains(got, "bedrock500<=1.3") || !slices.Contains(got, "bedrock1000<=1.3") {
		t.Errorf("with Bedrock: %v", got)
	}
	if got := names(OverheadOptions{Stream: true, Procs: true}); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "bedrock") }) {
		t.Errorf("without Bedrock: %v", got)
	}
}
