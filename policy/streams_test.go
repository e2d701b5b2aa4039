package policy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy/policytest"
)

// hedged is the default configuration with gpt-6-astra given a first-token
// limit of 10s and a hedge.
func hedged() *config.Config {
	cfg := config.Default()
	m := cfg.Models["gpt-6-astra"]
	m.FirstTokenTimeout, m.Hedge = config.Duration(10*time.Second), true
	cfg.Models["gpt-6-astra"] = m
	return cfg
}

func TestHedge(t *testing.T) {
	ok := Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
	// stream sends headers, then waits for output: at once for the models
	// in fast, on release for the others, until the attempt is given up
	stream := func(fast map[string]bool, release <-chan struct{}) func(context.Context, *Attempt) Result {
		return func(ctx context.Context, a *Attempt) Result {
			a.Headers(true)
			if !fast[a.Candidate.Model] {
				select {
				case <-release:
				case <-ctx.Done():
					return Result{Verdict: a.Failure(ctx.Err()), Status: 200}
				}
			}
			if !a.Output() {
				return Result{Verdict: a.Failure(context.Canceled), Status: 200}
			}
			return ok
		}
	}
	// run sends a stream to gpt-6-astra, whose first-token limit it then
	// passes; prep, when set, runs first, then is called after it.
	run := func(t *testing.T, cfg *config.Config, send func(context.Context, *Attempt) Result, then func(*policytest.Clock), prep ...func(*Engine, *recorder)) (Outcome, *recorder) {
		t.Helper()
		e, clk := clocked(cfg)
		rec := &recorder{}
		for _, p := range prep {
			p(e, rec)
		}
		done := make(chan Outcome)
		go func() {
			done <- e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Stream: true, Watchdogs: true, ChargeFailures: true, Send: send, Events: rec})
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := clk.BlockUntilDue(ctx, 10*time.Second); err != nil {
			t.Fatal("the first-token watchdog was never armed")
		}
		clk.Advance(10 * time.Second)
		if then != nil {
			then(clk)
		}
		select {
		case out := <-done:
			return out, rec
		case <-ctx.Done():
			t.Fatal("the request never ended")
		}
		return Outcome{}, nil
	}
	t.Run("without a hedge, the first-token limit moves to the next model", func(t *testing.T) {
		cfg := hedged()
		m := cfg.Models["gpt-6-astra"]
		m.Hedge = false
		cfg.Models["gpt-6-astra"] = m
		out, _ := run(t, cfg, stream(map[string]bool{"gpt-6.1-sol": true}, nil), nil)
		if !out.Committed || out.Route != "gpt-6-astra:timeout > gpt-6.1-sol:ok" {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("the hedge answers first: the slow model is given up, both count", func(t *testing.T) {
		out, rec := run(t, hedged(), stream(map[string]bool{"gpt-6.1-sol": true}, nil), nil)
		if !out.Committed || out.Candidate.Model != "gpt-6.1-sol" || out.Route != "gpt-6-astra:hedge_lost > gpt-6.1-sol:ok" || out.Attempts != 2 {
			t.Fatalf("%+v", out)
		}
		byModel := map[string]string{}
		for _, r := range rec.all() {
			byModel[r.Model] = r.Class + " from " + r.FallbackFrom + fmt.Sprintf(" lost %v ended %v", r.HedgeLost, r.CallerEnded)
		}
		if len(rec.all()) != 2 || byModel["gpt-6-astra"] != "unknown from  lost true ended false" || byModel["gpt-6.1-sol"] != "ok from gpt-6-astra lost false ended false" {
			t.Fatalf("records %+v", rec.all())
		}
	})
	t.Run("the slow model answers first: the hedge is given up", func(t *testing.T) {
		release := make(chan struct{})
		slow := stream(nil, release)
		out, rec := run(t, hedged(), func(ctx context.Context, a *Attempt) Result {
			if a.Candidate.Model == "gpt-6.1-sol" { // the hedge started: now the first model answers
				a.Headers(true)
				close(release)
				<-ctx.Done()
				return Result{Verdict: a.Failure(ctx.Err()), Status: 200}
			}
			return slow(ctx, a)
		}, nil)
		if !out.Committed || out.Candidate.Model != "gpt-6-astra" || out.Route != "gpt-6.1-sol:hedge_lost > gpt-6-astra:ok" {
			t.Fatalf("%+v", out)
		}
		if len(rec.all()) != 2 {
			t.Fatalf("records %+v", rec.all())
		}
	})
	t.Run("a hedge that fails on its own is in the route, in the order things happened", func(t *testing.T) {
		hedgeDone := make(chan struct{})
		out, rec := run(t, hedged(), func(ctx context.Context, a *Attempt) Result {
			a.Headers(true)
			if a.Candidate.Model == "gpt-6.1-sol" {
				return Result{Verdict: classify.Verdict{Class: classify.ServerError, Message: "upstream 500"}, Status: 500}
			}
			select { // the slow model answers once the hedge's attempt is over
			case <-hedgeDone:
			case <-ctx.Done():
				return Result{Verdict: a.Failure(ctx.Err()), Status: 200}
			}
			if !a.Output() {
				return Result{Verdict: a.Failure(context.Canceled), Status: 200}
			}
			return ok
		}, nil, func(_ *Engine, rec *recorder) {
			rec.hook = func(r events.Record) {
				if r.Model == "gpt-6.1-sol" {
					close(hedgeDone)
				}
			}
		})
		if !out.Committed || out.Candidate.Model != "gpt-6-astra" || out.Route != "gpt-6.1-sol:server_error > gpt-6-astra:ok" || out.Attempts != 2 || len(rec.all()) != 2 {
			t.Fatalf("%+v\nrecords %+v", out, rec.all())
		}
	})
	t.Run("a hedge still waiting for a slot never goes once the slow model answers", func(t *testing.T) {
		cfg := hedged()
		cfg.Pacing.When, cfg.Pacing.MaxConcurrency, cfg.Pacing.MinGap, cfg.Pacing.Jitter = config.PaceAlways, 1, 0, 0
		var mu sync.Mutex
		solSends := 0
		release, held, busy := make(chan struct{}), make(chan struct{}), make(chan struct{})
		defer close(busy)
		slow := stream(nil, release)
		out, rec := run(t, cfg, func(ctx context.Context, a *Attempt) Result {
			if a.Candidate.Model != "gpt-6.1-sol" {
				return slow(ctx, a)
			}
			mu.Lock()
			solSends++
			mu.Unlock()
			close(held) // the other request's, holding gpt-6.1-sol's one slot
			<-busy
			return ok
		}, func(clk *policytest.Clock) {
			// the hedge waits for its slot (its budget's timer beside the
			// slow attempt's watchdog): now the slow model answers
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := clk.BlockUntil(ctx, 2); err != nil {
				t.Error("the hedge never waited for a slot")
			}
			close(release)
		}, func(e *Engine, _ *recorder) {
			go e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6.1-sol"}, Stream: true, Send: func(ctx context.Context, a *Attempt) Result {
				mu.Lock()
				solSends++
				mu.Unlock()
				close(held)
				<-busy
				return ok
			}})
			<-held
		})
		mu.Lock()
		defer mu.Unlock()
		if !out.Committed || out.Route != "gpt-6-astra:ok" || out.Attempts != 1 || len(rec.all()) != 1 || solSends != 1 {
			t.Fatalf("%+v, %d sends to gpt-6.1-sol\nrecords %+v", out, solSends, rec.all())
		}
	})
}

func TestContinuation(t *testing.T) {
	// send: the first attempt to each model in breaks breaks after output
	// with that class (Resume: what it delivered); every other answers
	send := func(breaks map[string]classify.Class, seen *[]string) func(context.Context, *Attempt) Result {
		return func(_ context.Context, a *Attempt) Result {
			prefix := ""
			if a.Resume != nil {
				prefix = a.Resume.(string)
			}
			*seen = append(*seen, a.Candidate.Model+"<"+prefix)
			if c, ok := breaks[a.Candidate.Model]; ok {
				delete(breaks, a.Candidate.Model)
				if c == classify.BadRequest {
					return Result{Verdict: classify.Verdict{Class: c, Code: classify.PrefillRefused, Message: "This model does not support assistant message prefill."}, Status: 400}
				}
				a.Output()
				return Result{Verdict: classify.Verdict{Class: c}, Committed: true, Status: 200, Resume: prefix + "Hello wor"}
			}
			a.Output()
			return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
		}
	}
	for _, c := range []struct {
		name     string
		mut      func(*config.Config)
		breaks   map[string]classify.Class
		route    string
		sent     string
		finished bool
	}{
		{"a cut is continued on the same model, from what the caller has", nil,
			map[string]classify.Class{"claude-opus-5-5": classify.Network},
			"claude-opus-5-5:network > claude-opus-5-5:ok", "claude-opus-5-5< claude-opus-5-5<Hello wor", true},
		{"an overload mid-answer is continued on the next model", nil,
			map[string]classify.Class{"claude-opus-5-5": classify.Capacity},
			"claude-opus-5-5:capacity > claude-sonnet-5-5:ok", "claude-opus-5-5< claude-sonnet-5-5<Hello wor", true},
		{"a model with prefill: false is never sent one", func(c *config.Config) {
			no := false
			m := c.Models["claude-opus-5-5"]
			m.Prefill = &no
			c.Models["claude-opus-5-5"] = m
		}, map[string]classify.Class{"claude-opus-5-5": classify.Network},
			"claude-opus-5-5:network > claude-sonnet-5-5:ok", "claude-opus-5-5< claude-sonnet-5-5<Hello wor", true},
		{"a model that refuses a prefill is passed over", nil,
			map[string]classify.Class{"claude-opus-5-5": classify.Capacity, "claude-sonnet-5-5": classify.BadRequest},
			"claude-opus-5-5:capacity > claude-sonnet-5-5:bad_request > claude-haiku-5-5:ok", "claude-opus-5-5< claude-sonnet-5-5<Hello wor claude-haiku-5-5<Hello wor", true},
		{"no model left to continue on: the front end ends the answer", func(c *config.Config) {
			no := false
			for _, n := range []string{"claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} {
				m := c.Models[n]
				m.Prefill = &no
				c.Models[n] = m
			}
		}, map[string]classify.Class{"claude-opus-5-5": classify.Network},
			"claude-opus-5-5:network", "claude-opus-5-5<", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			if c.mut != nil {
				c.mut(cfg)
			}
			e, _ := clocked(cfg)
			var seen []string
			out := e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5"}, Stream: true, Send: send(c.breaks, &seen)})
			if !out.Committed || out.Route != c.route || out.Unfinished == c.finished || joinSpace(seen) != c.sent {
				t.Fatalf("%+v\nsent %q", out, joinSpace(seen))
			}
		})
	}
	t.Run("a refused prefill is remembered; other wire formats are never continued", func(t *testing.T) {
		e, _ := clocked(config.Default())
		var seen []string
		out := e.Run(context.Background(), &Call{Request: Request{Model: "claude-sonnet-5-5"}, Stream: true,
			Send: send(map[string]classify.Class{"claude-sonnet-5-5": classify.Capacity, "claude-haiku-5-5": classify.BadRequest}, &seen)})
		if !out.Unfinished || out.Route != "claude-sonnet-5-5:capacity > claude-haiku-5-5:bad_request" {
			t.Fatalf("%+v", out)
		}
		if e.prefills(Candidate{Model: "claude-haiku-5-5", Format: config.Anthropic}) {
			t.Fatal("haiku's refusal was not remembered")
		}
		if e.prefills(Candidate{Model: "gpt-6-astra", Format: config.OpenAI}) {
			t.Fatal("an OpenAI model takes a continuation")
		}
	})
}

func joinSpace(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
