package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// overflowConfig: chain claude overflows into claude-b, whose models are
// on a provider with spillway's own key (heavy opus-b, medium sonnet-b), and
// claude-b into claude-c (never reached from claude: not transitive).
func overflowConfig(onLimit string) *config.Config {
	cfg := config.Default()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	cfg.Providers["anthropic-b"] = config.Provider{Type: "anthropic", BaseURL: "https://b.example", Auth: "key", APIKey: config.Secret{Ref: "env:B", Value: "b-key"}}
	cfg.Providers["anthropic-open"] = config.Provider{Type: "anthropic", BaseURL: "https://open.example", Auth: "passthrough"}
	cfg.Models["claude-opus-5-5-b"] = config.Model{Provider: "anthropic-b", Tier: config.Heavy, Upstream: "claude-opus-5-5"}
	cfg.Models["claude-sonnet-5-5-b"] = config.Model{Provider: "anthropic-b", Tier: config.Medium, Upstream: "claude-sonnet-5-5"}
	cfg.Models["claude-haiku-5-5-open"] = config.Model{Provider: "anthropic-open", Tier: config.Light, Upstream: "claude-haiku-5-5"}
	cfg.Models["claude-haiku-5-5-c"] = config.Model{Provider: "anthropic-b", Tier: config.Light, Upstream: "claude-haiku-5-5"}
	cfg.Chains["claude-b"] = []string{"claude-opus-5-5-b", "claude-sonnet-5-5-b", "claude-haiku-5-5-open"}
	cfg.Chains["claude-c"] = []string{"claude-haiku-5-5-c"}
	cfg.ChainRules = map[string]config.ChainRules{"claude": {Overflow: "claude-b", OnUsageLimit: onLimit}, "claude-b": {Overflow: "claude-c"}}
	return cfg
}

func TestOverflow(t *testing.T) {
	full := func(models ...string) map[string][]classify.Class {
		m := map[string][]classify.Class{}
		for _, n := range models {
			m[n] = []classify.Class{classify.Capacity, classify.Capacity, classify.Capacity, classify.Capacity}
		}
		return m
	}
	limited := func(m map[string][]classify.Class, models ...string) map[string][]classify.Class {
		for _, n := range models {
			m[n] = []classify.Class{classify.UsageLimit}
		}
		return m
	}
	cases := []struct {
		name    string
		onLimit string
		req     Request
		answers map[string][]classify.Class
		route   string
		waited  bool
		ok      bool
	}{
		{"one walk at capacity: the overflow chain next, before any backoff, from the requested tier", "", Request{Model: "claude-opus-5-5", Type: "anthropic"},
			full("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"),
			"claude-opus-5-5:capacity > claude-sonnet-5-5:capacity > claude-haiku-5-5:capacity > claude-opus-5-5-b:ok", false, true},
		{"never a pricier tier than asked: a medium request enters at the medium model", "", Request{Model: "claude-sonnet-5-5", Type: "anthropic"},
			full("claude-sonnet-5-5", "claude-haiku-5-5"),
			"claude-sonnet-5-5:capacity > claude-haiku-5-5:capacity > claude-sonnet-5-5-b:ok", false, true},
		{"nothing below the minimum tier", "", Request{Model: "claude-opus-5-5", Type: "anthropic", MinTier: config.Heavy, Budget: time.Second},
			full("claude-opus-5-5", "claude-opus-5-5-b"),
			"claude-opus-5-5:capacity > claude-opus-5-5-b:capacity >", true, false},
		{"not transitive: the overflow chain's own overflow is never walked", "", Request{Model: "claude-opus-5-5", Type: "anthropic", Budget: time.Second},
			full("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-opus-5-5-b", "claude-sonnet-5-5-b", "claude-haiku-5-5-open"),
			"", true, false},
		{"a usage limit, on_usage_limit: fail: passed on after one attempt", "fail", Request{Model: "claude-opus-5-5", Type: "anthropic"},
			limited(map[string][]classify.Class{}, "claude-opus-5-5"),
			"claude-opus-5-5:usage_limit", false, false},
		{"a usage limit, on_usage_limit: overflow: none of the account's models, the overflow chain's with spillway's own key", "overflow", Request{Model: "claude-opus-5-5", Type: "anthropic"},
			limited(map[string][]classify.Class{}, "claude-opus-5-5"),
			"claude-opus-5-5:usage_limit > claude-opus-5-5-b:ok", false, true},
		{"a usage limit there too: none of that account's models either, and never a passthrough provider (the caller's credentials are for its own)", "overflow", Request{Model: "claude-opus-5-5", Type: "anthropic"},
			limited(map[string][]classify.Class{}, "claude-opus-5-5", "claude-opus-5-5-b"),
			"claude-opus-5-5:usage_limit > claude-opus-5-5-b:usage_limit", false, false},
		{"a sign-in's usage limit never overflows", "overflow", Request{Model: "claude-opus-5-5", Type: "anthropic", Via: "chatgpt"},
			limited(map[string][]classify.Class{}, "claude-opus-5-5"),
			"claude-opus-5-5:usage_limit", false, false},
		{"no overflow for a request that names its models", "", Request{Model: "claude-opus-5-5", Type: "anthropic", Models: []string{"claude-opus-5-5"}, Budget: time.Second},
			full("claude-opus-5-5"),
			"", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := clocked(overflowConfig(c.onLimit))
			out := e.Run(context.Background(), &Call{Request: c.req, Send: answers(c.answers)})
			if c.route != "" && out.Route != c.route && !(c.route[len(c.route)-1] == '>' && len(out.Route) > len(c.route) && out.Route[:len(c.route)] == c.route) {
				t.Fatalf("route %q, want %q", out.Route, c.route)
			}
			if c.route == "" {
				// never claude-c (claude-b's own overflow), never the
				// passthrough provider the caller's key is not for, and
				// none of claude-b for a request that names its models
				bad := []string{"claude-haiku-5-5-c", "claude-haiku-5-5-open"}
				if c.req.Models != nil {
					bad = append(bad, "-b:")
				} else if !contains(out.Route, "claude-sonnet-5-5-b:capacity") {
					t.Fatalf("route %q did not walk the overflow chain", out.Route)
				}
				for _, m := range bad {
					if contains(out.Route, m) {
						t.Fatalf("route %q went to %s", out.Route, m)
					}
				}
			}
			if out.Committed != c.ok || (out.Waited > 0) != c.waited {
				t.Fatalf("committed %v waited %v: %+v", out.Committed, out.Waited, out)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// UntilReset: a usage limit is waited out to its reset, on the same model;
// a parked request comes back at the reset instead; a budget too short for
// it fails.
func TestUntilReset(t *testing.T) {
	limitOnce := func(clk interface{ Now() time.Time }, in time.Duration) func(context.Context, *Attempt) Result {
		n := 0
		return func(_ context.Context, a *Attempt) Result {
			if n++; n == 1 {
				return Result{Verdict: classify.Verdict{Class: classify.UsageLimit, ResetsAt: clk.Now().Add(in), Message: "usage limit"}, Status: 429}
			}
			return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
		}
	}
	e, clk := clocked(overflowConfig(""))
	start := clk.Now()
	out := e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5", Type: "anthropic", UntilReset: true}, Send: limitOnce(clk, 90*time.Minute)})
	// (a second past the reset: never before it)
	if !out.Committed || out.Route != "claude-opus-5-5:usage_limit > claude-opus-5-5:ok" || out.Waited != 90*time.Minute+time.Second || clk.Now().Sub(start) != 90*time.Minute+time.Second {
		t.Fatalf("waited out: %+v (clock moved %v)", out, clk.Now().Sub(start))
	}
	e, clk = clocked(overflowConfig(""))
	out = e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5", Type: "anthropic", UntilReset: true, Park: true, Ladder: []time.Duration{time.Minute}}, Send: limitOnce(clk, 90*time.Minute)})
	if out.Committed || !out.ParkUntil.Equal(clk.Now().Add(90*time.Minute+time.Second)) || out.Attempts != 1 {
		t.Fatalf("parked: %+v", out)
	}
	e, clk = clocked(overflowConfig(""))
	out = e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5", Type: "anthropic", UntilReset: true, Budget: time.Hour}, Send: limitOnce(clk, 90*time.Minute)})
	if out.Committed || out.Verdict.Class != classify.UsageLimit || !contains(out.Reason, "past the wait budget of 1h") {
		t.Fatalf("a budget shorter than the reset: %+v", out)
	}
	// without UntilReset a usage limit is passed on at once
	e, clk = clocked(overflowConfig(""))
	out = e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5", Type: "anthropic"}, Send: limitOnce(clk, time.Minute)})
	if out.Committed || out.Attempts != 1 || out.Waited != 0 {
		t.Fatalf("no UntilReset: %+v", out)
	}
}

// The reviews' cases: a usage limit said again after its reset is waited
// for at most maxResets times, never in a loop; a reset already past waits
// at least a backoff; the wait for a reset takes nothing of the capacity
// waits' budget after it; a chain and its overflow that share a model walk
// it once.
func TestUsageLimitEdges(t *testing.T) {
	e, clk := clocked(overflowConfig(""))
	past := func(_ context.Context, a *Attempt) Result {
		return Result{Verdict: classify.Verdict{Class: classify.UsageLimit, ResetsAt: clk.Now().Add(-time.Minute)}, Status: 429}
	}
	out := e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5", Type: "anthropic", UntilReset: true}, Send: past})
	if out.Committed || out.Attempts != maxResets+1 || !contains(out.Reason, "did not reset at the time it said") || out.Waited <= 0 {
		t.Fatalf("a reset that never comes: %+v", out)
	}
	// after a two-hour reset, capacity: the ladder's waits are still there
	e, clk = clocked(overflowConfig(""))
	n := 0
	then := func(_ context.Context, a *Attempt) Result {
		n++
		switch {
		case n == 1:
			return Result{Verdict: classify.Verdict{Class: classify.UsageLimit, ResetsAt: clk.Now().Add(2 * time.Hour)}, Status: 429}
		case n < 6:
			return Result{Verdict: classify.Verdict{Class: classify.Capacity}, Status: 529}
		}
		return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
	}
	out = e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5", Type: "anthropic", UntilReset: true}, Send: then})
	if !out.Committed {
		t.Fatalf("capacity after the reset gave up: %+v", out)
	}
	// a model in the chain and in its overflow chain: walked once
	cfg := overflowConfig("")
	cfg.Chains["claude-b"] = append(cfg.Chains["claude-b"], "claude-haiku-5-5")
	e, _ = clocked(cfg)
	calls := 0
	full := func(_ context.Context, a *Attempt) Result {
		calls++
		return Result{Verdict: classify.Verdict{Class: classify.Capacity}, Status: 529}
	}
	out = e.Run(context.Background(), &Call{Request: Request{Model: "claude-opus-5-5", Type: "anthropic", Budget: time.Second}, Send: full})
	if out.Committed || calls > 20 {
		t.Fatalf("%d attempts: a model shared by a chain and its overflow looped (%s)", calls, out.Route)
	}
}

// A Claude login goes only to the provider it came for (or to one with
// spillway's own key): never to another passthrough provider.
func TestSignInStaysWithItsProvider(t *testing.T) {
	cfg := overflowConfig("")
	m := cfg.Models["claude-sonnet-5-5"]
	m.Provider = "anthropic-open" // a passthrough provider of another host
	cfg.Models["claude-sonnet-5-5"] = m
	e, _ := clocked(cfg)
	for _, signIn := range []bool{true, false} {
		var got []string
		for _, c := range e.Candidates(Request{Model: "claude-opus-5-5", Type: "anthropic", SignIn: signIn}) {
			got = append(got, c.Model)
		}
		has := contains(fmt.Sprint(got), "claude-sonnet-5-5")
		if signIn == has {
			t.Fatalf("sign-in %v: candidates %v", signIn, got)
		}
	}
}
