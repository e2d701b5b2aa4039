package policy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/wire"
)

// recorder collects a driver's event records.
type recorder struct {
	mu   sync.Mutex
	recs []events.Record
	hook func(events.Record) // told of each record, when set
}

func (r *recorder) Write(rec events.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(rec)
	}
}

func (r *recorder) all() []events.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Record(nil), r.recs...)
}

// answers is a fake Send that answers each model with the next verdict of
// its list (OK once the list is used up), committing OK answers.
func answers(m map[string][]classify.Class) func(context.Context, *Attempt) Result {
	var mu sync.Mutex
	return func(_ context.Context, a *Attempt) Result {
		mu.Lock()
		defer mu.Unlock()
		list := m[a.Candidate.Model]
		c := classify.OK
		if len(list) > 0 {
			c, m[a.Candidate.Model] = list[0], list[1:]
		}
		return Result{Verdict: classify.Verdict{Class: c, Message: string(c)}, Committed: c == classify.OK, Status: 200}
	}
}

func TestRunWalksThePlanAndRecordsEveryAttempt(t *testing.T) {
	e, clk := clocked(config.Default(), WithRand(func() float64 { return 0.5 }))
	rec := &recorder{}
	var switches, waits []string
	c := &Call{Request: Request{Model: "gpt-6-astra", Type: "openai", InputTokens: 10}, Source: events.SourceLibrary,
		Endpoint: "/v1/chat/completions", ReqBytes: 40, Key: "k", Events: rec,
		Send: answers(map[string][]classify.Class{"gpt-6-astra": {classify.Capacity}, "gpt-6.1-sol": {classify.Network}}),
		OnSwitch: func(from, to Candidate, why classify.Verdict) {
			switches = append(switches, from.Model+">"+to.Model+":"+string(why.Class))
		},
		OnWait: func(d time.Duration, next Candidate, why classify.Verdict) {
			waits = append(waits, d.String()+" "+next.Model+" "+string(why.Class))
		},
	}
	out := e.Run(context.Background(), c)
	if !out.Committed || out.Verdict.Class != classify.OK || out.Candidate.Model != "gpt-6.1-sol" || out.Attempts != 3 {
		t.Fatalf("outcome %+v", out)
	}
	if out.Route != "gpt-6-astra:capacity > gpt-6.1-sol:network > gpt-6.1-sol:ok" {
		t.Fatalf("route %q", out.Route)
	}
	if strings.Join(switches, ",") != "gpt-6-astra>gpt-6.1-sol:capacity" || strings.Join(waits, ",") != "2s gpt-6.1-sol network" {
		t.Fatalf("switches %v waits %v", switches, waits)
	}
	recs := rec.all()
	if len(recs) != 3 {
		t.Fatalf("records %+v", recs)
	}
	for i, r := range recs {
		if r.Attempt != i+1 || r.RequestID != out.ID || r.Source != "library" || r.Endpoint != "/v1/chat/completions" ||
			r.RequestedModel != "gpt-6-astra" || r.ReqBytes != 40 || r.EstInputTokens != 10 || r.Status != 200 {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if recs[1].FallbackFrom != "gpt-6-astra" || recs[2].WaitMS != 2000 || recs[0].Class != "capacity" || recs[2].Class != "ok" || recs[1].Error != "network" {
		t.Fatalf("records %+v", recs)
	}
	if got := clk.Slept(); len(got) != 1 || got[0] != 2*time.Second {
		t.Fatalf("slept %v, want the 2s network gap only", got)
	}
}

func TestRunChargesEveryWaitToTheBudget(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MinGap: config.Duration(3 * time.Second), MaxConcurrency: 4}
	e, clk := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	rec := &recorder{}
	// a chain of one, rate limited with a 4s Retry-After each time: the
	// plan's waits and the pacer's gaps share the 10s budget
	send := func(context.Context, *Attempt) Result {
		return Result{Verdict: classify.Verdict{Class: classify.RateLimit, Wait: 4 * time.Second}}
	}
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna", Budget: 10 * time.Second}, Send: send, Events: rec})
	if !out.Failed() || out.Verdict.Class != classify.RateLimit || out.Waited > 10*time.Second {
		t.Fatalf("outcome %+v", out)
	}
	var charged time.Duration
	for _, r := range rec.all() {
		charged += time.Duration(r.WaitMS) * time.Millisecond
	}
	if charged != out.Waited || clk.Now().Sub(t0) > 10*time.Second {
		t.Fatalf("records charged %v, outcome %v, clock moved %v", charged, out.Waited, clk.Now().Sub(t0))
	}
	// the pacer's gap is charged too: 3s after the first start, 6s after
	// the second (the key was slowed down): 4s, then 4s, then 4s and a 2s
	// turn would pass the budget, so the third attempt goes after 4s+2s
	recs := rec.all()
	if len(recs) != 3 || out.Waited != 10*time.Second || recs[1].WaitMS != 4000 || recs[2].WaitMS != 6000 {
		t.Fatalf("waited %v: %+v", out.Waited, recs)
	}
}

func TestRunParksInsteadOfSleepingARung(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	cfg.Pacing = config.Pacing{MaxConcurrency: 8}
	e, clk := clocked(cfg)
	full := func(context.Context, *Attempt) Result {
		return Result{Verdict: classify.Verdict{Class: classify.Capacity}}
	}
	ladder := []time.Duration{30 * time.Second, 2 * time.Minute}
	for _, c := range []struct {
		rung int
		want time.Duration
	}{{0, 30 * time.Second}, {1, 2 * time.Minute}, {5, 2 * time.Minute}} { // past the last rung: it repeats
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", Ladder: ladder, Rung: c.rung, Park: true}, Send: full})
		if out.Failed() || out.Committed || !out.ParkUntil.Equal(clk.Now().Add(c.want)) || out.Attempts != 3 {
			t.Fatalf("rung %d: %+v", c.rung, out)
		}
	}
	if len(clk.Slept()) != 0 {
		t.Fatalf("a parked request slept %v", clk.Slept())
	}
	// a rung of nothing still parks: no loop in process
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna", Ladder: []time.Duration{0}, Park: true}, Send: full})
	if !out.ParkUntil.Equal(clk.Now()) || out.Attempts != 1 {
		t.Fatalf("zero rung: %+v", out)
	}
	// in process a parked request waits no longer than retry.budget (not
	// the ladder's length): a held slot turns into a park
	key := Candidate{Provider: "openai", Upstream: "gpt-6-luna"}.Key()
	busy := e.pacer
	for range 8 {
		busy.full(key)
	}
	hold, _, _, _ := busy.acquire(context.Background(), key, "", time.Time{})
	done := make(chan Outcome)
	go func() {
		done <- e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna", Ladder: ladder, Park: true}, Send: full})
	}()
	if err := clk.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(cfg.Retry.Budget.D())
	out = <-done
	hold()
	if out.ParkUntil.IsZero() || out.Waited != cfg.Retry.Budget.D() || out.Route != "gpt-6-luna:no_slot" {
		t.Fatalf("held slot: %+v", out)
	}
	// with every breaker open, it comes back when the first lets a probe
	// through, not at the end of a long rung
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(10 * time.Second), MaxCooldown: config.Duration(10 * time.Second)}
	e, clk = clocked(cfg)
	out = e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", Ladder: ladder, Park: true}, Send: full})
	if !out.ParkUntil.Equal(clk.Now().Add(10 * time.Second)) {
		t.Fatalf("parked until %v, want the breakers' probe in 10s", out.ParkUntil.Sub(clk.Now()))
	}
}

func TestRunWatchdogs(t *testing.T) {
	cfg := config.Default()
	cfg.Timeouts.FirstToken = config.Duration(30 * time.Second)
	cfg.Timeouts.Idle = config.Duration(60 * time.Second)
	cfg.Timeouts.Header = config.Duration(20 * time.Second)
	cfg.Timeouts.Request = config.Duration(5 * time.Minute)
	cases := []struct {
		name    string
		stream  bool
		headers bool
		output  bool
		advance time.Duration
		want    string
	}{
		{"no headers on a stream", true, false, false, 20 * time.Second, "no response headers within 20s (timeouts.header)"},
		{"no headers on a whole answer (timeouts.request)", false, false, false, 5 * time.Minute, "no answer within 5m0s (timeouts.request"},
		{"no first output", true, true, false, 30 * time.Second, "no output within 30s"},
		{"a whole answer's body stalls", false, true, false, 60 * time.Second, "the answer stalled for 1m0s"},
		{"a stream goes silent after output", true, true, true, 60 * time.Second, "went silent for 1m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, clk := clocked(cfg)
			rec := &recorder{}
			// the send says when it has reached its place: before that
			// the clock must not move, or the header watchdog (armed
			// before the send runs) fires first
			placed := make(chan struct{}, 1)
			send := func(ctx context.Context, a *Attempt) Result {
				if c.headers {
					a.Headers(c.stream)
				}
				if c.output {
					a.Output()
				}
				select {
				case placed <- struct{}{}:
				default:
				}
				<-ctx.Done()
				return Result{Verdict: a.Failure(ctx.Err()), Committed: c.output}
			}
			done := make(chan Outcome)
			go func() {
				done <- e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna", NoFallback: true}, Stream: c.stream, Watchdogs: true, ChargeFailures: true, Send: send, Events: rec})
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			select {
			case <-placed:
			case <-ctx.Done():
				t.Fatal("the send never ran")
			}
			if err := clk.BlockUntil(ctx, 1); err != nil {
				t.Fatal(err)
			}
			clk.Advance(c.advance - time.Millisecond)
			select {
			case out := <-done:
				t.Fatalf("ended before its watchdog: %+v", out)
			default:
			}
			clk.Advance(time.Millisecond)
			// an uncommitted timeout is retried: let the retry time out too
			var out Outcome
			for out.Route == "" {
				select {
				case out = <-done:
				case <-time.After(time.Millisecond):
					clk.Advance(c.advance)
				case <-ctx.Done():
					t.Fatal("the request never ended")
				}
			}
			recs := rec.all()
			if len(recs) == 0 || recs[0].Class != "timeout" || !strings.Contains(recs[0].Error, c.want) {
				t.Fatalf("records %+v, want a timeout saying %q", recs, c.want)
			}
			if c.output != out.Committed {
				t.Fatalf("committed %v: %+v", out.Committed, out)
			}
		})
	}
	t.Run("a zero duration turns a watchdog off", func(t *testing.T) {
		cfg := config.Default()
		cfg.Timeouts = config.Timeouts{}
		e, clk := clocked(cfg)
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Stream: true, Watchdogs: true, ChargeFailures: true,
			Send: func(ctx context.Context, a *Attempt) Result {
				if clk.Timers() != 0 {
					t.Errorf("%d timers armed with every watchdog off", clk.Timers())
				}
				a.Headers(true)
				a.Output()
				if clk.Timers() != 0 {
					t.Errorf("%d timers armed with every watchdog off", clk.Timers())
				}
				return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true}
			}})
		if !out.Committed {
			t.Fatal(out)
		}
	})
}

func TestRunBreakerEvidenceAtFirstOutput(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(10 * time.Second), MaxCooldown: config.Duration(time.Minute)}
	e, clk := clocked(cfg)
	key := Candidate{Provider: "openai", Upstream: "gpt-6-luna"}.Key()
	done, _ := e.allow(context.Background(), key, "")
	done(classify.Verdict{Class: classify.Capacity})
	clk.Advance(10 * time.Second) // the next attempt is the probe
	rec := &recorder{}
	var open *Attempt
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Watchdogs: true, ChargeFailures: true, Stream: true, Events: rec,
		Send: func(ctx context.Context, a *Attempt) Result {
			a.Headers(true)
			a.Output()
			open = a
			return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Open: true, Status: 200}
		}})
	if !out.Committed || e.breakers.States()[key] != "closed" {
		t.Fatalf("the probe's first output did not close the breaker: %v %+v", e.breakers.States(), out)
	}
	if len(rec.all()) != 0 {
		t.Fatal("an open attempt was recorded before it finished")
	}
	// the stream then breaks: its own failure, recorded with what the
	// caller received
	open.Finish(classify.Verdict{Class: classify.Capacity, Message: "overloaded mid-stream"}, 7)
	open.Finish(classify.Verdict{Class: classify.OK}, 9) // only the first counts
	recs := rec.all()
	if len(recs) != 1 || recs[0].Class != "capacity" || recs[0].OutputTokens != 7 || recs[0].Status != 200 {
		t.Fatalf("records %+v", recs)
	}
	if e.breakers.States()[key] != "open" {
		t.Fatalf("a capacity break after output is not evidence: %v", e.breakers.States())
	}
}

func TestRunLocalRefusalsAreNotAttempts(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Hour), MaxCooldown: config.Duration(time.Hour)}
	cfg.Retry.Budget = config.Duration(5 * time.Second)
	e, _ := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	rec := &recorder{}
	sent := 0
	send := func(context.Context, *Attempt) Result {
		sent++
		return Result{Verdict: classify.Verdict{Class: classify.Capacity}}
	}
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", MinTier: config.Heavy}, Send: send, Events: rec})
	if sent != 1 || len(rec.all()) != 1 || out.Attempts != 1 || !strings.HasPrefix(out.Route, "gpt-6-astra:capacity > gpt-6-astra:breaker_open") {
		t.Fatalf("sent %d, records %d, outcome %+v", sent, len(rec.all()), out)
	}
	// a send that could not send is not an attempt either
	out = e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Events: rec, Send: func(context.Context, *Attempt) Result {
		return Result{Verdict: classify.Verdict{Class: classify.BadRequest, Message: "no provider"}, NotSent: true}
	}})
	if !out.Failed() || out.Verdict.Class != classify.BadRequest || len(rec.all()) != 1 {
		t.Fatalf("outcome %+v, records %d", out, len(rec.all()))
	}
}

func TestRunNoSlotWithinTheBudget(t *testing.T) {
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 1}
	cfg.Retry.Budget = config.Duration(2 * time.Second)
	e, clk := clocked(cfg, ForBatchWork()) // paced from the first request
	key := Candidate{Provider: "openai", Upstream: "gpt-6-luna"}.Key()
	hold, _, _, err := e.pacer.acquire(context.Background(), key, "", time.Time{}) // someone else's long request
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	done := make(chan Outcome)
	go func() {
		done <- e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: answers(nil)})
	}()
	if err := clk.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	out := <-done
	if !out.Failed() || out.Attempts != 0 || !strings.HasPrefix(out.Route, "gpt-6-luna:no_slot") || out.Waited != 2*time.Second {
		t.Fatalf("%+v", out)
	}
}

func TestRunContextEndsTheRequest(t *testing.T) {
	e, _ := clocked(config.Default())
	ctx, cancel := context.WithCancel(context.Background())
	out := e.Run(ctx, &Call{Request: Request{Model: "gpt-6-luna"}, Send: func(context.Context, *Attempt) Result {
		cancel()
		return Result{Verdict: classify.Verdict{Class: classify.Network}}
	}})
	if !errors.Is(out.Err, context.Canceled) || out.Failed() {
		t.Fatalf("%+v", out)
	}
}

// The send contract has room for what later features add without a new
// loop: candidates that are deployments, several attempts of one request
// in flight at once (a hedge), and an attempt that continues one whose
// answer reached the caller and broke. These doubles drive the driver's
// attempt machinery the way those features will.
func TestSendContractShapes(t *testing.T) {
	t.Run("a deployment is a candidate with breakers and pacing of its own", func(t *testing.T) {
		cfg := config.Default()
		cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute), MaxCooldown: config.Duration(time.Minute)}
		e, _ := clocked(cfg)
		eu := Candidate{Model: "gpt-6-astra", Provider: "openai", Upstream: "gpt-6-astra", Deployment: "eu"}
		us := eu
		us.Deployment = "us"
		r := e.newRun(&Call{Request: Request{Model: "gpt-6-astra"}})
		var got []string
		r.c.Send = func(_ context.Context, a *Attempt) Result {
			got = append(got, a.Candidate.Deployment)
			return Result{Verdict: classify.Verdict{Class: classify.Capacity}}
		}
		r.attempt(context.Background(), &step{Candidate: eu}, new(Result))
		if !e.breakers.Open(eu.Key()) || e.breakers.Open(us.Key()) || eu.Key() == us.Key() {
			t.Fatalf("breakers %v", e.breakers.States())
		}
		r.attempt(context.Background(), &step{Candidate: us}, new(Result))
		if strings.Join(got, ",") != "eu,us" {
			t.Fatalf("sent to %v", got)
		}
	})
	t.Run("a model carried in the URL path", func(t *testing.T) {
		cfg := config.Default()
		cfg.Pacing = config.Pacing{MaxConcurrency: 4}
		e, _ := clocked(cfg)
		var paths, bodies []string
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			paths, bodies = append(paths, r.URL.Path), append(bodies, string(b))
			if strings.Contains(r.URL.Path, "gemini-3-pro") {
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
				return
			}
			io.WriteString(w, `{"candidates":[]}`)
		}))
		defer up.Close()
		ep := wire.EndpointOf(wire.GenerateContent)
		body, _ := wire.ParseBody(ep, []byte(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
		send := func(ctx context.Context, a *Attempt) Result {
			payload, _ := body.For(ep, a.Candidate.Upstream)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL(up.URL, a.Candidate.Upstream), bytes.NewReader(payload))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return Result{Verdict: a.Failure(err)}
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			v := classify.Classify(classify.Input{Status: resp.StatusCode, Body: b, Provider: classify.Gemini})
			return Result{Verdict: v, Committed: v.Class == classify.OK, Status: resp.StatusCode}
		}
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gemini-3-pro", Type: wire.Gemini}, Send: send})
		if out.Route != "gemini-3-pro:capacity > gemini-3-flash:ok" || strings.Join(paths, " ") !=
			"/v1beta/models/gemini-3-pro:generateContent /v1beta/models/gemini-3-flash:generateContent" || bodies[0] != bodies[1] {
			t.Fatalf("route %q, paths %v, bodies %v", out.Route, paths, bodies)
		}
	})
	t.Run("two attempts of one request in flight at once: the first output answers, the other is given up", func(t *testing.T) {
		e, _ := clocked(config.Default())
		rec := &recorder{}
		r := e.newRun(&Call{Request: Request{Model: "gpt-6-astra"}, Events: rec, ID: "hedged"})
		started := make(chan *Attempt, 2)
		r.c.Send = func(ctx context.Context, a *Attempt) Result {
			started <- a
			if a.Candidate.Model == "gpt-6-astra" {
				<-ctx.Done() // the slow one, given up when the other answered
				return Result{Verdict: a.Failure(ctx.Err())}
			}
			if !a.Output() {
				t.Error("the first output lost")
			}
			return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true}
		}
		slow := make(chan Result)
		go func() {
			var res Result
			r.attempt(context.Background(), &step{Candidate: r.plan.chain[0]}, &res)
			slow <- res
		}()
		<-started
		var fast Result
		r.attempt(context.Background(), &step{Candidate: r.plan.chain[1]}, &fast)
		lost := <-slow
		if !fast.Committed || lost.Committed || lost.Verdict.Code != HedgeLost {
			t.Fatalf("fast %+v slow %+v", fast, lost)
		}
		recs := rec.all()
		if len(recs) != 2 || recs[0].Attempt == recs[1].Attempt || recs[0].RequestID != "hedged" {
			t.Fatalf("both attempts count, each once: %+v", recs)
		}
	})
}

// deployed is the default configuration with gpt-6-astra served by three
// deployments: us and eu share one key, ap has its own.
func deployed() *config.Config {
	cfg := config.Default()
	for name, key := range map[string]string{"openai-us": "sk-shared", "openai-eu": "sk-shared", "openai-ap": "sk-other"} {
		cfg.Providers[name] = config.Provider{Type: "openai", BaseURL: "http://" + name + ".example/v1", Auth: "key", APIKey: config.Secret{Ref: "env:K", Value: key}}
	}
	m := cfg.Models["gpt-6-astra"]
	m.Provider = ""
	m.Deployments = []config.Deployment{{Name: "us", Provider: "openai-us", Weight: 2}, {Name: "eu", Provider: "openai-eu"}, {Name: "ap", Provider: "openai-ap", Upstream: "astra-ap"}}
	cfg.Models["gpt-6-astra"] = m
	cfg.Pacing = config.Pacing{MaxConcurrency: 8}
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	return cfg
}

// split runs n healthy gpt-6-astra requests one after another and counts
// them by the deployment that answered.
func split(e *Engine, n int) map[string]int {
	got := map[string]int{}
	for range n {
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: answers(nil)})
		got[out.Candidate.Deployment]++
	}
	return got
}

func TestDeployments(t *testing.T) {
	t.Run("a model's deployments come before the next model, each a candidate of its own", func(t *testing.T) {
		e, _ := clocked(deployed())
		var names []string
		for _, c := range e.Candidates(Request{Model: "gpt-6-astra"}) {
			names = append(names, c.Name()+"="+c.Upstream)
		}
		if got := strings.Join(names, " "); got != "gpt-6-astra@us=gpt-6-astra gpt-6-astra@eu=gpt-6-astra gpt-6-astra@ap=astra-ap gpt-6.1-sol=gpt-6.1-sol gpt-6-luna=gpt-6-luna" {
			t.Fatal(got)
		}
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"},
			Send: answers(map[string][]classify.Class{"gpt-6-astra": {classify.Capacity, classify.Capacity, classify.Capacity}})})
		if out.Route != "gpt-6-astra@us:capacity > gpt-6-astra@eu:capacity > gpt-6-astra@ap:capacity > gpt-6.1-sol:ok" {
			t.Fatalf("route %q", out.Route)
		}
	})
	t.Run("a send that can name only a model gets one candidate per model", func(t *testing.T) {
		e, _ := clocked(deployed())
		var names []string
		for _, c := range e.Candidates(Request{Model: "gpt-6-astra", ModelsOnly: true}) {
			names = append(names, c.Name())
		}
		if got := strings.Join(names, " "); got != "gpt-6-astra gpt-6.1-sol gpt-6-luna" {
			t.Fatal(got)
		}
	})
	t.Run("healthy traffic is split by weight", func(t *testing.T) {
		e, _ := clocked(deployed())
		got := split(e, 40)
		if got["us"] != 20 || got["eu"] != 10 || got["ap"] != 10 {
			t.Fatalf("split %v, want us 20, eu 10, ap 10 (weights 2:1:1)", got)
		}
	})
	t.Run("the fewest in flight for their weight goes first", func(t *testing.T) {
		e, _ := clocked(deployed())
		cands := e.Candidates(Request{Model: "gpt-6-astra"})
		var holds []func()
		for range 2 { // us, at weight 2, has two in flight: as loaded as eu with one
			h, _, _, _ := e.pacer.acquire(context.Background(), cands[0].Key(), "", time.Time{})
			holds = append(holds, h)
		}
		h, _, _, _ := e.pacer.acquire(context.Background(), cands[1].Key(), "", time.Time{})
		holds = append(holds, h)
		defer func() {
			for _, h := range holds {
				h()
			}
		}()
		for range 3 {
			if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Deployment != "ap" {
				t.Fatalf("started at %s with ap idle", st.Candidate.Name())
			}
		}
	})
	t.Run("a deployment that was busy gains no credit meanwhile: once free it takes its share, not a run", func(t *testing.T) {
		e, _ := clocked(deployed())
		ap := e.Candidates(Request{Model: "gpt-6-astra"})[2]
		hold, _, _, _ := e.pacer.acquire(context.Background(), ap.Key(), "", time.Time{})
		for range 30 {
			if out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra"}, Send: answers(nil)}); out.Candidate.Deployment == "ap" {
				t.Fatal("picked ap while it was the busiest")
			}
		}
		hold()
		got := split(e, 8)
		if got["us"] != 4 || got["eu"] != 2 || got["ap"] != 2 {
			t.Fatalf("split after ap was freed %v, want us 4, eu 2, ap 2 (weights 2:1:1)", got)
		}
	})
	t.Run("an open deployment is passed over; a model not found at one deployment skips only it", func(t *testing.T) {
		cfg := deployed()
		cfg.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute), MaxCooldown: config.Duration(time.Minute)}
		e, _ := clocked(cfg)
		us := e.Candidates(Request{Model: "gpt-6-astra"})[0]
		done, _ := e.allow(context.Background(), us.Key(), "")
		done(classify.Verdict{Class: classify.Capacity})
		for range 4 {
			if st := e.newPlan(Request{Model: "gpt-6-astra"}).start(); st.Candidate.Deployment == "us" {
				t.Fatal("started at an open deployment")
			}
		}
		p := e.newPlan(Request{Model: "gpt-6-astra"})
		first := p.start().Candidate
		if st := p.after(classify.Verdict{Class: classify.ModelNotFound}); st.Candidate.Model != "gpt-6-astra" || st.Candidate.Deployment == first.Deployment {
			t.Fatalf("after model_not_found at %s: %s", first.Name(), st.Candidate.Name())
		}
	})
	t.Run("a rate-limited key slows the deployments that share it, not one with another key", func(t *testing.T) {
		e, _ := clocked(deployed())
		out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", Budget: time.Millisecond}, Key: "caller",
			Send: func(_ context.Context, a *Attempt) Result {
				if a.Candidate.Deployment == "ap" {
					return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true}
				}
				return Result{Verdict: classify.Verdict{Class: classify.RateLimit, Wait: time.Second}}
			}})
		if !strings.HasSuffix(out.Route, "gpt-6-astra@ap:ok") {
			t.Fatalf("route %q", out.Route)
		}
		cands := e.Candidates(Request{Model: "gpt-6-astra"})
		us, eu, ap := e.Slowness(cands[0], "caller"), e.Slowness(cands[1], "caller"), e.Slowness(cands[2], "caller")
		if us != 2 || eu != 2 || ap != 1 {
			t.Fatalf("slowness us %v eu %v ap %v: one rate limit on the shared key (then at once to ap's key), none on ap's", us, eu, ap)
		}
		if out.Route != "gpt-6-astra@us:rate_limit > gpt-6-astra@ap:ok" {
			t.Fatalf("route %q: a rate limit moves to a deployment with another key at once", out.Route)
		}
		if sol := e.Slowness(cands[3], "caller"); sol != 1 {
			t.Fatalf("another model slowed: %v", sol)
		}
	})
}

// A long rung is waited in checks (Request.CheckEvery): the chain is
// walked again after each, and the first answer ends the rung early; a
// rung that finds no room is still waited whole, and a parked request comes
// back for each check with what is left of its rung.
func TestRungChecks(t *testing.T) {
	// send answers capacity until the clock passes back, then OK
	send := func(clk interface{ Now() time.Time }, back time.Time) func(context.Context, *Attempt) Result {
		return func(_ context.Context, a *Attempt) Result {
			if clk.Now().Before(back) {
				return Result{Verdict: classify.Verdict{Class: classify.Capacity}, Status: 503}
			}
			a.Output()
			return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
		}
	}
	req := Request{Models: []string{"gpt-6-luna"}, Model: "gpt-6-luna", Ladder: []time.Duration{10 * time.Minute, 30 * time.Minute}, CheckEvery: time.Minute}
	t.Run("room returns mid-rung: the first check after it answers", func(t *testing.T) {
		e, clk := clocked(config.Default())
		out := e.Run(context.Background(), &Call{Request: req, Send: send(clk, t0.Add(3*time.Minute+30*time.Second))})
		if !out.Committed || out.Attempts != 5 || out.Waited != 4*time.Minute {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("no room: every rung waited whole, then a global outage", func(t *testing.T) {
		e, clk := clocked(config.Default())
		out := e.Run(context.Background(), &Call{Request: req, Send: send(clk, t0.Add(24*time.Hour))})
		if out.Committed || !strings.Contains(out.Reason, GlobalOutage) || out.Waited != 40*time.Minute || out.Attempts != 41 {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("with Call.Check: no attempt until a check finds room", func(t *testing.T) {
		e, clk := clocked(config.Default())
		back := t0.Add(3*time.Minute + 30*time.Second)
		checks := 0
		out := e.Run(context.Background(), &Call{Request: req, Send: send(clk, back), Check: func(_ context.Context, c Candidate) (bool, bool) {
			checks++
			return !clk.Now().Before(back), true
		}})
		if !out.Committed || out.Attempts != 2 || out.Waited != 4*time.Minute || checks != 4 {
			t.Fatalf("%d checks, %+v", checks, out)
		}
	})
	t.Run("a check takes the breaker's leave and is its evidence", func(t *testing.T) {
		cfg := config.Default()
		cfg.Breaker.Cooldown, cfg.Breaker.MaxCooldown = config.Duration(time.Hour), config.Duration(time.Hour)
		e, clk := clocked(cfg)
		checks, sends := 0, 0
		out := e.Run(context.Background(), &Call{Request: req, Send: func(ctx context.Context, a *Attempt) Result {
			sends++
			return send(clk, t0.Add(24*time.Hour))(ctx, a)
		}, Check: func(context.Context, Candidate) (bool, bool) {
			checks++
			return false, true
		}})
		// the first attempt's capacity and the first check's make two in a
		// row: the breaker opens for an hour, and the rung's other checks
		// (and the walk after it) leave the lane alone
		if checks != 1 || sends != 1 || out.Committed || e.BreakerStates()["openai/gpt-6-luna"] != StateOpen {
			t.Fatalf("%d checks, %d sends, breakers %v: %+v", checks, sends, e.BreakerStates(), out)
		}
	})
	t.Run("parked: back for each check, with the rest of the rung", func(t *testing.T) {
		cfg := config.Default()
		cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0 // (an open breaker would bring it back sooner, at its probe)
		e, clk := clocked(cfg)
		parked := req
		parked.Park = true
		out := e.Run(context.Background(), &Call{Request: parked, Send: send(clk, t0.Add(24*time.Hour))})
		if out.ParkUntil != t0.Add(time.Minute) || out.RungLeft != 9*time.Minute || out.NextRung != 0 {
			t.Fatalf("first park: %+v", out)
		}
		parked.RungLeft = out.RungLeft
		out = e.Run(context.Background(), &Call{Request: parked, Send: send(clk, t0.Add(24*time.Hour))})
		if out.ParkUntil != t0.Add(time.Minute) || out.RungLeft != 8*time.Minute {
			t.Fatalf("second park: %+v", out)
		}
		parked.RungLeft = time.Minute // the rung's last check: after it, the next rung
		if out = e.Run(context.Background(), &Call{Request: parked, Send: send(clk, t0.Add(24*time.Hour))}); out.RungLeft != 0 || out.NextRung != 1 {
			t.Fatalf("last check: %+v", out)
		}
		// back for a check with Call.Check: no room, no attempt, parked again
		attempts := 0
		parked.RungLeft = 5 * time.Minute
		out = e.Run(context.Background(), &Call{Request: parked, Send: func(ctx context.Context, a *Attempt) Result {
			attempts++
			return send(clk, t0.Add(24*time.Hour))(ctx, a)
		}, Check: func(context.Context, Candidate) (bool, bool) { return false, true }})
		if attempts != 0 || out.ParkUntil.IsZero() || out.RungLeft != 4*time.Minute {
			t.Fatalf("a check with no room: %d attempts, %+v", attempts, out)
		}
		parked.Rung, parked.RungLeft = 1, 0
		if out = e.Run(context.Background(), &Call{Request: parked, Send: send(clk, t0.Add(24*time.Hour))}); out.RungLeft != 29*time.Minute {
			t.Fatalf("the next rung: %+v", out)
		}
	})
}

// A give-up's reason quotes the last upstream message with its secrets
// redacted: an HTTP client's error quotes the URL, and a Gemini key rides
// in its query.
func TestGiveUpReasonHasNoKey(t *testing.T) {
	e, _ := clocked(config.Default())
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gemini-3-flash-lite", Type: "gemini"}, Send: func(context.Context, *Attempt) Result {
		return Result{Verdict: classify.Verdict{Class: classify.Network, Message: `Post "http://127.0.0.1:1/v1beta/models/gemini-3-flash-lite:generateContent?key=AIzaSySecret-0123456789abcdef": connection refused`}}
	}})
	if out.Committed || out.Reason == "" || strings.Contains(out.Reason, "Secret-0123456789") {
		t.Fatalf("reason %q", out.Reason)
	}
}

// A Send that calls an answer OK without committing it broke its contract:
// the request ends at once (it would otherwise go to the same model again,
// for ever), saying so.
func TestSendContract(t *testing.T) {
	e, _ := clocked(config.Default())
	sent := 0
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna"}, Send: func(context.Context, *Attempt) Result {
		sent++
		return Result{Verdict: classify.Verdict{Class: classify.OK}, Status: 200}
	}})
	if sent != 1 || out.Committed || out.Verdict.Code != SendContract || !strings.Contains(out.Reason, "did not commit") {
		t.Fatalf("sent %d: %+v", sent, out)
	}
}

// The engine gives the classifier its own time: a Retry-After written as a
// date is waited as far from the engine's clock as it says, whatever the
// wall clock reads.
func TestClassifierGetsTheEnginesTime(t *testing.T) {
	cfg := config.Default()
	cfg.Retry.Budget = config.Duration(time.Hour)
	e, clk := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	at := clk.Now().Add(40 * time.Second).Format(http.TimeFormat)
	n := 0
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-luna", NoFallback: true}, Send: func(_ context.Context, a *Attempt) Result {
		if n++; n == 1 {
			v := a.Classify(classify.Input{Status: 429, Header: http.Header{"Retry-After": {at}}, Body: []byte(`{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`)})
			return Result{Verdict: v, Status: 429}
		}
		a.Output()
		return Result{Verdict: classify.Verdict{Class: classify.OK}, Committed: true, Status: 200}
	}})
	if !out.Committed || out.Waited != 40*time.Second {
		t.Fatalf("waited %v (%+v), want the 40 s the date says on the engine's clock", out.Waited, out)
	}
}

// What a request waited before a step that was then refused (a backoff,
// here, then an open breaker) is carried by the next attempt's record:
// wait_ms is what that attempt waited since the one before it began.
func TestARefusedStepsWaitIsTheNextAttemptsRecord(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 2
	cfg.Breaker.Cooldown, cfg.Breaker.MaxCooldown = config.Duration(time.Minute), config.Duration(time.Minute)
	e, _ := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	rec := &recorder{}
	send := answers(map[string][]classify.Class{"gpt-6-astra": {classify.Capacity}, "gpt-6.1-sol": {classify.Capacity}, "gpt-6-luna": {classify.Capacity}})
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6-astra", Type: "openai"}, Events: rec,
		Send: func(ctx context.Context, a *Attempt) Result {
			if a.Candidate.Model == "gpt-6-luna" && a.N == 3 {
				// a second capacity answer elsewhere opens astra's breaker
				done, _, _ := e.breakers.Allow(a.r.plan.chain[0].Key())
				done(classify.Verdict{Class: classify.Capacity})
			}
			return send(ctx, a)
		}})
	if out.Route != "gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity > gpt-6-astra:breaker_open > gpt-6.1-sol:ok" {
		t.Fatalf("route %q", out.Route)
	}
	backoff := 500 * time.Millisecond // backoff(1) at rand 0.5
	if out.Waited != backoff || out.Waits.String() != "backoff 500ms" {
		t.Fatalf("waited %v (%s), want %v of backoff", out.Waited, out.Waits, backoff)
	}
	var got []int64
	for _, r := range rec.recs {
		got = append(got, r.WaitMS)
	}
	if !slices.Equal(got, []int64{0, 0, 0, backoff.Milliseconds()}) {
		t.Fatalf("records' wait_ms %v", got)
	}
}

// A give-up's "last upstream message" is the last thing an upstream said,
// never a local refusal (an open breaker's "not sent").
func TestGiveUpQuotesTheUpstreamNotARefusal(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 1
	cfg.Breaker.Cooldown, cfg.Breaker.MaxCooldown = config.Duration(time.Hour), config.Duration(time.Hour)
	cfg.Retry.Budget = config.Duration(3 * time.Second)
	e, _ := clocked(cfg, WithRand(func() float64 { return 0.5 }))
	out := e.Run(context.Background(), &Call{Request: Request{Model: "gpt-6.1-sol", Type: "openai"}, Send: func(context.Context, *Attempt) Result {
		return Result{Verdict: classify.Verdict{Class: classify.Capacity, Message: "Our servers are currently overloaded. Please try again later."}, Status: 503}
	}})
	want := "spillway: capacity: every model of the chain is at capacity; tried gpt-6.1-sol (capacity, breaker_open), gpt-6-luna (capacity, breaker_open) in 2 attempts; waited 1.5s; last upstream message: Our servers are currently overloaded. Please try again later."
	if out.Committed || out.Reason != want {
		t.Fatalf("reason %q\nwant   %q\nroute %s", out.Reason, want, out.Route)
	}
}
