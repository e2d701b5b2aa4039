package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// sendFunc answers each attempt with what f says for its candidate.
func sendFunc(f func(a *Attempt) (classify.Class, int)) func(context.Context, *Attempt) Result {
	return func(_ context.Context, a *Attempt) Result {
		c, status := f(a)
		return Result{Verdict: classify.Verdict{Class: c, Message: string(c)}, Committed: c == classify.OK, Status: status}
	}
}

func TestNetworkFailures(t *testing.T) {
	resets := func(model string) func(context.Context, *Attempt) Result {
		return sendFunc(func(a *Attempt) (classify.Class, int) {
			if a.Candidate.Model == model {
				return classify.Network, 0
			}
			return classify.OK, 200
		})
	}
	t.Run("a model whose connections fail while its provider answers others: the next model", func(t *testing.T) {
		e, clk := clocked(config.Default())
		e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: resets("none")})
		clk.Advance(30 * time.Second)
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: resets("gpt-6-astra")})
		if !out.Committed || out.Route != "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network > gpt-6.1-sol:ok" {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("a provider that answered nothing for a minute: fails as network, never the next model", func(t *testing.T) {
		e, clk := clocked(config.Default())
		e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: resets("none")})
		clk.Advance(2 * time.Minute)
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: resets("gpt-6-astra")})
		if out.Committed || out.Verdict.Class != classify.Network || strings.Contains(out.Route, "sol") || !strings.Contains(out.Reason, "has answered nothing else for a minute") {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("a provider known down is refused at once, as network, until a probe gets through", func(t *testing.T) {
		e, clk := clocked(config.Default())
		rec := &recorder{}
		down := true
		send := sendFunc(func(a *Attempt) (classify.Class, int) {
			if down {
				return classify.Network, 0
			}
			return classify.OK, 200
		})
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: send, Events: rec})
		if out.Attempts != 4 || out.Verdict.Class != classify.Network {
			t.Fatalf("first request %+v", out)
		}
		before := clk.Now()
		out = e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6.1-sol"}, Send: send, Events: rec})
		if out.Attempts != 0 || out.Route != "gpt-6.1-sol:network" || out.Verdict.Class != classify.Network || !clk.Now().Equal(before) ||
			!strings.Contains(out.Reason, "openai is unreachable") {
			t.Fatalf("while down: %+v (clock moved %v)", out, clk.Now().Sub(before))
		}
		if len(rec.all()) != 4 {
			t.Fatalf("a refusal was logged: %d records", len(rec.all()))
		}
		clk.Advance(config.Default().Breaker.Cooldown.D())
		down = false
		out = e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6.1-sol"}, Send: send})
		if !out.Committed || out.Route != "gpt-6.1-sol:ok" {
			t.Fatalf("the probe after the hold: %+v", out)
		}
		if out = e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: send}); !out.Committed {
			t.Fatalf("after a probe got through: %+v", out)
		}
	})
	t.Run("a deployment whose connections fail spills to one at another provider, no tier step", func(t *testing.T) {
		e, _ := clocked(deployed())
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: sendFunc(func(a *Attempt) (classify.Class, int) {
			if a.Candidate.Deployment == "us" {
				return classify.Network, 0
			}
			return classify.OK, 200
		})})
		if !out.Committed || !strings.HasPrefix(out.Route, "gpt-6-astra@us:network > gpt-6-astra@us:network > gpt-6-astra@us:network > gpt-6-astra@us:network > gpt-6-astra@") {
			t.Fatalf("%+v", out)
		}
	})
}

func TestTimeoutsCountTowardTheBreaker(t *testing.T) {
	cfg := config.Default()
	e, _ := clocked(cfg)
	silent := sendFunc(func(a *Attempt) (classify.Class, int) {
		if a.Candidate.Model == "gpt-6-astra" {
			return classify.Timeout, 0
		}
		return classify.OK, 200
	})
	for range cfg.Breaker.Consecutive {
		if out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: silent}); out.Route != "gpt-6-astra:timeout > gpt-6.1-sol:ok" {
			t.Fatalf("route %q", out.Route)
		}
	}
	if out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: silent}); out.Route != "gpt-6-astra:breaker_open > gpt-6.1-sol:ok" {
		t.Fatalf("a silent model's breaker did not open: %q", out.Route)
	}
}

// The budget is the clock's: failed HTTP attempts count, so a slow 429 is
// not retried past it.
func TestBudgetCountsFailedAttempts(t *testing.T) {
	cfg := config.Default()
	cfg.Retry.Budget = config.Duration(10 * time.Second)
	e, clk := clocked(cfg)
	start := clk.Now()
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Watchdogs: true, ChargeFailures: true,
		Send: func(context.Context, *Attempt) Result {
			_ = clk.Sleep(context.Background(), 4*time.Second) // a slow answer: a 429 after 4s
			return Result{Verdict: classify.Verdict{Class: classify.RateLimit, Wait: time.Second}, Status: 429}
		}})
	if out.Committed || clk.Now().Sub(start) > 10*time.Second || out.Attempts != 2 {
		t.Fatalf("%+v after %v", out, clk.Now().Sub(start))
	}
}

// Pacing costs nothing while healthy: without pressure no gap and no
// limit; a capacity answer engages both for that model until pacing.relax
// passes quietly.
func TestPacingUnderPressure(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	e, clk := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	ok := answers(nil)
	before := clk.Now()
	for range 20 {
		if out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: ok}); out.Waited != 0 || !out.Committed {
			t.Fatalf("a healthy request waited: %+v", out)
		}
	}
	if !clk.Now().Equal(before) {
		t.Fatalf("20 healthy requests moved the clock %v", clk.Now().Sub(before))
	}
	// hold more slots than max_concurrency: no limit without pressure
	luna := e.Candidates(Request{Model: "gpt-6-luna"})[0]
	var holds []func()
	for range cfg.Pacing.MaxConcurrency + 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a limit would end it, not hang
		h, _, waited, err := e.pacer.acquire(ctx, luna.Key(), "", time.Time{})
		cancel()
		if err != nil || waited != 0 {
			t.Fatalf("%v %v", waited, err)
		}
		holds = append(holds, h)
	}
	for _, h := range holds {
		h()
	}
	// a capacity answer: the next starts are spaced
	e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna", NoFallback: true},
		Send: answers(map[string][]classify.Class{"gpt-6-luna": {classify.Capacity}})})
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: ok})
	if out.Waited == 0 {
		t.Fatalf("under pressure a start was not spaced: %+v", out)
	}
	clk.Advance(cfg.Pacing.Relax.D())
	for range 5 {
		if out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: ok}); out.Waited != 0 {
			t.Fatalf("after a quiet minute a request still waited: %+v", out)
		}
	}
	// batch work paces from the first request
	b, _ := clocked(cfg, ForBatchWork(), WithRand(func() float64 { return 0.5 }))
	b.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: ok})
	if out := b.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: ok}); out.Waited != 1250*time.Millisecond {
		t.Fatalf("batch work: the second start waited %v, want min_gap + half the jitter", out.Waited)
	}
}

// A model down for about a minute and then healthy, a request every 4 s:
// with the default probe schedule it is back in use within 10 s of healing,
// wherever healing falls between requests.
func TestAHealedModelIsBackWithinTenSeconds(t *testing.T) {
	for heal := 56 * time.Second; heal < 64*time.Second; heal += 500 * time.Millisecond {
		e, clk := clocked(config.Default())
		healed := clk.Now().Add(heal)
		send := sendFunc(func(a *Attempt) (classify.Class, int) {
			if a.Candidate.Model == "gpt-6-astra" && clk.Now().Before(healed) {
				return classify.Capacity, 529
			}
			return classify.OK, 200
		})
		var back time.Time
		for range 40 {
			out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: send})
			if out.Candidate.Model == "gpt-6-astra" && out.Committed && back.IsZero() {
				back = clk.Now()
			}
			clk.Advance(4 * time.Second)
		}
		if back.IsZero() || back.Sub(healed) > 10*time.Second {
			t.Fatalf("healed at %v, back in use %v later", heal, back.Sub(healed))
		}
	}
}

func TestUnknownModels(t *testing.T) {
	cfg := config.Default()
	cfg.Catalog = config.CatalogNone
	e, _ := clocked(cfg)
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gtp-6-astra", Type: "openai"}, Send: answers(nil)})
	if out.Committed || out.Attempts != 0 || out.Verdict.Class != classify.ModelNotFound || !strings.Contains(out.Reason, `model "gtp-6-astra" is not in the configuration`) {
		t.Fatalf("%+v", out)
	}
	yes := true
	cfg.PassthroughUnknown = &yes
	e, _ = clocked(cfg)
	if out := e.Run(context.Background(), &Call{Request: Request{Model: "my-finetune", Type: "openai"}, Send: answers(nil)}); !out.Committed {
		t.Fatalf("passthrough_unknown: %+v", out)
	}
}

// A retry that does not fit the budget is not the end of the request: the
// next model waits nothing.
func TestARetryThatDoesNotFitGoesOn(t *testing.T) {
	e, clk := clocked(config.Default())
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Watchdogs: true, ChargeFailures: true, Send: func(_ context.Context, a *Attempt) Result {
		switch a.Candidate.Model {
		case "gpt-6-astra":
			_ = clk.Sleep(context.Background(), 50*time.Second) // silent past the budget
			return Result{Verdict: classify.Verdict{Class: classify.Timeout}}
		case "gpt-6.1-sol":
			return Result{Verdict: classify.Verdict{Class: classify.ServerError}, Status: 500}
		}
		return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
	}})
	if !out.Committed || out.Route != "gpt-6-astra:timeout > gpt-6.1-sol:server_error > gpt-6-luna:ok" {
		t.Fatalf("%+v", out)
	}
	cfg := config.Default()
	cfg.Retry.TimeoutRetries = 1
	e, clk = clocked(cfg)
	out = e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Watchdogs: true, ChargeFailures: true, Send: func(_ context.Context, a *Attempt) Result {
		if a.Candidate.Model == "gpt-6-astra" {
			_ = clk.Sleep(context.Background(), 30*time.Second) // a retry would pass the 45s budget
			return Result{Verdict: classify.Verdict{Class: classify.Timeout}}
		}
		return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
	}})
	if !out.Committed || out.Route != "gpt-6-astra:timeout > gpt-6.1-sol:ok" {
		t.Fatalf("%+v", out)
	}
}

// The caller's own deadline is not the model's silence.
func TestTheCallersDeadlineIsNoEvidence(t *testing.T) {
	cfg := config.Default()
	e, _ := clocked(cfg)
	for range cfg.Breaker.Consecutive + 1 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		e.Run(ctx, &Call{Request: Request{Model: "gpt-6-astra"}, Watchdogs: true, ChargeFailures: true, Send: func(ctx context.Context, a *Attempt) Result {
			<-ctx.Done()
			return Result{Verdict: a.Failure(ctx.Err())}
		}})
		cancel()
	}
	if out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: answers(nil)}); out.Route != "gpt-6-astra:ok" {
		t.Fatalf("callers' deadlines opened the breaker: %q", out.Route)
	}
}

// With no first-token limit (the default) a stream that sends its headers
// and then nothing still ends, after timeouts.idle; opening events keep it
// alive meanwhile.
func TestSilenceAfterTheHeaders(t *testing.T) {
	cfg := config.Default()
	e, clk := clocked(cfg)
	done := make(chan Outcome)
	go func() {
		done <- e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna", NoFallback: true}, Stream: true, Watchdogs: true, ChargeFailures: true,
			Send: func(ctx context.Context, a *Attempt) Result {
				a.Headers(true)
				<-ctx.Done()
				return Result{Verdict: a.Failure(ctx.Err())}
			}})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilDue(ctx, cfg.Timeouts.Idle.D()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(cfg.Timeouts.Idle.D())
	select {
	case out := <-done:
		if out.Verdict.Class != classify.Timeout || !strings.Contains(out.Reason, "went silent for 2m0s (timeouts.idle) before its first output") {
			t.Fatalf("%+v", out)
		}
	case <-ctx.Done():
		t.Fatal("a stream silent after its headers never ended")
	}
}

// A probe that takes long does not keep its provider shut past a hold.
func TestASlowProbeDoesNotShutTheProvider(t *testing.T) {
	cfg := config.Default()
	e, clk := clocked(cfg)
	for range cfg.Retry.NetworkRetries + 1 {
		e.reach.observe("openai", classify.Verdict{Class: classify.Network}, 0, false)
	}
	if ok, _ := e.reach.allow("openai"); ok {
		t.Fatal("not down")
	}
	clk.Advance(cfg.Breaker.Cooldown.D())
	if ok, probe := e.reach.allow("openai"); !ok || !probe {
		t.Fatal("no probe after the hold")
	}
	if ok, _ := e.reach.allow("openai"); ok {
		t.Fatal("a second probe while the first is out")
	}
	// a request sent before the provider went down fails: the probe decides
	e.reach.observe("openai", classify.Verdict{Class: classify.Network}, 0, false)
	if ok, _ := e.reach.allow("openai"); ok {
		t.Fatal("a stale failure let a second probe out")
	}
	clk.Advance(cfg.Breaker.Cooldown.D())
	if ok, probe := e.reach.allow("openai"); !ok || !probe {
		t.Fatal("a probe out for a whole hold keeps the provider shut")
	}
}

// After a rate limit a request does not try the same model at the same key
// again through another deployment.
func TestARateLimitedKeyIsNotTriedAgain(t *testing.T) {
	cfg := deployed()
	cfg.Retry.RateLimitRetries = 0
	e, _ := clocked(cfg)
	for range 4 { // whichever deployment the balancer starts at
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: sendFunc(func(a *Attempt) (classify.Class, int) {
			if a.Candidate.Model == "gpt-6-astra" {
				return classify.RateLimit, 429
			}
			return classify.OK, 200
		})})
		if n := strings.Count(out.Route, "gpt-6-astra@"); n != 2 || !strings.HasSuffix(out.Route, "gpt-6.1-sol:ok") {
			t.Fatalf("route %q: one try per key (us and eu share one), then the next model", out.Route)
		}
	}
}

// An answer larger than spillway holds for a request (classify.TooLarge) is
// the upstream's, not the network's: never sent to the same model again;
// the next model takes the request, and with none left it fails naming why.
func TestAnAnswerTooLargeIsNotSentAgain(t *testing.T) {
	tooLarge := func(model string) func(context.Context, *Attempt) Result {
		return func(_ context.Context, a *Attempt) Result {
			if a.Candidate.Model == model || model == "" {
				return Result{Verdict: classify.Verdict{Class: classify.ServerError, Code: classify.TooLarge, Message: "an event " + classify.TooLargePhrase}, Status: 200}
			}
			return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
		}
	}
	e, _ := clocked(config.Default())
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: tooLarge("gpt-6-astra")})
	if !out.Committed || out.Route != "gpt-6-astra:server_error > gpt-6.1-sol:ok" {
		t.Fatalf("%+v", out)
	}
	out = e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: tooLarge("")})
	if out.Committed || out.Attempts != 3 || out.Verdict.Code != classify.TooLarge || !strings.Contains(out.Reason, "no other model is left") {
		t.Fatalf("%+v", out)
	}
}
