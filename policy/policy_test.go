package policy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/policy/policytest"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// clocked is an engine for cfg on a fake clock, with the clock.
func clocked(cfg *config.Config, opts ...Option) (*Engine, *policytest.Clock) {
	clk := policytest.New(t0)
	return New(cfg, append([]Option{WithClock(clk)}, opts...)...), clk
}

func testEngine(t *testing.T, mut func(*config.Config)) *Engine {
	t.Helper()
	cfg := config.Default()
	cfg.Retry.Budget = config.Duration(45 * time.Second)
	cfg.Breaker.Failures = 3
	if mut != nil {
		mut(cfg)
	}
	e, _ := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	return e
}

func v(c classify.Class, wait time.Duration) classify.Verdict {
	return classify.Verdict{Class: c, Wait: wait}
}

func TestPolicyTable(t *testing.T) {
	type want struct {
		action action
		model  string
		wait   time.Duration
	}
	cases := []struct {
		name    string
		req     Request
		mut     func(*config.Config)
		verdict []classify.Verdict // outcomes fed in order
		want    []want             // the step after each
	}{
		{"capacity switches at once down the chain", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.Capacity, 0), v(classify.Capacity, 0), v(classify.OK, 0)},
			[]want{{send, "gpt-6.1-sol", 0}, {send, "gpt-6-luna", 0}, {done, "gpt-6-luna", 0}}},
		{"capacity: exhausted chain backs off then walks again from the top", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.Capacity, 0), v(classify.Capacity, 0), v(classify.Capacity, 0), v(classify.Capacity, 0)},
			// backoff base 1s × rand 0.5 = 500ms for the first walk
			[]want{{send, "gpt-6.1-sol", 0}, {send, "gpt-6-luna", 0}, {send, "gpt-6-astra", 500 * time.Millisecond}, {send, "gpt-6.1-sol", 0}}},
		{"capacity: retry-after is a floor on the backoff", Request{Model: "gpt-6-luna"},
			nil,
			[]classify.Verdict{v(classify.Capacity, 7*time.Second)},
			[]want{{send, "gpt-6-luna", 7 * time.Second}}},
		{"capacity never goes below the minimum tier", Request{Model: "gpt-6-astra", MinTier: config.Medium},
			nil,
			[]classify.Verdict{v(classify.Capacity, 0), v(classify.Capacity, 0)},
			[]want{{send, "gpt-6.1-sol", 0}, {send, "gpt-6-astra", 500 * time.Millisecond}}},
		{"no fallback stays on the model", Request{Model: "claude-opus-5-5", NoFallback: true},
			nil,
			[]classify.Verdict{v(classify.Capacity, 0)},
			[]want{{send, "claude-opus-5-5", 500 * time.Millisecond}}},
		{"capacity fails when the budget is spent", Request{Model: "gpt-6-luna", Budget: 5 * time.Second},
			nil,
			[]classify.Verdict{v(classify.Capacity, 4*time.Second), v(classify.Capacity, 4*time.Second)},
			[]want{{send, "gpt-6-luna", 4 * time.Second}, {fail, "", 0}}},
		{"rate limit waits on the same model", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.RateLimit, 11*time.Second), v(classify.OK, 0)},
			[]want{{send, "gpt-6-astra", 11 * time.Second}, {done, "gpt-6-astra", 0}}},
		{"rate limit switches only when the wait exceeds the budget", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.RateLimit, 60*time.Second)},
			[]want{{send, "gpt-6.1-sol", 0}}},
		{"rate limit without a hint backs off, twice, then the next model", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.RateLimit, 0), v(classify.RateLimit, 0), v(classify.RateLimit, 0)},
			[]want{{send, "gpt-6-astra", 500 * time.Millisecond}, {send, "gpt-6-astra", time.Second}, {send, "gpt-6.1-sol", 0}}},
		{"rate limit retries are capped with a Retry-After too; the last model fails", Request{Model: "gpt-6-luna"},
			nil,
			[]classify.Verdict{v(classify.RateLimit, time.Second), v(classify.RateLimit, time.Second), v(classify.RateLimit, time.Second)},
			[]want{{send, "gpt-6-luna", time.Second}, {send, "gpt-6-luna", time.Second}, {fail, "", 0}}},
		{"rate limit retries: configurable", Request{Model: "gpt-6-astra"},
			func(c *config.Config) { c.Retry.RateLimitRetries = 0 },
			[]classify.Verdict{v(classify.RateLimit, time.Second)},
			[]want{{send, "gpt-6.1-sol", 0}}},
		{"quota fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.Quota, time.Hour)}, []want{{fail, "", 0}}},
		{"auth fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.Auth, 0)}, []want{{fail, "", 0}}},
		{"bad request fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.BadRequest, 0)}, []want{{fail, "", 0}}},
		{"content filter fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ContentFilter, 0)}, []want{{fail, "", 0}}},
		{"model not found skips the model", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ModelNotFound, 0), v(classify.Capacity, 0), v(classify.Capacity, 0)},
			[]want{{send, "gpt-6.1-sol", 0}, {send, "gpt-6-luna", 0}, {send, "gpt-6.1-sol", 500 * time.Millisecond}}},
		{"context length goes to a larger window", Request{Model: "gpt-6-astra"},
			func(c *config.Config) { c.Chains["codex"] = []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra"} },
			[]classify.Verdict{v(classify.ContextLength, 0)},
			[]want{{send, "gpt-6.1-terra", 0}}},
		{"context length with no larger window fails", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ContextLength, 0)}, []want{{fail, "", 0}}},
		{"server error: one short retry, then as capacity", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ServerError, 0), v(classify.ServerError, 0)},
			[]want{{send, "gpt-6-astra", 500 * time.Millisecond}, {send, "gpt-6.1-sol", 0}}},
		{"network: fixed gap on the same model; a provider that answered nothing is never a switch", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.Network, 0), v(classify.Network, 0), v(classify.Network, 0), v(classify.Network, 0)},
			[]want{{send, "gpt-6-astra", 2 * time.Second}, {send, "gpt-6-astra", 2 * time.Second}, {send, "gpt-6-astra", 2 * time.Second}, {fail, "", 0}}},
		{"timeout: the next model at once (retry.timeout_retries: 0)", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.Timeout, 0), v(classify.Timeout, 0), v(classify.Timeout, 0)},
			[]want{{send, "gpt-6.1-sol", 0}, {send, "gpt-6-luna", 0}, {fail, "", 0}}},
		{"timeout: configured retries first", Request{Model: "gpt-6-astra"},
			func(c *config.Config) { c.Retry.TimeoutRetries = 1 },
			[]classify.Verdict{v(classify.Timeout, 0), v(classify.Timeout, 0)},
			[]want{{send, "gpt-6-astra", 0}, {send, "gpt-6.1-sol", 0}}},
		{"unknown model passes through as a chain of one", Request{Model: "my-finetune", Type: "openai"}, nil,
			[]classify.Verdict{v(classify.Capacity, 0)},
			[]want{{send, "my-finetune", 500 * time.Millisecond}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := testEngine(t, c.mut)
			p := e.newPlan(c.req)
			st := p.start()
			if st.Action != send || st.Candidate.Model != c.req.Model {
				t.Fatalf("start = %+v", st)
			}
			for i, verdict := range c.verdict {
				st = p.after(verdict)
				w := c.want[i]
				if st.Action != w.action || (w.model != "" && st.Candidate.Model != w.model) || (w.action == send && st.Wait != w.wait) {
					t.Fatalf("after %s (#%d): got action %v model %s wait %v; want %v %s %v\nroute %s", verdict.Class, i+1, st.Action, st.Candidate.Model, st.Wait, w.action, w.model, w.wait, p.routeString())
				}
				if st.Action == fail && (!strings.Contains(st.Reason, string(verdict.Class)) || !strings.Contains(st.Reason, "tried ") || !strings.Contains(st.Reason, "waited")) {
					t.Fatalf("fail reason does not name classes, models and wait: %q", st.Reason)
				}
			}
		})
	}
}

func TestRouteString(t *testing.T) {
	e := testEngine(t, nil)
	p := e.newPlan(Request{Model: "gpt-6-astra"})
	p.start()
	p.after(v(classify.Capacity, 0))
	p.after(v(classify.OK, 0))
	if got := p.routeString(); got != "gpt-6-astra:capacity > gpt-6.1-sol:ok" {
		t.Fatalf("route %q", got)
	}
	// a command spillway sets no model of: its run is the hop
	if got := renderRoute([]Hop{{Class: classify.Unknown}, {Class: classify.OK}}); got != "command:unknown > command:ok" {
		t.Fatalf("a command's route %q", got)
	}
}

func TestBackoffFullJitterCapped(t *testing.T) {
	cfg := config.Default()
	for _, r := range []float64{0, 0.25, 0.999} {
		e := New(cfg, WithRand(func() float64 { return r }))
		for n := 1; n < 12; n++ {
			ceil := min(time.Second<<(n-1), 20*time.Second)
			d := e.backoff(n)
			want := max(time.Duration(r*float64(ceil)), 250*time.Millisecond)
			if d < 250*time.Millisecond || d > ceil || d != want {
				t.Fatalf("Backoff(%d) with rand %v = %v, ceiling %v", n, r, d, ceil)
			}
		}
	}
}

func TestBreakerOpenProbeClose(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 3, Window: config.Duration(time.Minute), Cooldown: config.Duration(80 * time.Millisecond)}
	e, clk := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	key := "openai/gpt-6-astra"
	for i := 0; i < 3; i++ {
		done, _, ok := e.breakers.Allow(key)
		if !ok {
			t.Fatalf("closed breaker refused attempt %d", i)
		}
		done(v(classify.Capacity, 0))
	}
	if !e.breakers.Open(key) {
		t.Fatal("breaker not open after 3 capacity errors")
	}
	if _, _, ok := e.breakers.Allow(key); ok {
		t.Fatal("open breaker let a request through")
	}
	// while heavy is open, new plans start at medium
	if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Model != "gpt-6.1-sol" {
		t.Fatalf("start while heavy open = %s", st.Candidate.Model)
	}
	clk.Advance(79 * time.Millisecond)
	if _, _, ok := e.breakers.Allow(key); ok || !e.breakers.Open(key) {
		t.Fatal("a probe before the cooldown ended")
	}
	clk.Advance(time.Millisecond)
	probe, _, ok := e.breakers.Allow(key)
	if !ok {
		t.Fatal("no probe after cooldown")
	}
	if _, _, ok := e.breakers.Allow(key); ok {
		t.Fatal("a second request got through while the probe is out")
	}
	probe(v(classify.OK, 0))
	if e.breakers.Open(key) || e.breakers.States()[key] != "closed" {
		t.Fatalf("breaker not closed after a good probe: %v", e.breakers.States())
	}
	// network errors neither open nor close it
	for i := 0; i < 10; i++ {
		done, _, _ := e.breakers.Allow(key)
		done(v(classify.Network, 0))
	}
	if e.breakers.Open(key) {
		t.Fatal("network errors opened the breaker")
	}
}

func TestPacerGapsAndConcurrency(t *testing.T) {
	clk := policytest.New(t0)
	cfg := config.Pacing{MinGap: config.Duration(500 * time.Millisecond), Jitter: config.Duration(time.Second), MaxConcurrency: 2}
	p := newPacer(cfg, true, clk, func() float64 { return 0.5 }, nil)
	ctx := context.Background()
	var starts []time.Time
	var releases []func()
	for i := 0; i < 2; i++ {
		before := clk.Now()
		rel, start, waited, err := p.acquire(ctx, "m", "k", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if !start.Equal(clk.Now()) || waited != start.Sub(before) {
			t.Fatalf("start %v waited %v at %v", start, waited, clk.Now())
		}
		starts = append(starts, clk.Now())
		releases = append(releases, rel)
	}
	if gap := starts[1].Sub(starts[0]); gap != time.Second { // 500ms + 0.5×1s
		t.Fatalf("gap %v, want 1s", gap)
	}
	// a third must wait for a slot: past its deadline it gives up
	got := make(chan error, 1)
	go func() {
		_, _, _, err := p.acquire(ctx, "m", "k", clk.Now().Add(time.Second))
		got <- err
	}()
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Fatalf("third request got past max_concurrency: %v", err)
	default:
	}
	clk.Advance(time.Second)
	if err := <-got; !errors.Is(err, errPaced) {
		t.Fatalf("a bounded wait for a slot ended with %v", err)
	}
	// a free slot whose turn comes after the deadline is refused without a wait
	releases[0]()
	rel, _, _, err := p.acquire(ctx, "m", "k", time.Time{}) // its turn is now; the next is 1s away
	if err != nil {
		t.Fatal(err)
	}
	rel()
	before := clk.Now()
	if _, _, _, err := p.acquire(ctx, "m", "k", clk.Now().Add(100*time.Millisecond)); !errors.Is(err, errPaced) || !clk.Now().Equal(before) {
		t.Fatalf("turn after the deadline: %v, clock moved %v", err, clk.Now().Sub(before))
	}
	// a rate limit slows the key
	p.slowDown("m\x00k")
	if p.slowness("m\x00k") != 2 || p.slowness("m\x00other") != 1 {
		t.Fatal("slowdown not per key")
	}
	p.ease("m\x00k")
	if p.slowness("m\x00k") != 1 {
		t.Fatal("recover did not restore the pace")
	}
}

func TestLadderAndExplicitModels(t *testing.T) {
	e := testEngine(t, nil)
	p := e.newPlan(Request{Models: []string{"gpt-6-astra", "my-own-model"}, Model: "gpt-6-astra", Type: "openai",
		Ladder: []time.Duration{30 * time.Second, 2 * time.Minute}})
	if st := p.start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatal(st)
	}
	steps := []struct {
		model string
		wait  time.Duration
	}{{"my-own-model", 0}, {"gpt-6-astra", 30 * time.Second}, {"my-own-model", 0}, {"gpt-6-astra", 2 * time.Minute}, {"my-own-model", 0}}
	for i, want := range steps {
		st := p.after(v(classify.Capacity, 0))
		if st.Action != send || st.Candidate.Model != want.model || st.Wait != want.wait {
			t.Fatalf("step %d: %+v", i, st)
		}
	}
	st := p.after(v(classify.Capacity, 0))
	if st.Action != fail || !strings.Contains(st.Reason, GlobalOutage) {
		t.Fatalf("after the last rung: %+v", st)
	}
	if p.waited != 150*time.Second {
		t.Fatalf("waited %v", p.waited)
	}
}

func TestLadderRespectsTheWaitBudget(t *testing.T) {
	e := testEngine(t, nil)
	p := e.newPlan(Request{Model: "gpt-6-luna", Budget: time.Minute, Ladder: []time.Duration{30 * time.Second, 2 * time.Minute}})
	p.start()
	if st := p.after(v(classify.Capacity, 0)); st.Action != send || st.Wait != 30*time.Second {
		t.Fatalf("first rung: %+v", st)
	}
	if st := p.after(v(classify.Capacity, 0)); st.Action != fail || !strings.Contains(st.Reason, "wait budget") {
		t.Fatalf("second rung past --max-wait: %+v", st)
	}
	// a huge Retry-After cannot stretch a ladder without a budget past its total
	p = e.newPlan(Request{Model: "gpt-6-luna", Ladder: []time.Duration{time.Second}})
	p.start()
	if st := p.after(v(classify.Capacity, 24*time.Hour)); st.Action != fail {
		t.Fatalf("a 24h wait was accepted: %+v", st)
	}
}

func TestBreakerCooldownDoublesWhileThePoolStaysFull(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(60 * time.Second), MaxCooldown: config.Duration(150 * time.Second)}
	e, clk := clocked(cfg)
	key := "openai/gpt-6-astra"
	trip := func() {
		t.Helper()
		done, _, ok := e.breakers.Allow(key)
		if !ok {
			t.Fatal("no request or probe allowed")
		}
		done(v(classify.Capacity, 0))
	}
	// shutFor checks that the breaker stays shut for d and then lets one
	// probe through, which it returns
	shutFor := func(d time.Duration) func(classify.Verdict) {
		t.Helper()
		if w := e.breakers.Wait(key); w != d {
			t.Fatalf("wait %v, want %v", w, d)
		}
		clk.Advance(d - time.Second)
		if _, _, ok := e.breakers.Allow(key); ok {
			t.Fatalf("a probe before %v", d)
		}
		clk.Advance(time.Second)
		probe, _, ok := e.breakers.Allow(key)
		if !ok {
			t.Fatalf("no probe after %v", d)
		}
		if _, _, ok := e.breakers.Allow(key); ok {
			t.Fatal("a second probe while the first is out")
		}
		return probe
	}
	trip()
	// three failed probes: shut 60s, then 120s, then 150s (capped)
	for _, d := range []time.Duration{60 * time.Second, 120 * time.Second, 150 * time.Second} {
		shutFor(d)(v(classify.Capacity, 0))
	}
	// a probe that gets through closes the breaker and resets the cooldown
	shutFor(150 * time.Second)(v(classify.OK, 0))
	if e.breakers.Open(key) || e.breakers.States()[key] != "closed" {
		t.Fatalf("after a good probe: %v", e.breakers.States())
	}
	trip()
	shutFor(60 * time.Second)
}

// A model passed over at the start because its reduced room is taken
// leaves a hop in the route, as an open breaker does.
func TestACrowdedModelIsInTheRoute(t *testing.T) {
	e := testEngine(t, nil)
	const m = "openai/gpt-6-astra"
	for range 2 {
		e.pacer.full(m) // its room shrinks to one
	}
	rel, _, _, err := e.pacer.acquire(context.Background(), m, "k", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	p := e.newPlan(Request{Model: "gpt-6-astra"})
	if st := p.start(); st.Candidate.Model != "gpt-6.1-sol" {
		t.Fatalf("started at %s", st.Candidate.Model)
	}
	p.after(v(classify.OK, 0))
	if got := p.routeString(); got != "gpt-6-astra:crowded > gpt-6.1-sol:ok" {
		t.Fatalf("route %q", got)
	}
}

func TestPacerAdaptsToTheRoomLeft(t *testing.T) {
	clk := policytest.New(t0)
	p := newPacer(config.Pacing{MaxConcurrency: 4}, true, clk, func() float64 { return 0 }, nil)
	ctx := context.Background()
	const m = "openai/gpt-6.1-sol"
	// capacity answers halve the limit, down to one
	for _, want := range []int{2, 1, 1} {
		p.full(m)
		if got := p.limit(m); got != want {
			t.Fatalf("limit %d after a capacity answer, want %d", got, want)
		}
	}
	if p.crowded(m) {
		t.Fatal("crowded with nothing in flight")
	}
	rel, _, _, err := p.acquire(ctx, m, "k", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.crowded(m) {
		t.Fatal("one in flight at a limit of one: the room is taken")
	}
	// a second waits; four answers raise the limit to two and let it in
	got := make(chan error, 1)
	go func() { _, _, _, err := p.acquire(ctx, m, "k", clk.Now().Add(time.Second)); got <- err }()
	if err := clk.BlockUntil(ctx, 1); err != nil { // it waits for a slot
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Fatalf("a second request went in at a limit of one (%v)", err)
	default:
	}
	for range 4 {
		p.served(m)
	}
	if err := <-got; err != nil || p.limit(m) != 2 {
		t.Fatalf("after four answers: %v, limit %d", err, p.limit(m))
	}
	rel()
	// never above the configured concurrency, and not crowded at it
	for range 40 {
		p.served(m)
	}
	if p.limit(m) != 4 {
		t.Fatalf("limit %d, want the configured 4", p.limit(m))
	}
}

func TestPlansGoAroundACrowdedModel(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 2}
	e := New(cfg)
	heavy := Candidate{Provider: "openai", Upstream: "gpt-6-astra"}.Key()
	e.pacer.full(heavy) // the pool showed room for one
	rel, _, _, err := e.pacer.acquire(context.Background(), heavy, "k", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Model != "gpt-6.1-sol" {
		t.Fatalf("started at %s while heavy's one slot is taken", st.Candidate.Model)
	}
	// a request that may only use heavy waits for it instead
	if st := e.newPlan(Request{Model: "gpt-6-astra", MinTier: config.Heavy}).start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("a heavy-only request started at %s", st.Candidate.Model)
	}
	rel()
	if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("started at %s with heavy's slot free", st.Candidate.Model)
	}
	// the engine feeds the limit from the model's answers
	done, _ := e.allow(context.Background(), heavy, "")
	done(v(classify.OK, 0))
	done2, _ := e.allow(context.Background(), heavy, "")
	done2(v(classify.Capacity, 0))
	if e.pacer.limit(heavy) != 1 {
		t.Fatalf("limit %d after a capacity answer", e.pacer.limit(heavy))
	}
}

func TestProbeWaitFollowsTheBreakers(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute), MaxCooldown: config.Duration(time.Minute)}
	e, clk := clocked(cfg)
	heavyOnly := Request{Model: "gpt-6-astra", MinTier: config.Heavy}
	if w := e.probeWait(heavyOnly); w != 0 {
		t.Fatalf("probe wait %v with every breaker closed", w)
	}
	done, _ := e.allow(context.Background(), "openai/gpt-6-astra", "")
	done(v(classify.Capacity, 0))
	clk.Advance(10 * time.Second)
	if w := e.probeWait(heavyOnly); w != 50*time.Second {
		t.Fatalf("probe wait %v, want the 50s left of the minute's cooldown", w)
	}
	// a request that may use medium, whose breaker is closed, can go now
	if w := e.probeWait(Request{Model: "gpt-6-astra"}); w != 0 {
		t.Fatalf("probe wait %v with medium closed", w)
	}
}

func TestBreakerOpensOnCapacityInARow(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 5, Window: config.Duration(time.Minute), Consecutive: 2, Cooldown: config.Duration(time.Minute)}
	e := New(cfg)
	key := "openai/gpt-6-astra"
	answer := func(c classify.Class) {
		t.Helper()
		done, ok := e.allow(context.Background(), key, "")
		if !ok {
			t.Fatalf("refused before %s", c)
		}
		done(v(c, 0))
	}
	// capacity answers with answers between: a busy pool, not a full one
	for _, c := range []classify.Class{classify.Capacity, classify.OK, classify.Capacity, classify.OK} {
		answer(c)
	}
	if e.breakers.Open(key) {
		t.Fatal("open after capacity answers that had answers between them")
	}
	answer(classify.Capacity)
	answer(classify.Capacity)
	if !e.breakers.Open(key) {
		t.Fatal("still closed after two capacity answers in a row")
	}
}

func TestAHeavyOnlyWaitReservesHeavysRoom(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 2}
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	e := New(cfg, WithRand(func() float64 { return 0.5 }))
	heavy := Candidate{Provider: "openai", Upstream: "gpt-6-astra"}.Key()
	// a heavy-only request (a queue's, parked between tries) finds heavy
	// full and waits to try again
	p := e.newPlan(Request{Model: "gpt-6-astra", MinTier: config.Heavy, Park: true})
	p.start()
	e.pacer.full(heavy)
	if st := p.after(v(classify.Capacity, 0)); st.Action != send || st.Wait <= 0 || st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("step %+v", st)
	}
	// meanwhile a request that may go lower leaves heavy's scarce room to it
	if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Model != "gpt-6.1-sol" {
		t.Fatalf("started at %s while a heavy-only request waits for heavy", st.Candidate.Model)
	}
	// with room back to the configured concurrency nothing is reserved
	for range 8 {
		e.pacer.served(heavy)
	}
	if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("started at %s with heavy's room back", st.Candidate.Model)
	}
}

func TestACrowdedModelIsKeptWhenNothingElseFits(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 2}
	for _, m := range []string{"gpt-6.1-sol", "gpt-6-luna"} {
		mm := cfg.Models[m]
		mm.Context = 100_000
		cfg.Models[m] = mm
	}
	e := New(cfg)
	heavy := Candidate{Provider: "openai", Upstream: "gpt-6-astra"}.Key()
	e.pacer.full(heavy)
	rel, _, _, err := e.pacer.acquire(context.Background(), heavy, "k", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	// 200k tokens fit only heavy's 272k window: wait for heavy rather than
	// send it where it cannot fit
	if st := e.newPlan(Request{Model: "gpt-6-astra", InputTokens: 200_000}).start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("a request only heavy can hold started at %s", st.Candidate.Model)
	}
}

func TestProbeWaitWhileTheProbeIsOut(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(40 * time.Second), MaxCooldown: config.Duration(40 * time.Second)}
	e, clk := clocked(cfg)
	heavyOnly := Request{Model: "gpt-6-astra", MinTier: config.Heavy}
	done, _ := e.allow(context.Background(), "openai/gpt-6-astra", "")
	done(v(classify.Capacity, 0))
	clk.Advance(40 * time.Second)
	probe, ok := e.allow(context.Background(), "openai/gpt-6-astra", "")
	if !ok {
		t.Fatal("no probe after the cooldown")
	}
	// the probe is out: not closed, so a queue task must not sleep a rung
	if w := e.probeWait(heavyOnly); w != 10*time.Second {
		t.Fatalf("probe wait %v while the probe is out", w)
	}
	probe(v(classify.OK, 0))
	if w := e.probeWait(heavyOnly); w != 0 {
		t.Fatalf("probe wait %v after a good probe", w)
	}
}

// hookClock runs a hook at each Sleep: a test looks at the engine while a
// request waits between its tries.
type hookClock struct {
	*policytest.Clock
	onSleep func()
}

func (c hookClock) Sleep(ctx context.Context, d time.Duration) error {
	c.onSleep()
	return c.Clock.Sleep(ctx, d)
}

// While a request that can use no other model than heavy is under way (here
// waiting between its tries, with heavy's one slot free), heavy's scarce
// room is its: a request with somewhere else to go starts elsewhere, and one
// that walks the chain again after a wait starts there too.
func TestARequestThatNeedsHeavyKeepsItsRoom(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 2}
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	var others []string
	var e *Engine
	clk := hookClock{Clock: policytest.New(t0), onSleep: func() {
		p := e.newPlan(Request{Model: "gpt-6-astra"})
		first := p.start().Candidate.Model
		again := p.exhausted(p.chain[0], v(classify.Capacity, 0)).Candidate.Model
		others = append(others, first+" "+again)
	}}
	e = New(cfg, WithClock(clk), WithRand(func() float64 { return 0.5 }))
	heavy := Candidate{Provider: "openai", Upstream: "gpt-6-astra"}.Key()
	e.pacer.full(heavy) // heavy's pool showed room for one: it is under pressure
	if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("started at %s with heavy's one slot free and nobody needing it", st.Candidate.Model)
	}
	sends := 0
	send := func(context.Context, *Attempt) Result {
		if sends++; sends == 1 {
			return Result{Verdict: v(classify.Capacity, 0)}
		}
		return Result{Verdict: v(classify.OK, 0), Committed: true}
	}
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", MinTier: config.Heavy}, Send: send})
	if !out.Committed || sends != 2 {
		t.Fatalf("outcome %+v after %d sends", out, sends)
	}
	if len(others) == 0 || slices.ContainsFunc(others, func(s string) bool { return s != "gpt-6.1-sol gpt-6.1-sol" }) {
		t.Fatalf("while a heavy-only request waited between tries, others started at (first, again) %q", others)
	}
	// it is over: the room is anyone's again
	if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("started at %s after the heavy-only request ended", st.Candidate.Model)
	}
}

// A model whose pace rate limits slowed (16×: a gap of 16 s) holds a
// request that can go elsewhere no longer than an unslowed gap: it moves on
// at once, waiting nothing; a request that can use no other model waits
// for its turn.
func TestASlowedPaceSendsOnWhatCanGoElsewhere(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MinGap: config.Duration(time.Second), MaxConcurrency: 3}
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	e, clk := clocked(cfg, WithRand(func() float64 { return 0 }))
	astra := Candidate{Provider: "openai", Upstream: "gpt-6-astra", Model: "gpt-6-astra"}
	for range 4 {
		e.pacer.slowDown(rateKey(astra, ""))
	}
	ok := func(context.Context, *Attempt) Result { return Result{Verdict: v(classify.OK, 0), Committed: true} }
	cases := []struct {
		name    string
		req     Request
		route   string
		waitedS float64
	}{
		{"the first start waits nothing", Request{Model: "gpt-6-astra"}, "gpt-6-astra:ok", 0},
		{"the next, which may go lower, moves on", Request{Model: "gpt-6-astra"}, "gpt-6-astra:no_slot > gpt-6.1-sol:ok", 0},
		{"a heavy-only one waits for its turn", Request{Model: "gpt-6-astra", MinTier: config.Heavy}, "gpt-6-astra:ok", 16},
	}
	for _, c := range cases {
		t0 := clk.Now()
		out := e.Run(context.Background(), &Call{Request: c.req, Send: ok})
		if !out.Committed || out.Route != c.route {
			t.Fatalf("%s: route %q (%+v)", c.name, out.Route, out)
		}
		if got := clk.Now().Sub(t0).Seconds(); got != c.waitedS {
			t.Fatalf("%s: waited %gs, want %gs", c.name, got, c.waitedS)
		}
	}
}
