package fleet_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// pair is two engines of one fleet on a memory store and one fake clock.
func pair(t *testing.T, mut func(*config.Config)) (a, b *policy.Engine, na, nb *fleet.Node, clk *policytest.Clock, store *fleet.MemoryStore) {
	t.Helper()
	cfg := config.Default()
	mut(cfg)
	clk = policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	store = fleet.NewMemoryStore(clk)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	na = fleet.NewNode(ctx, store, "a", clk, log)
	nb = fleet.NewNode(ctx, store, "b", clk, log)
	a = policy.New(cfg, policy.WithClock(clk), policy.WithFleet(na))
	b = policy.New(cfg, policy.WithClock(clk), policy.WithFleet(nb))
	return a, b, na, nb, clk, store
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(time.Millisecond) // another goroutine delivers: polling, not timing
	}
}

func answer(class classify.Class) func(context.Context, *policy.Attempt) policy.Result {
	return func(context.Context, *policy.Attempt) policy.Result {
		return policy.Result{Verdict: classify.Verdict{Class: class}, Committed: class == classify.OK, Status: 200}
	}
}

// While paced, two engines of a fleet keep one lane's pace and
// concurrency together: starts to the model are pacing.min_gap apart
// across both, and no more are in flight at once than max_concurrency.
func TestFleetPacesTogether(t *testing.T) {
	a, b, _, _, _, store := pair(t, func(c *config.Config) {
		c.Pacing = config.Pacing{MinGap: config.Duration(time.Second), MaxConcurrency: 1, When: config.PaceAlways}
		c.Retry.Budget = config.Duration(time.Hour)
	})
	var inflight, peak, sent atomic.Int32
	send := func(_ context.Context, at *policy.Attempt) policy.Result {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		sent.Add(1)
		return policy.Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		e := []*policy.Engine{a, b}[i%2]
		wg.Go(func() {
			out := e.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-luna", MinTier: "light"}, Send: send})
			if !out.Committed || out.Candidate.Model != "gpt-6-luna" {
				t.Errorf("request %d: %+v", i, out)
			}
		})
	}
	wg.Wait()
	starts := store.Starts("openai/gpt-6-luna")
	if len(starts) != int(sent.Load()) {
		t.Fatalf("%d requests sent, %d fleet turns granted: every paced start takes one", sent.Load(), len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < time.Second {
			t.Fatalf("starts %d and %d were %v apart across the fleet, want ≥ 1s: %v", i-1, i, gap, starts)
		}
	}
	if peak.Load() > 1 {
		t.Fatalf("%d requests in flight at once across the fleet, want ≤ 1", peak.Load())
	}
}

// A capacity answer through A opens B's breaker; when both are half-open
// only one probe goes out across the fleet, and its success closes both.
//
// The capacity answer also puts the lane under pressure (paced, its limit
// halved) in both processes. With the default max_concurrency (3, halved
// to 1) A's probe would hold the lane's one fleet-wide slot, and B's
// request would wait for it, polling on the fake clock: time runs on at
// each poll, past the probe token's lease (30 s) and, as the renewals run
// behind the polls, past A's slot lease (15 s), and B then probes
// rightly, the token having lapsed. Four halve to two: B's request gets
// the other slot at once, and only the probe token keeps it from astra.
func TestFleetBreakersAndProbe(t *testing.T) {
	a, b, na, nb, clk, _ := pair(t, func(c *config.Config) {
		c.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(10 * time.Second), MaxCooldown: config.Duration(10 * time.Second)}
		c.Pacing.MaxConcurrency = 4
	})
	key := "openai/gpt-6-astra"
	out := a.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: func(ctx context.Context, at *policy.Attempt) policy.Result {
		if at.Candidate.Model == "gpt-6-astra" {
			return answer(classify.Capacity)(ctx, at)
		}
		return answer(classify.OK)(ctx, at)
	}})
	if !out.Committed {
		t.Fatalf("A: %+v", out)
	}
	eventually(t, "B's breaker opens from A's evidence", func() bool { return b.BreakerStates()[key] == "open" })
	// A counts what it published once the store took it, which may be
	// after B was handed it
	eventually(t, "A counts the evidence it published", func() bool { return na.Sent() >= 1 })
	if nb.Received() != 1 || na.Sent() != 1 {
		t.Fatalf("evidence: A sent %d, B received %d", na.Sent(), nb.Received())
	}
	clk.Advance(10 * time.Second) // both half-open
	probing, finish := make(chan struct{}), make(chan struct{})
	var probeA []string
	probed := make(chan policy.Outcome, 1)
	go func() {
		probed <- a.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: func(ctx context.Context, at *policy.Attempt) policy.Result {
			probeA = append(probeA, at.Candidate.Model)
			if len(probeA) == 1 {
				close(probing)
				<-finish
			}
			return answer(classify.OK)(ctx, at)
		}})
	}()
	<-probing
	var sentB []string
	out = b.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: func(ctx context.Context, at *policy.Attempt) policy.Result {
		sentB = append(sentB, at.Candidate.Model)
		return answer(classify.OK)(ctx, at)
	}})
	if slices.Contains(sentB, "gpt-6-astra") || !out.Committed {
		t.Fatalf("B probed astra while A's probe was out: sent %v, route %s", sentB, out.Route)
	}
	if !strings.HasPrefix(out.Route, "gpt-6-astra:"+policy.BreakerOpen+" > ") {
		t.Fatalf("B's request: route %s, want astra refused by the fleet's probe token first", out.Route)
	}
	close(finish)
	if pa := <-probed; !pa.Committed || pa.Route != "gpt-6-astra:ok" || len(probeA) != 1 {
		t.Fatalf("A's probe: sent %v, route %s", probeA, pa.Route)
	}
	eventually(t, "A's probe closes B's breaker", func() bool { return b.BreakerStates()[key] == "closed" })
	st := nb.Status()["seen"].(map[string]map[string]fleet.Seen)
	if s := st[key]["a"]; s.Count != 2 || s.Class != "ok (probe)" {
		t.Fatalf("B's view of what A saw on %s: %+v", key, st[key])
	}
}

// A probe that finds the pool still full opens every process's breaker
// again: after A's failed probe, B does not send a probe of its own into
// the full pool.
func TestFleetFailedProbeHoldsEveryone(t *testing.T) {
	a, b, _, _, clk, _ := pair(t, func(c *config.Config) {
		c.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(10 * time.Second), MaxCooldown: config.Duration(time.Minute)}
	})
	key := "openai/gpt-6-astra"
	full := func(ctx context.Context, at *policy.Attempt) policy.Result {
		if at.Candidate.Model == "gpt-6-astra" {
			return answer(classify.Capacity)(ctx, at)
		}
		return answer(classify.OK)(ctx, at)
	}
	a.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: full})
	eventually(t, "B's breaker opens", func() bool { return b.BreakerStates()[key] == "open" })
	clk.Advance(10 * time.Second) // both half-open
	out := a.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: full})
	if !strings.HasPrefix(out.Route, "gpt-6-astra:capacity") {
		t.Fatalf("A's probe: route %s", out.Route)
	}
	eventually(t, "B's breaker opens again on A's failed probe", func() bool { return b.BreakerStates()[key] == "open" })
	var sentB []string
	b.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: func(ctx context.Context, at *policy.Attempt) policy.Result {
		sentB = append(sentB, at.Candidate.Model)
		return answer(classify.OK)(ctx, at)
	}})
	if slices.Contains(sentB, "gpt-6-astra") {
		t.Fatalf("B probed the full pool right after A's probe failed: %v", sentB)
	}
	clk.Advance(10 * time.Second) // the lengthened hold (20 s) is not over
	if b.BreakerStates()[key] != "open" {
		t.Fatalf("B's breaker is %s 10 s into the lengthened hold", b.BreakerStates()[key])
	}
}
