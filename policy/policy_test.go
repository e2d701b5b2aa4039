package policy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// fakeClock advances only when slept on.
type fakeClock struct {
	mu  sync.Mutex
	t   time.Time
	log []time.Duration
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.t = c.t.Add(d)
		c.log = append(c.log, d)
	}
	return ctx.Err()
}

func testEngine(t *testing.T, mut func(*config.Config)) *Engine {
	t.Helper()
	cfg := config.Default()
	cfg.Retry.Budget = config.Duration(45 * time.Second)
	cfg.Breaker.Failures = 3
	if mut != nil {
		mut(cfg)
	}
	return New(cfg, WithClock(&fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}), WithRand(func() float64 { return 0.5 }))
}

func v(c classify.Class, wait time.Duration) classify.Verdict {
	return classify.Verdict{Class: c, Wait: wait}
}

func TestPolicyTable(t *testing.T) {
	type want struct {
		action Action
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
			[]want{{Send, "gpt-6.1-sol", 0}, {Send, "gpt-6-luna", 0}, {Done, "gpt-6-luna", 0}}},
		{"capacity: exhausted chain backs off then walks again from the top", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.Capacity, 0), v(classify.Capacity, 0), v(classify.Capacity, 0), v(classify.Capacity, 0)},
			// backoff base 1s × rand 0.5 = 500ms for the first walk
			[]want{{Send, "gpt-6.1-sol", 0}, {Send, "gpt-6-luna", 0}, {Send, "gpt-6-astra", 500 * time.Millisecond}, {Send, "gpt-6.1-sol", 0}}},
		{"capacity: retry-after is a floor on the backoff", Request{Model: "gpt-6-luna"},
			nil,
			[]classify.Verdict{v(classify.Capacity, 7*time.Second)},
			[]want{{Send, "gpt-6-luna", 7 * time.Second}}},
		{"capacity never goes below the minimum tier", Request{Model: "gpt-6-astra", MinTier: config.Medium},
			nil,
			[]classify.Verdict{v(classify.Capacity, 0), v(classify.Capacity, 0)},
			[]want{{Send, "gpt-6.1-sol", 0}, {Send, "gpt-6-astra", 500 * time.Millisecond}}},
		{"no fallback stays on the model", Request{Model: "claude-opus-5-5", NoFallback: true},
			nil,
			[]classify.Verdict{v(classify.Capacity, 0)},
			[]want{{Send, "claude-opus-5-5", 500 * time.Millisecond}}},
		{"capacity fails when the budget is spent", Request{Model: "gpt-6-luna", Budget: 5 * time.Second},
			nil,
			[]classify.Verdict{v(classify.Capacity, 4*time.Second), v(classify.Capacity, 4*time.Second)},
			[]want{{Send, "gpt-6-luna", 4 * time.Second}, {Fail, "", 0}}},
		{"rate limit waits on the same model", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.RateLimit, 11*time.Second), v(classify.OK, 0)},
			[]want{{Send, "gpt-6-astra", 11 * time.Second}, {Done, "gpt-6-astra", 0}}},
		{"rate limit switches only when the wait exceeds the budget", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.RateLimit, 60*time.Second)},
			[]want{{Send, "gpt-6.1-sol", 0}}},
		{"rate limit without a hint backs off", Request{Model: "gpt-6-astra"},
			nil,
			[]classify.Verdict{v(classify.RateLimit, 0), v(classify.RateLimit, 0)},
			[]want{{Send, "gpt-6-astra", 500 * time.Millisecond}, {Send, "gpt-6-astra", time.Second}}},
		{"quota fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.Quota, time.Hour)}, []want{{Fail, "", 0}}},
		{"auth fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.Auth, 0)}, []want{{Fail, "", 0}}},
		{"bad request fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.BadRequest, 0)}, []want{{Fail, "", 0}}},
		{"content filter fails fast", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ContentFilter, 0)}, []want{{Fail, "", 0}}},
		{"model not found skips the model", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ModelNotFound, 0), v(classify.Capacity, 0), v(classify.Capacity, 0)},
			[]want{{Send, "gpt-6.1-sol", 0}, {Send, "gpt-6-luna", 0}, {Send, "gpt-6.1-sol", 500 * time.Millisecond}}},
		{"context length goes to a larger window", Request{Model: "gpt-6-astra"},
			func(c *config.Config) { c.Chains["codex"] = []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra"} },
			[]classify.Verdict{v(classify.ContextLength, 0)},
			[]want{{Send, "gpt-6.1-terra", 0}}},
		{"context length with no larger window fails", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ContextLength, 0)}, []want{{Fail, "", 0}}},
		{"server error: one short retry, then as capacity", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.ServerError, 0), v(classify.ServerError, 0)},
			[]want{{Send, "gpt-6-astra", 500 * time.Millisecond}, {Send, "gpt-6.1-sol", 0}}},
		{"network: fixed gap on the same model, never a switch", Request{Model: "gpt-6-astra"}, nil,
			[]classify.Verdict{v(classify.Network, 0), v(classify.Timeout, 0), v(classify.Network, 0), v(classify.Network, 0)},
			[]want{{Send, "gpt-6-astra", 2 * time.Second}, {Send, "gpt-6-astra", 2 * time.Second}, {Send, "gpt-6-astra", 2 * time.Second}, {Fail, "", 0}}},
		{"unknown model passes through as a chain of one", Request{Model: "my-finetune", Type: "openai"}, nil,
			[]classify.Verdict{v(classify.Capacity, 0)},
			[]want{{Send, "my-finetune", 500 * time.Millisecond}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := testEngine(t, c.mut)
			p := e.NewPlan(c.req)
			st := p.Start()
			if st.Action != Send || st.Candidate.Model != c.req.Model {
				t.Fatalf("start = %+v", st)
			}
			for i, verdict := range c.verdict {
				st = p.After(verdict)
				w := c.want[i]
				if st.Action != w.action || (w.model != "" && st.Candidate.Model != w.model) || (w.action == Send && st.Wait != w.wait) {
					t.Fatalf("after %s (#%d): got action %v model %s wait %v; want %v %s %v\nroute %s", verdict.Class, i+1, st.Action, st.Candidate.Model, st.Wait, w.action, w.model, w.wait, p.RouteString())
				}
				if st.Action == Fail && (!strings.Contains(st.Reason, string(verdict.Class)) || !strings.Contains(st.Reason, "tried ") || !strings.Contains(st.Reason, "waited")) {
					t.Fatalf("fail reason does not name classes, models and wait: %q", st.Reason)
				}
			}
		})
	}
}

func TestRouteString(t *testing.T) {
	e := testEngine(t, nil)
	p := e.NewPlan(Request{Model: "gpt-6-astra"})
	p.Start()
	p.After(v(classify.Capacity, 0))
	p.After(v(classify.OK, 0))
	if got := p.RouteString(); got != "gpt-6-astra:capacity > gpt-6.1-sol:ok" {
		t.Fatalf("route %q", got)
	}
}

func TestBackoffFullJitterCapped(t *testing.T) {
	cfg := config.Default()
	for _, r := range []float64{0, 0.25, 0.999} {
		e := New(cfg, WithRand(func() float64 { return r }))
		for n := 1; n < 12; n++ {
			ceil := min(time.Second<<(n-1), 20*time.Second)
			d := e.Backoff(n)
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
	e := New(cfg, WithRand(func() float64 { return 0.5 }))
	key := "openai/gpt-6-astra"
	for i := 0; i < 3; i++ {
		done, ok := e.Breakers.Allow(key)
		if !ok {
			t.Fatalf("closed breaker refused attempt %d", i)
		}
		done(v(classify.Capacity, 0))
	}
	if !e.Breakers.Open(key) {
		t.Fatal("breaker not open after 3 capacity errors")
	}
	if _, ok := e.Breakers.Allow(key); ok {
		t.Fatal("open breaker let a request through")
	}
	// while heavy is open, new plans start at medium
	if st := e.NewPlan(Request{Model: "gpt-6-astra"}).Start(); st.Candidate.Model != "gpt-6.1-sol" {
		t.Fatalf("start while heavy open = %s", st.Candidate.Model)
	}
	// gobreaker reads the wall clock: wait out the short cooldown
	time.Sleep(120 * time.Millisecond)
	probe, ok := e.Breakers.Allow(key)
	if !ok {
		t.Fatal("no probe after cooldown")
	}
	if _, ok := e.Breakers.Allow(key); ok {
		t.Fatal("a second request got through while the probe is out")
	}
	probe(v(classify.OK, 0))
	if e.Breakers.Open(key) || e.Breakers.States()[key] != "closed" {
		t.Fatalf("breaker not closed after a good probe: %v", e.Breakers.States())
	}
	// network errors neither open nor close it
	for i := 0; i < 10; i++ {
		done, _ := e.Breakers.Allow(key)
		done(v(classify.Network, 0))
	}
	if e.Breakers.Open(key) {
		t.Fatal("network errors opened the breaker")
	}
}

func TestPacerGapsAndConcurrency(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	cfg := config.Pacing{MinGap: config.Duration(500 * time.Millisecond), Jitter: config.Duration(time.Second), MaxConcurrency: 2}
	p := NewPacer(cfg, clk, func() float64 { return 0.5 })
	ctx := context.Background()
	var starts []time.Time
	var releases []func()
	for i := 0; i < 2; i++ {
		rel, _, err := p.Acquire(ctx, "m", "k", 0)
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, clk.Now())
		releases = append(releases, rel)
	}
	if gap := starts[1].Sub(starts[0]); gap != time.Second { // 500ms + 0.5×1s
		t.Fatalf("gap %v, want 1s", gap)
	}
	// a third must wait for a slot
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, _, err := p.Acquire(cctx, "m", "k", 0); err == nil {
		t.Fatal("third request got a slot beyond max_concurrency")
	}
	if _, _, err := p.Acquire(ctx, "m", "k", 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a bounded wait for a slot ended with %v", err)
	}
	releases[0]()
	if _, _, err := p.Acquire(ctx, "m", "k", 0); err != nil {
		t.Fatal(err)
	}
	// a rate limit slows the key
	p.SlowDown("m", "k")
	if p.Slowness("m", "k") != 2 || p.Slowness("m", "other") != 1 {
		t.Fatal("slowdown not per key")
	}
	p.Recover("m", "k")
	if p.Slowness("m", "k") != 1 {
		t.Fatal("recover did not restore the pace")
	}
}

func TestLadderAndExplicitModels(t *testing.T) {
	e := testEngine(t, nil)
	p := e.NewPlan(Request{Models: []string{"gpt-6-astra", "my-own-model"}, Model: "gpt-6-astra", Type: "openai",
		Ladder: []time.Duration{30 * time.Second, 2 * time.Minute}})
	if st := p.Start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatal(st)
	}
	steps := []struct {
		model string
		wait  time.Duration
	}{{"my-own-model", 0}, {"gpt-6-astra", 30 * time.Second}, {"my-own-model", 0}, {"gpt-6-astra", 2 * time.Minute}, {"my-own-model", 0}}
	for i, want := range steps {
		st := p.After(v(classify.Capacity, 0))
		if st.Action != Send || st.Candidate.Model != want.model || st.Wait != want.wait {
			t.Fatalf("step %d: %+v", i, st)
		}
	}
	st := p.After(v(classify.Capacity, 0))
	if st.Action != Fail || !strings.Contains(st.Reason, GlobalOutage) {
		t.Fatalf("after the last rung: %+v", st)
	}
	if p.Waited() != 150*time.Second {
		t.Fatalf("waited %v", p.Waited())
	}
}

func TestLadderRespectsTheWaitBudget(t *testing.T) {
	e := testEngine(t, nil)
	p := e.NewPlan(Request{Model: "gpt-6-luna", Budget: time.Minute, Ladder: []time.Duration{30 * time.Second, 2 * time.Minute}})
	p.Start()
	if st := p.After(v(classify.Capacity, 0)); st.Action != Send || st.Wait != 30*time.Second {
		t.Fatalf("first rung: %+v", st)
	}
	if st := p.After(v(classify.Capacity, 0)); st.Action != Fail || !strings.Contains(st.Reason, "wait budget") {
		t.Fatalf("second rung past --max-wait: %+v", st)
	}
	// a huge Retry-After cannot stretch a ladder without a budget past its total
	p = e.NewPlan(Request{Model: "gpt-6-luna", Ladder: []time.Duration{time.Second}})
	p.Start()
	if st := p.After(v(classify.Capacity, 24*time.Hour)); st.Action != Fail {
		t.Fatalf("a 24h wait was accepted: %+v", st)
	}
}

func TestBreakerCooldownDoublesWhileThePoolStaysFull(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(60 * time.Millisecond), MaxCooldown: config.Duration(150 * time.Millisecond)}
	e := New(cfg)
	key := "openai/gpt-6-astra"
	trip := func() {
		t.Helper()
		done, ok := e.Breakers.Allow(key)
		if !ok {
			t.Fatal("no request or probe allowed")
		}
		done(v(classify.Capacity, 0))
	}
	// waitProbe polls until a probe is allowed and returns how long the
	// breaker stayed shut, counted from the trip
	waitProbe := func(since time.Time) (time.Duration, func(classify.Verdict)) {
		t.Helper()
		for time.Since(since) < 2*time.Second {
			if done, ok := e.Breakers.Allow(key); ok {
				return time.Since(since), done
			}
			if !e.Breakers.Open(key) && e.Breakers.States()[key] != "half-open" {
				t.Fatalf("breaker neither open nor half-open: %v", e.Breakers.States())
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("no probe within 2s")
		return 0, nil
	}
	trip()
	t0 := time.Now()
	var shut []time.Duration
	for range 3 { // three failed probes: shut 60ms, then 120ms, then 150ms (capped)
		d, probe := waitProbe(t0)
		shut = append(shut, d)
		t0 = time.Now()
		probe(v(classify.Capacity, 0))
	}
	want := []time.Duration{60 * time.Millisecond, 120 * time.Millisecond, 150 * time.Millisecond}
	for i := range want {
		if shut[i] < want[i] || shut[i] > want[i]+80*time.Millisecond {
			t.Fatalf("shut for %v, want %v (each failed probe doubles the cooldown, capped at max_cooldown)", shut, want)
		}
	}
	// a probe that gets through closes the breaker and resets the cooldown
	d, probe := waitProbe(t0)
	if d < 150*time.Millisecond {
		t.Fatalf("probe after %v, before the capped cooldown", d)
	}
	probe(v(classify.OK, 0))
	if e.Breakers.Open(key) {
		t.Fatal("open after a good probe")
	}
	trip()
	t0 = time.Now()
	if d, _ := waitProbe(t0); d > 60*time.Millisecond+80*time.Millisecond {
		t.Fatalf("after a reset the first cooldown was %v, want 60ms", d)
	}
}

func TestPacerAdaptsToTheRoomLeft(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	p := NewPacer(config.Pacing{MaxConcurrency: 4}, clk, func() float64 { return 0 })
	ctx := context.Background()
	const m = "openai/gpt-6.1-sol"
	// capacity answers halve the limit, down to one
	for _, want := range []int{2, 1, 1} {
		p.Full(m)
		if got := p.Limit(m); got != want {
			t.Fatalf("limit %d after a capacity answer, want %d", got, want)
		}
	}
	if p.Crowded(m) {
		t.Fatal("crowded with nothing in flight")
	}
	rel, _, err := p.Acquire(ctx, m, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Crowded(m) {
		t.Fatal("one in flight at a limit of one: the room is taken")
	}
	// a second waits; four answers raise the limit to two and let it in
	got := make(chan error, 1)
	go func() { _, _, err := p.Acquire(ctx, m, "k", time.Second); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("a second request went in at a limit of one (%v)", err)
	case <-time.After(30 * time.Millisecond):
	}
	for range 4 {
		p.Served(m)
	}
	if err := <-got; err != nil || p.Limit(m) != 2 {
		t.Fatalf("after four answers: %v, limit %d", err, p.Limit(m))
	}
	rel()
	// never above the configured concurrency, and not crowded at it
	for range 40 {
		p.Served(m)
	}
	if p.Limit(m) != 4 {
		t.Fatalf("limit %d, want the configured 4", p.Limit(m))
	}
}

func TestPlansGoAroundACrowdedModel(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 2}
	e := New(cfg)
	heavy := Candidate{Provider: "openai", Upstream: "gpt-6-astra"}.Key()
	e.Pacer.Full(heavy) // the pool showed room for one
	rel, _, err := e.Pacer.Acquire(context.Background(), heavy, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st := e.NewPlan(Request{Model: "gpt-6-astra"}).Start(); st.Candidate.Model != "gpt-6.1-sol" {
		t.Fatalf("started at %s while heavy's one slot is taken", st.Candidate.Model)
	}
	// a request that may only use heavy waits for it instead
	if st := e.NewPlan(Request{Model: "gpt-6-astra", MinTier: config.Heavy}).Start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("a heavy-only request started at %s", st.Candidate.Model)
	}
	rel()
	if st := e.NewPlan(Request{Model: "gpt-6-astra"}).Start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("started at %s with heavy's slot free", st.Candidate.Model)
	}
	// the engine feeds the limit from the model's answers
	done, _ := e.Allow(heavy)
	done(v(classify.OK, 0))
	done2, _ := e.Allow(heavy)
	done2(v(classify.Capacity, 0))
	if e.Pacer.Limit(heavy) != 1 {
		t.Fatalf("limit %d after a capacity answer", e.Pacer.Limit(heavy))
	}
}

func TestProbeWaitFollowsTheBreakers(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute), MaxCooldown: config.Duration(time.Minute)}
	e := New(cfg)
	heavyOnly := Request{Model: "gpt-6-astra", MinTier: config.Heavy}
	if w := e.ProbeWait(heavyOnly); w != 0 {
		t.Fatalf("probe wait %v with every breaker closed", w)
	}
	done, _ := e.Allow("openai/gpt-6-astra")
	done(v(classify.Capacity, 0))
	if w := e.ProbeWait(heavyOnly); w <= 50*time.Second || w > time.Minute {
		t.Fatalf("probe wait %v, want about the minute's cooldown", w)
	}
	// a request that may use medium, whose breaker is closed, can go now
	if w := e.ProbeWait(Request{Model: "gpt-6-astra"}); w != 0 {
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
		done, ok := e.Allow(key)
		if !ok {
			t.Fatalf("refused before %s", c)
		}
		done(v(c, 0))
	}
	// capacity answers with answers between: a busy pool, not a full one
	for _, c := range []classify.Class{classify.Capacity, classify.OK, classify.Capacity, classify.OK} {
		answer(c)
	}
	if e.Breakers.Open(key) {
		t.Fatal("open after capacity answers that had answers between them")
	}
	answer(classify.Capacity)
	answer(classify.Capacity)
	if !e.Breakers.Open(key) {
		t.Fatal("still closed after two capacity answers in a row")
	}
}

func TestAHeavyOnlyWaitReservesHeavysRoom(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 2}
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	e := New(cfg, WithRand(func() float64 { return 0.5 }))
	heavy := Candidate{Provider: "openai", Upstream: "gpt-6-astra"}.Key()
	// a heavy-only request finds heavy full and waits to try again
	p := e.NewPlan(Request{Model: "gpt-6-astra", MinTier: config.Heavy})
	p.Start()
	e.Pacer.Full(heavy)
	if st := p.After(v(classify.Capacity, 0)); st.Action != Send || st.Wait <= 0 || st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("step %+v", st)
	}
	// meanwhile a request that may go lower leaves heavy's scarce room to it
	if st := e.NewPlan(Request{Model: "gpt-6-astra"}).Start(); st.Candidate.Model != "gpt-6.1-sol" {
		t.Fatalf("started at %s while a heavy-only request waits for heavy", st.Candidate.Model)
	}
	// with room back to the configured concurrency nothing is reserved
	for range 8 {
		e.Pacer.Served(heavy)
	}
	if st := e.NewPlan(Request{Model: "gpt-6-astra"}).Start(); st.Candidate.Model != "gpt-6-astra" {
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
	e.Pacer.Full(heavy)
	rel, _, err := e.Pacer.Acquire(context.Background(), heavy, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	// 200k tokens fit only heavy's 272k window: wait for heavy rather than
	// send it where it cannot fit
	if st := e.NewPlan(Request{Model: "gpt-6-astra", InputTokens: 200_000}).Start(); st.Candidate.Model != "gpt-6-astra" {
		t.Fatalf("a request only heavy can hold started at %s", st.Candidate.Model)
	}
}

func TestProbeWaitWhileTheProbeIsOut(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(40 * time.Millisecond), MaxCooldown: config.Duration(40 * time.Millisecond)}
	e := New(cfg)
	heavyOnly := Request{Model: "gpt-6-astra", MinTier: config.Heavy}
	done, _ := e.Allow("openai/gpt-6-astra")
	done(v(classify.Capacity, 0))
	time.Sleep(60 * time.Millisecond)
	probe, ok := e.Allow("openai/gpt-6-astra")
	if !ok {
		t.Fatal("no probe after the cooldown")
	}
	// the probe is out: not closed, so a queue task must not sleep a rung
	if w := e.ProbeWait(heavyOnly); w <= 0 || w > 40*time.Millisecond {
		t.Fatalf("probe wait %v while the probe is out", w)
	}
	probe(v(classify.OK, 0))
	if w := e.ProbeWait(heavyOnly); w != 0 {
		t.Fatalf("probe wait %v after a good probe", w)
	}
}
