package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

func TestTasksAreDeterministicAndMixed(t *testing.T) {
	t.Parallel()
	a, b := Tasks(40, 7), Tasks(40, 7)
	if !slices.EqualFunc(a, b, func(x, y Task) bool { return x.Prompt == y.Prompt && x.MinTier == y.MinTier && x.Context == y.Context }) {
		t.Fatal("the same seed gave two batches")
	}
	tiers := map[config.Tier]int{}
	for _, task := range a {
		tiers[task.MinTier]++
		if task.Context != "" {
			if task.MinTier != config.Light {
				t.Fatalf("%s is fat but needs %s: it could never fit a pool at peak", task.Name, task.MinTier)
			}
			// a fat task takes three slots: 16 000 to 24 000 tokens
			if tok := sim.EstimateTokens(task.chatBody("gpt-6-astra")); tok < 16000 || tok >= 24000 {
				t.Fatalf("fat task of %d tokens", tok)
			}
		}
	}
	if tiers[config.Heavy] != 8 || tiers[config.Medium] != 12 || tiers[config.Light] != 20 {
		t.Fatalf("tiers %v, want 8 heavy, 12 medium, 20 light", tiers)
	}
}

func TestAnsweredBy(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"[gpt-6-luna] hi": "gpt-6-luna", "hi": "", "[": "", "": ""} {
		if got := answeredBy(in); got != want {
			t.Errorf("answeredBy(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpillwayConfigScalesEveryWait(t *testing.T) {
	t.Parallel()
	cfg := spillwayConfig("http://127.0.0.1:1", 60, 0, 0)
	def := config.Default()
	if cfg.Retry.Ladder[0].D() != def.Retry.Ladder[0].D()/60 || cfg.Breaker.Cooldown.D() != def.Breaker.Cooldown.D()/60 || cfg.Breaker.MaxCooldown.D() != def.Breaker.MaxCooldown.D()/60 ||
		cfg.Pacing.MinGap.D() != def.Pacing.MinGap.D()/60 || cfg.Queue.GapMax.D() != def.Queue.GapMax.D()/60 {
		t.Fatalf("waits not divided by the clock's speed: %+v %+v", cfg.Retry, cfg.Breaker)
	}
	if cfg.Providers["openai"].BaseURL != "http://127.0.0.1:1/v1" {
		t.Fatalf("openai base %s", cfg.Providers["openai"].BaseURL)
	}
}

// The smoke run of the resilience bench: every client against its own
// simulator at a weekday peak. What must hold whatever the noise: the report
// has a line per client with consistent counts, spillway finishes every task
// and never below its tier, and the naive client does not finish them all.
func TestResilienceSmokeAtPeak(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the four clients for up to a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs := t.TempDir()
	rep, err := Resilience(ctx, ResilienceOptions{Tasks: 15, Seed: 1, Clock: "fast:240", Timeout: 2 * time.Minute, DataDir: t.TempDir(), EventsDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Clients) != 4 || rep.Tasks != 15 || rep.Scenario != "peak" {
		t.Fatalf("report %+v", rep)
	}
	byName := map[string]ClientResult{}
	for _, c := range rep.Clients {
		byName[c.Name] = c
		if c.Error != "" {
			t.Errorf("%s: %s", c.Name, c.Error)
		}
		served := 0
		for _, n := range c.ServedBy {
			served += n
		}
		if served != c.Completed || c.Attempts < c.Completed || c.Rejected > c.Attempts || c.LowerBoundS <= 0 {
			t.Errorf("%s: inconsistent counts %+v", c.Name, c)
		}
	}
	for _, name := range []string{SpillwayGateway, SpillwayQueue} {
		c := byName[name]
		if c.Completed != 15 || c.BelowTierTasks != 0 || c.MakespanRatio == nil {
			t.Errorf("%s: %d/15 completed, %d below their tier: %+v", name, c.Completed, c.BelowTierTasks, c)
		}
		// its event log (--events) has a record of every attempt the
		// simulator counted
		b, err := os.ReadFile(filepath.Join(logs, name+".jsonl"))
		if n := bytes.Count(b, []byte("\n")); err != nil || n != c.Attempts {
			t.Errorf("%s: %d records in its event log (%v), the simulator counted %d attempts", name, n, err, c.Attempts)
		}
	}
	if c := byName[Naive]; c.Completed == 15 {
		t.Errorf("the naive client finished every task at peak: %+v", c)
	}
	// the JSON has the documented fields
	b, _ := json.Marshal(rep)
	for _, f := range []string{`"clients"`, `"name"`, `"completion_rate"`, `"attempts_per_task"`, `"rejected_share"`, `"makespan_ratio"`, `"p50_s"`, `"p95_s"`, `"below_tier"`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("JSON lacks %s: %s", f, b)
		}
	}
}

func TestResilienceRefusesUnknownClients(t *testing.T) {
	t.Parallel()
	_, err := Resilience(context.Background(), ResilienceOptions{Tasks: 1, Clients: []string{"clever"}})
	if err == nil || !strings.Contains(err.Error(), `no client "clever"`) {
		t.Fatalf("err = %v", err)
	}
}

// The smoke run of the overhead bench, whole answers and streams: three
// paths per rate, every request answered, the ratio and throughput filled
// in. Its numbers are not checked: a bench is not a timed test. The
// overhead smokes do not run in parallel: their warm-ups and closed loops
// are windows of a few hundred ms of real time, which a test running beside
// them on a small machine can starve of CPU until no request ends in one.
func TestOverheadSmoke(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			rep, err := Overhead(context.Background(), OverheadOptions{RPS: []int{100, 200}, Duration: 300 * time.Millisecond, Slice: 100 * time.Millisecond,
				Stream: stream, Conns: 4, ThroughputFor: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Paths) != 6 || len(rep.MaxThroughput) != 3 || rep.RatioAtRPS != 100 || len(rep.Ratios) != 2 {
				t.Fatalf("report %+v", rep)
			}
			for _, p := range rep.Paths {
				if p.Errors != 0 || p.Sent < 25 || p.P50US <= 0 || p.P99US < p.P50US || p.TTFBP50US <= 0 || p.AllocsPerReq <= 0 {
					t.Errorf("%s at %d: %+v", p.Name, p.RPS, p)
				}
				if p.Name == Direct && (p.AddedP50US != 0 || p.AddedP99US != 0) {
					t.Errorf("direct adds to itself: %+v", p)
				}
			}
			for _, tp := range rep.MaxThroughput {
				if tp.RPS <= 0 {
					t.Errorf("%s throughput %v", tp.Name, tp.RPS)
				}
			}
			b, _ := json.Marshal(rep)
			for _, f := range []string{`"paths"`, `"name":"spillway"`, `"name":"bare"`, `"rps"`, `"p50_us"`, `"p99_us"`, `"ttfb_p50_us"`, `"added_p50_ratio"`} {
				if !strings.Contains(string(b), f) {
					t.Errorf("JSON lacks %s", f)
				}
			}
		})
	}
}

// The paths a flag adds: the translated path (the same Chat request
// answered by another vendor's model) and the failover paths (the first
// model answering 529 at once, its breaker closed or open): every request
// answered, each path's latencies measured, and their metrics (the goals'
// names) in the report. What the numbers are is not checked: they are
// wall-clock differences a loaded machine can make any size or sign, and
// goals on them belong to `spillway bench`, not to a unit test.
func TestOverheadExtraPathsSmoke(t *testing.T) {
	cases := []struct {
		name    string
		o       OverheadOptions
		paths   []string
		metrics []string
		ratio   bool // the metrics are ratios over the floor (n/a under it)
	}{
		{"translated", OverheadOptions{RPS: []int{100}, Stream: true, Conns: 4, Translated: true}, []string{Translated, DirectTranslated}, []string{"translated100"}, true},
		{"failover", OverheadOptions{RPS: []int{50}, Failover: true}, []string{Failover, FailoverSkip}, []string{"failover50_p50", "failover50_p99", "skip50_p50"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Duration, c.o.Slice = 400*time.Millisecond, 200*time.Millisecond
			rep, err := Overhead(context.Background(), c.o)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
			for _, p := range rep.Paths {
				seen[p.Name] = true
				if p.Errors != 0 || p.Sent < 10 {
					t.Errorf("%s: %+v", p.Name, p)
				}
				// a latency is a duration measured: positive, p99 at
				// least p50; the added times are differences, any sign
				if p.P50US <= 0 || p.P99US < p.P50US || p.TTFBP50US <= 0 || !finite(p.AddedP50US) || !finite(p.AddedP99US) {
					t.Errorf("%s: latencies not measured: %+v", p.Name, p)
				}
			}
			m := rep.metrics()
			for _, p := range c.paths {
				if !seen[p] {
					t.Errorf("no %s path: %v", p, seen)
				}
			}
			// in the report, whatever its value: a failover's p99 is the
			// difference from the direct path's, which noise on a loaded
			// machine can make negative over 400 ms; a ratio over the
			// floor (translated) is n/a when spillway's own added time to
			// first byte falls under it, as it may under load. A value
			// given is a number; the failover times are always given
			for _, name := range c.metrics {
				mt, in := m[name]
				switch {
				case !in:
					t.Errorf("metric %s not in the report: %v", name, m)
				case mt.ok && !finite(mt.value):
					t.Errorf("metric %s: %+v", name, mt)
				case !mt.ok && !c.ratio:
					t.Errorf("metric %s not given: %+v", name, mt)
				}
			}
		})
	}
}
