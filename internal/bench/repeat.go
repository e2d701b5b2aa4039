package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spillway/spillway/internal/words"
)

// On these 2-CPU machines one run of the overhead bench swings by more than
// a factor of two for the same binary: a goal is judged on the median of
// several runs, each in processes of its own, never on one (the measuring
// rule BENCHMARKS.md states). Repeat runs Overhead reps times, one after
// the other (each run interleaves its paths), and takes each ratio's median
// with its range.

// minFloorUS is the least the bare proxy must add (over direct) for a
// ratio over it to mean anything: below it, noise is the ratio.
const minFloorUS = 50

// Ratio is one spillway ÷ bare-proxy figure over the runs.
type Ratio struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Runs counts the runs that gave the ratio; the others' floor (the
	// bare proxy's added time) was under 50 µs, or they did not measure it.
	Runs int `json:"runs"`
	// Higher: the figure is better when higher (throughput).
	Higher bool `json:"higher_is_better,omitempty"`
}

// Goal is a bound on a ratio's median: NAME<=X, or NAME>=X.
type Goal struct {
	Name  string  `json:"name"`
	Op    string  `json:"op"`
	Bound float64 `json:"bound"`
	// Median is the ratio's over the runs, Met whether it holds; NA: no
	// run gave the ratio.
	Median float64 `json:"median"`
	Met    bool    `json:"met"`
	NA     bool    `json:"n/a,omitempty"`
	// What says what the figure is (the speed goals'), Min and Max its
	// range over the runs.
	What string  `json:"what,omitempty"`
	Min  float64 `json:"min,omitempty"`
	Max  float64 `json:"max,omitempty"`
	// ifMeasured: judged only when the runs measure the ratio (the speed
	// goals, which depend on the flags), not an error otherwise.
	ifMeasured bool
}

// speedGoals are the gateway's speed goals (BENCHMARKS.md, "The speed
// goals"): what a run judges when it is given no --goal.
var speedGoals = []struct {
	goal, what string
	stream     int  // 1: streams only, -1: whole answers only, 0: both
	bedrock    bool // with OverheadOptions.Bedrock only
}{
	{"ttfb500<=1.2", "streams: added time to first byte p50 @500 req/s", 1, false},
	{"ttfb1000<=1.3", "streams: added time to first byte p50 @1000 req/s", 1, false},
	{"cpu500<=1.2", "streams: CPU per request @500 req/s", 1, false},
	{"cpu1000<=1.2", "streams: CPU per request @1000 req/s", 1, false},
	{"rss<=1.2", "streams: peak RSS with the open streams", 1, false},
	{"throughput>=0.95", "streams: max throughput", 1, false},
	{"added1000<=1.2", "whole answers: added p50 @1000 req/s", -1, false},
	{"throughput>=0.9", "whole answers: max throughput", -1, false},
	{"bedrock500<=1.3", "Bedrock's event stream: added TTFB p50 ÷ the same-format SSE path's @500 req/s", 1, true},
	{"bedrock1000<=1.3", "Bedrock's event stream: added TTFB p50 ÷ the same-format SSE path's @1000 req/s", 1, true},
	{"failover50_p50<=1000", "failover: added p50 over the answering model's direct time, µs @50 req/s", 0, false},
	{"failover50_p99<=3000", "failover: added p99 over the answering model's direct time, µs @50 req/s", 0, false},
}

// SpeedGoals are the speed goals that apply to runs with o's answers
// (streams or whole): each is judged when the runs measure its ratio.
func SpeedGoals(o OverheadOptions) []Goal {
	var out []Goal
	for _, s := range speedGoals {
		if s.stream == 1 && !o.Stream || s.stream == -1 && o.Stream || s.bedrock && !o.Bedrock {
			continue
		}
		g, err := ParseGoal(s.goal)
		if err != nil {
			panic(err) // the table above is wrong
		}
		g.What, g.ifMeasured = s.what, true
		out = append(out, g)
	}
	return out
}

var goalRe = regexp.MustCompile(`^([a-z]+[a-z_0-9]*)(<=|>=)([0-9]*\.?[0-9]+)$`)

// ParseGoal reads NAME<=X or NAME>=X (ttfb500<=1.3, throughput>=0.95).
func ParseGoal(s string) (Goal, error) {
	m := goalRe.FindStringSubmatch(strings.ReplaceAll(s, " ", ""))
	if m == nil {
		return Goal{}, fmt.Errorf("goal %q: write it as NAME<=X or NAME>=X, such as ttfb500<=1.3 (names: %s)", s, goalNames)
	}
	b, _ := strconv.ParseFloat(m[3], 64)
	return Goal{Name: m[1], Op: m[2], Bound: b}, nil
}

// goalNames says what ratios there are, for messages.
const goalNames = "addedRPS (added p50), p99_RPS (added p99), ttfbRPS and cpuRPS (with --procs), rss (with --procs), throughput, bedrockRPS (with --bedrock)"

// RepeatedReport is Repeat's: every run's report, each ratio over them,
// and the goals' verdicts.
type RepeatedReport struct {
	Runs   []*OverheadReport `json:"runs"`
	Ratios map[string]Ratio  `json:"ratios"`
	Goals  []Goal            `json:"goals,omitempty"`
	// Unjudged are the speed goals these runs do not measure (a rate not
	// run, no --procs, no --failover).
	Unjudged []string `json:"unjudged,omitempty"`
}

// Repeat runs Overhead reps times and judges goals on the medians. A goal
// naming a ratio the runs did not measure is an error.
func Repeat(ctx context.Context, o OverheadOptions, reps int, goals []Goal) (*RepeatedReport, error) {
	reps = max(reps, 1)
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	var runs []*OverheadReport
	for i := range reps {
		if reps > 1 {
			progress("run %d of %d", i+1, reps)
		}
		rep, err := Overhead(ctx, o)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rep)
	}
	return summarize(runs, goals)
}

// summarize takes each ratio's median and range over runs, and judges
// goals on the medians.
func summarize(runs []*OverheadReport, goals []Goal) (*RepeatedReport, error) {
	rr := &RepeatedReport{Runs: runs, Ratios: map[string]Ratio{}}
	values := map[string][]float64{}
	higher := map[string]bool{}
	for _, rep := range runs {
		for name, m := range rep.metrics() {
			if _, seen := values[name]; !seen {
				values[name] = nil
			}
			higher[name] = m.higher
			if m.ok {
				values[name] = append(values[name], m.value)
			}
		}
	}
	for name, vs := range values {
		r := Ratio{Runs: len(vs), Higher: higher[name]}
		if len(vs) > 0 {
			s := slices.Sorted(slices.Values(vs))
			r.Min, r.Max = s[0], s[len(s)-1]
			if n := len(s); n%2 == 1 {
				r.Median = s[n/2]
			} else {
				r.Median = (s[n/2-1] + s[n/2]) / 2
			}
		}
		rr.Ratios[name] = r
	}
	for _, g := range goals {
		r, ok := rr.Ratios[g.Name]
		if !ok && g.ifMeasured {
			rr.Unjudged = append(rr.Unjudged, g.Name+g.Op+strconv.FormatFloat(g.Bound, 'f', -1, 64))
			continue
		}
		if !ok {
			return nil, fmt.Errorf("goal %s: these runs measure no ratio %q (they measure %s)", g.Name, g.Name, strings.Join(slices.Sorted(maps.Keys(rr.Ratios)), ", "))
		}
		g.Median, g.Min, g.Max, g.NA = r.Median, r.Min, r.Max, r.Runs == 0
		switch {
		case g.NA:
		case g.Op == "<=":
			g.Met = r.Median <= g.Bound
		default:
			g.Met = r.Median >= g.Bound
		}
		rr.Goals = append(rr.Goals, g)
	}
	return rr, nil
}

// metric is one ratio of one run: ok false when it is n/a (its floor was
// under minFloorUS, or the run did not measure it).
type metric struct {
	value  float64
	ok     bool
	higher bool
}

// metrics are the run's ratios by name (Goal names them).
func (r *OverheadReport) metrics() map[string]metric {
	out := map[string]metric{}
	over := func(sw, bare float64) metric {
		if bare < minFloorUS {
			return metric{}
		}
		return metric{value: sw / bare, ok: true}
	}
	byRate := map[int]map[string]PathResult{}
	for _, p := range r.Paths {
		if byRate[p.RPS] == nil {
			byRate[p.RPS] = map[string]PathResult{}
		}
		byRate[p.RPS][p.Name] = p
	}
	for rps, at := range byRate {
		direct, bare, sw := at[Direct], at[Bare], at[Spillway]
		k := strconv.Itoa(rps)
		out["added"+k] = over(sw.AddedP50US, bare.AddedP50US)
		out["p99_"+k] = over(sw.AddedP99US, bare.AddedP99US)
		// the failover paths' added time over direct, in µs (not a ratio:
		// a goal is a bound on it, failover50_p50<=1000)
		if f, ok := at[Failover]; ok {
			out["failover"+k+"_p50"], out["failover"+k+"_p99"] = metric{value: f.AddedP50US, ok: true}, metric{value: f.AddedP99US, ok: true}
		}
		if f, ok := at[FailoverSkip]; ok {
			out["skip"+k+"_p50"], out["skip"+k+"_p99"] = metric{value: f.AddedP50US, ok: true}, metric{value: f.AddedP99US, ok: true}
		}
		if tr, ok := at[Translated]; ok {
			out["translated"+k] = over(tr.TTFBP50US-at[DirectTranslated].TTFBP50US, sw.TTFBP50US-direct.TTFBP50US)
		}
		if _, ok := at[BedrockPath]; ok {
			// the ratio over the Messages path's added time, and both
			// added times in µs (bedrock500_us, messages500_us)
			b, m := bedrockAdded(at)
			out["bedrock"+k] = over(b, m)
			out["bedrock"+k+"_us"], out["messages"+k+"_us"] = metric{value: b, ok: true}, metric{value: m, ok: true}
		}
		if r.Procs {
			out["ttfb"+k] = over(sw.TTFBP50US-direct.TTFBP50US, bare.TTFBP50US-direct.TTFBP50US)
			if bare.CPUPerReqUS > 0 {
				out["cpu"+k] = metric{value: sw.CPUPerReqUS / bare.CPUPerReqUS, ok: true}
			} else {
				out["cpu"+k] = metric{}
			}
		}
	}
	if r.Procs && r.BareRSSMB > 0 {
		out["rss"] = metric{value: r.SpillwayRSSMB / r.BareRSSMB, ok: true}
	}
	var bareT, swT float64
	for _, t := range r.MaxThroughput {
		switch t.Name {
		case Bare:
			bareT = t.RPS
		case Spillway:
			swT = t.RPS
		}
	}
	if bareT > 0 {
		out["throughput"] = metric{value: swT / bareT, ok: true, higher: true}
	}
	return out
}

// WriteText prints each ratio's median and range over the runs, and the
// goals' verdicts; with one run, that run's report first.
func (rr *RepeatedReport) WriteText(out io.Writer) {
	if len(rr.Runs) == 1 {
		rr.Runs[0].WriteText(out)
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "spillway ÷ bare proxy over %d %s (median, min–max; n/a: the bare proxy added under %d µs):\n", len(rr.Runs), words.Plural(len(rr.Runs), "run", "runs"), minFloorUS)
	names := make([]string, 0, len(rr.Ratios))
	for k := range rr.Ratios {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return ratioOrder(names[i]) < ratioOrder(names[j]) })
	for _, n := range names {
		r := rr.Ratios[n]
		if r.Runs == 0 {
			fmt.Fprintf(out, "  %-12s n/a\n", n)
			continue
		}
		fmt.Fprintf(out, "  %-12s %.2f  (%.2f–%.2f, %d of %s)\n", n, r.Median, r.Min, r.Max, r.Runs, words.Count(len(rr.Runs), "run"))
	}
	if len(rr.Goals) > 0 && rr.Goals[0].What != "" {
		rr.writeGoalTable(out)
		return
	}
	for _, g := range rr.Goals {
		fmt.Fprintf(out, "goal %s%s%g: %s (median %.2f)\n", g.Name, g.Op, g.Bound, g.verdict(), g.Median)
	}
}

func (g Goal) verdict() string {
	switch {
	case g.NA:
		return "n/a"
	case g.Met:
		return "met"
	}
	return "not met"
}

// writeGoalTable prints the speed goals as a table: what, the median and
// range over the runs, the bound, the verdict.
func (rr *RepeatedReport) writeGoalTable(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nspeed goals (median of %d %s)\tmedian\tmin–max\tgoal\tverdict\n", len(rr.Runs), words.Plural(len(rr.Runs), "run", "runs"))
	for _, g := range rr.Goals {
		op := map[string]string{"<=": "≤", ">=": "≥"}[g.Op]
		if g.NA {
			fmt.Fprintf(tw, "%s\tn/a\t\t%s %g\tn/a\n", g.What, op, g.Bound)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s–%s\t%s %g\t%s\n", g.What, figure(g.Median), figure(g.Min), figure(g.Max), op, g.Bound, g.verdict())
	}
	tw.Flush()
	if len(rr.Unjudged) > 0 {
		fmt.Fprintf(out, "not measured by these runs: %s (the rates 50, 500 and 1000 req/s, --procs and --failover measure them)\n", strings.Join(rr.Unjudged, ", "))
	}
}

// figure prints a ratio with two decimals, a time in µs whole.
func figure(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// ratioOrder sorts the ratios: by kind, then by rate.
func ratioOrder(name string) string {
	kind := strings.TrimRight(name, "0123456789")
	rate, _ := strconv.Atoi(name[len(kind):])
	rank := map[string]string{"added": "0", "p99_": "1", "ttfb": "2", "cpu": "3", "rss": "4", "throughput": "5"}[kind]
	return fmt.Sprintf("%s%08d", rank, rate)
}
