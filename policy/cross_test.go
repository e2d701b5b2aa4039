package policy

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// crossConfig: chain codex overflows into claude (another vendor), and
// chain mixed holds a Claude model among OpenAI's.
func crossConfig() *config.Config {
	cfg := config.Default()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	cfg.Chains["mixed"] = []string{"gpt-mixed", "claude-mixed", "gpt-mixed-light"}
	cfg.Models["gpt-mixed"] = config.Model{Provider: "openai", Tier: config.Heavy}
	cfg.Models["claude-mixed"] = config.Model{Provider: "anthropic", Tier: config.Medium}
	cfg.Models["gpt-mixed-light"] = config.Model{Provider: "openai", Tier: config.Light}
	cfg.ChainRules = map[string]config.ChainRules{"codex": {Overflow: "claude"}}
	return cfg
}

// A cross-vendor step is sent only where the front end can translate it
// (Call.Cross); otherwise it is passed over, its reason in the route, for
// the rest of the request, and never counted as an attempt.
func TestCrossVendorSteps(t *testing.T) {
	full := func(models ...string) map[string][]classify.Class {
		m := map[string][]classify.Class{}
		for _, n := range models {
			m[n] = []classify.Class{classify.Capacity, classify.Capacity, classify.Capacity, classify.Capacity}
		}
		return m
	}
	can := func(Candidate) (string, string) { return "", "" }
	noKey := func(c Candidate) (string, string) { return NoKey, "provider has no api_key" }
	cases := []struct {
		name     string
		req      Request
		cross    func(Candidate) (string, string)
		answers  map[string][]classify.Class
		route    string
		ok       bool
		attempts int
	}{
		{"a member of another format in the chain answers, translated", Request{Model: "gpt-mixed", Type: "openai"}, can,
			full("gpt-mixed"), "gpt-mixed:capacity > claude-mixed[anthropic]:ok", true, 2},
		{"the overflow chain of another vendor, after one walk", Request{Model: "gpt-6.1-sol", Type: "openai"}, can,
			full("gpt-6.1-sol", "gpt-6-luna"), "gpt-6.1-sol:capacity > gpt-6-luna:capacity > claude-sonnet-5-5[anthropic]:ok", true, 3},
		{"no key: passed over, the chain goes on", Request{Model: "gpt-mixed", Type: "openai"}, noKey,
			full("gpt-mixed"), "gpt-mixed:capacity > claude-mixed[anthropic]:no_key > gpt-mixed-light:ok", true, 2},
		{"an agent's run (no Cross): other_vendor", Request{Model: "gpt-mixed", Type: "openai"}, nil,
			full("gpt-mixed"), "gpt-mixed:capacity > claude-mixed[anthropic]:other_vendor > gpt-mixed-light:ok", true, 2},
		{"a sign-in never leaves its vendor, whatever Cross says (a provider without a key of its own is not a candidate at all)", Request{Model: "gpt-mixed", Type: "openai", SignIn: true}, can,
			full("gpt-mixed"), "gpt-mixed:capacity > gpt-mixed-light:ok", true, 2},
		{"every other step passed over: the last real answer is the give-up's", Request{Model: "gpt-mixed", Type: "openai", Budget: time.Second}, noKey,
			full("gpt-mixed", "gpt-mixed-light"), "gpt-mixed:capacity > claude-mixed[anthropic]:no_key > gpt-mixed-light:capacity >", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := clocked(crossConfig())
			sent := map[string]int{}
			send := answers(c.answers)
			out := e.Run(context.Background(), &Call{Request: c.req, Cross: c.cross, Send: func(ctx context.Context, a *Attempt) Result {
				sent[a.Candidate.Model]++
				return send(ctx, a)
			}})
			if out.Route != c.route && !(c.route[len(c.route)-1] == '>' && contains(out.Route, c.route)) {
				t.Fatalf("route %q, want %q", out.Route, c.route)
			}
			if out.Committed != c.ok || c.attempts > 0 && out.Attempts != c.attempts {
				t.Fatalf("committed %v attempts %d: %+v", out.Committed, out.Attempts, out)
			}
			if c.cross == nil || c.req.SignIn || c.name[:2] == "no" || !c.ok {
				if sent["claude-mixed"] > 0 {
					t.Fatalf("a step passed over was sent: %v", sent)
				}
			}
			if !c.ok && out.Verdict.Class != classify.Capacity {
				t.Fatalf("give-up class %s, want the last real answer's (capacity)", out.Verdict.Class)
			}
		})
	}
}

// A request naming another vendor's model whose chain holds none of the
// request's own format is not translated: nothing is sent, no attempt
// counted, and the give-up says why.
func TestAChainOfAnotherVendorDoesNotTranslate(t *testing.T) {
	e, _ := clocked(crossConfig())
	sent := 0
	out := e.Run(context.Background(), &Call{Request: Request{Model: "claude-sonnet-5-5", Type: "openai"}, Cross: func(Candidate) (string, string) { return "", "" },
		Send: func(context.Context, *Attempt) Result {
			sent++
			return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true}
		}})
	want := "spillway: bad_request: not sent: model claude-sonnet-5-5 is in chain claude, which does not translate: none of its models speaks openai, the format the request came in"
	if sent != 0 || out.Committed || out.Attempts != 0 || out.Route != "claude-sonnet-5-5[anthropic]:untranslatable > claude-haiku-5-5[anthropic]:untranslatable" ||
		out.Reason != want {
		t.Fatalf("sent %d: %+v\nwant reason %q", sent, out, want)
	}
	// a model in no chain, and a chain given as a list, say so
	cfg := crossConfig()
	cfg.Models["claude-lone"] = config.Model{Provider: "anthropic", Tier: config.Light}
	e, _ = clocked(cfg)
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Model: "claude-lone", Type: "openai"}, "spillway: bad_request: not sent: model claude-lone speaks anthropic, not openai (the format the request came in), and is in no chain that translates"},
		{Request{Model: "claude-sonnet-5-5", Models: []string{"claude-sonnet-5-5", "claude-lone"}, Type: "gemini"}, "spillway: bad_request: not sent: the chain given (claude-sonnet-5-5, claude-lone) does not translate: none of its models speaks gemini, the format the request came in"},
	} {
		out := e.Run(context.Background(), &Call{Request: c.req, Cross: func(Candidate) (string, string) { return "", "" },
			Send: func(context.Context, *Attempt) Result { t.Fatal("sent"); return Result{} }})
		if out.Reason != c.want {
			t.Errorf("%+v: %q\nwant %q", c.req, out.Reason, c.want)
		}
	}
}

// A hedge never starts a cross-vendor step the request cannot take: it
// races the next model it can (here past Claude, which an agent's run
// cannot send), not a step that would be passed over unsent.
func TestAHedgeSkipsAStepItCannotTake(t *testing.T) {
	cfg := hedged()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	cfg.Chains["codex"] = []string{"gpt-6-astra", "claude-sonnet-5-5", "gpt-6.1-sol"}
	e, clk := clocked(cfg)
	done := make(chan Outcome)
	go func() {
		done <- e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", Type: "openai"}, Stream: true, Watchdogs: true, ChargeFailures: true,
			Send: func(ctx context.Context, a *Attempt) Result {
				a.Headers(true)
				if a.Candidate.Model == "gpt-6-astra" { // slow: past its first-token limit
					<-ctx.Done()
					return Result{Verdict: a.Failure(ctx.Err()), Status: 200}
				}
				if !a.Output() {
					return Result{Verdict: a.Failure(context.Canceled), Status: 200}
				}
				return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
			}})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilDue(ctx, 10*time.Second); err != nil {
		t.Fatal("the first-token watchdog was never armed")
	}
	clk.Advance(10 * time.Second)
	select {
	case out := <-done:
		if !out.Committed || out.Candidate.Model != "gpt-6.1-sol" || contains(out.Route, "claude") && !contains(out.Route, "claude-sonnet-5-5[anthropic]:other_vendor") {
			t.Fatalf("%+v", out)
		}
	case <-ctx.Done():
		t.Fatal("the request never ended")
	}
}

// A cross-vendor or overflow step's pace is its own lane's: while the
// chain's own models' breakers are open (their lanes under pressure from
// the capacity answers that opened them), the overflow step is sent at
// once, waiting nothing, and its record says so.
func TestAnOverflowStepWaitsNothingForOpenBreakersElsewhere(t *testing.T) {
	cfg := crossConfig()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 5, 1
	cfg.Breaker.Cooldown, cfg.Breaker.MaxCooldown = config.Duration(time.Minute), config.Duration(time.Minute)
	e, _ := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	can := func(Candidate) (string, string) { return "", "" }
	// open every OpenAI model's breaker with one capacity answer each
	send := answers(map[string][]classify.Class{"gpt-6-astra": {classify.Capacity}, "gpt-6.1-sol": {classify.Capacity}, "gpt-6-luna": {classify.Capacity}})
	first := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", Type: "openai"}, Cross: can, Send: send})
	if first.Route != "gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity > claude-opus-5-5[anthropic]:ok" {
		t.Fatalf("first request: route %q", first.Route)
	}
	for i := range 3 { // one after another: each would take the last open model's paced turn
		rec := &recorder{}
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", Type: "openai"}, Cross: can, Send: send, Events: rec})
		if out.Route != "gpt-6-astra:breaker_open > gpt-6.1-sol:breaker_open > gpt-6-luna:breaker_open > claude-opus-5-5[anthropic]:ok" {
			t.Fatalf("request %d: route %q", i, out.Route)
		}
		if out.Waited != 0 {
			t.Fatalf("request %d waited %v for models it never sent to", i, out.Waited)
		}
		if len(rec.recs) != 1 || rec.recs[0].WaitMS != 0 {
			t.Fatalf("request %d: records %+v", i, rec.recs)
		}
	}
}

// A give-up says why each step was passed over once, naming its model
// once: the reason names it already, or is put after its name.
func TestPassedOverReasonsNameTheModelOnce(t *testing.T) {
	e, _ := clocked(crossConfig(), WithRand(func() float64 { return 0.5 }))
	noKey := func(c Candidate) (string, string) {
		return NoKey, c.Model + " is " + string(c.Format) + "'s model, and provider " + c.Provider + " has no api_key of its own"
	}
	c4 := []classify.Class{classify.Capacity, classify.Capacity, classify.Capacity, classify.Capacity}
	full := map[string][]classify.Class{"gpt-mixed": c4, "gpt-mixed-light": slices.Clone(c4)}
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-mixed", Type: "openai", Budget: time.Second}, Cross: noKey, Send: answers(full)})
	want := "spillway: capacity: every model of the chain is at capacity; tried gpt-mixed (capacity), claude-mixed (no_key), gpt-mixed-light (capacity) in 4 attempts; waited 500ms; passed over: claude-mixed is anthropic's model, and provider anthropic has no api_key of its own; last upstream message: capacity"
	if out.Reason != want {
		t.Fatalf("reason %q\nwant   %q", out.Reason, want)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct {
		text, model string
		want        bool
	}{
		{"gpt-6-luna is anthropic's model", "gpt-6-luna", true},
		{"the model is gpt-6.", "gpt-6", true},
		{"model gpt-6-luna is in chain codex", "gpt-6", false},
		{"gpt-6.1-sol (openai): the request has audio", "gpt-6", false},
		{"not gpt-6, but gpt-6.1", "gpt-6.1", true},
		{"", "gpt-6", false},
	} {
		if got := names(c.text, c.model); got != c.want {
			t.Errorf("names(%q, %q) = %v, want %v", c.text, c.model, got, c.want)
		}
	}
}

// A keyless request (a cloud client's: its credentials are the cloud's)
// goes with each provider's own credentials (an api_key under passthrough
// too, its KeyID its own): a step whose provider has none is passed over,
// its reason in the route; a request with a key of its own takes the
// passthrough step as before.
func TestAKeylessRequestPassesOverPassthroughSteps(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	cfg.Providers["anthropic"] = config.Provider{Type: "anthropic", BaseURL: "http://127.0.0.1:1"}                                                 // passthrough, no key of its own
	cfg.Providers["anthropic-own"] = config.Provider{Type: "anthropic", BaseURL: "http://127.0.0.1:2", APIKey: config.Secret{Value: "sk-ant-own"}} // passthrough, a key of its own
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1"}
	m := cfg.Models["claude-sonnet-5-5"]
	m.Deployments = []config.Deployment{
		{Name: "anthropic", Provider: "anthropic", Weight: 1_000_000},
		{Name: "own", Provider: "anthropic-own", Weight: 100},
		{Name: "bedrock", Provider: "bedrock-east", Upstream: "us.anthropic.claude-sonnet-5-5-v1:0", Weight: 1},
	}
	cfg.Models["claude-sonnet-5-5"] = m
	cases := []struct {
		name    string
		req     Request
		answers map[string][]classify.Class
		route   string
		sent    []string
	}{
		{"keyless: the passthrough step passed over", Request{Model: "claude-sonnet-5-5", Type: "anthropic", Keyless: true}, nil,
			"claude-sonnet-5-5@anthropic:no_key > claude-sonnet-5-5@own:ok", []string{"own"}},
		{"keyless, its own key's pool full: the cloud's", Request{Model: "claude-sonnet-5-5", Type: "anthropic", Keyless: true},
			map[string][]classify.Class{"claude-sonnet-5-5@own": {classify.Capacity}},
			"claude-sonnet-5-5@anthropic:no_key > claude-sonnet-5-5@own:capacity > claude-sonnet-5-5@bedrock:ok", []string{"own", "bedrock"}},
		{"with the caller's key: the passthrough step first", Request{Model: "claude-sonnet-5-5", Type: "anthropic"}, nil,
			"claude-sonnet-5-5@anthropic:ok", []string{"anthropic"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := clocked(cfg)
			var sent []string
			out := e.Run(context.Background(), &Call{Request: c.req, Send: func(ctx context.Context, a *Attempt) Result {
				sent = append(sent, a.Candidate.Deployment)
				if c.req.Keyless && a.Candidate.KeyID == "" {
					t.Errorf("%s sent keyless without its own credentials' id", a.Candidate.Name())
				}
				if cls := c.answers[a.Candidate.Name()]; len(cls) > 0 {
					return Result{Verdict: classify.Verdict{Class: cls[0]}}
				}
				return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true}
			}})
			if out.Route != c.route || !slices.Equal(sent, c.sent) {
				t.Fatalf("route %q sent %v; want %q, %v", out.Route, sent, c.route, c.sent)
			}
		})
	}
}
