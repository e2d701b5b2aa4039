package behaviour_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/sim"
	"github.com/spillway/spillway/transport"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// world is one row's upstream (the simulator, or a test server of the
// row's own), configuration, fake clock and engine, and the event records
// its front end wrote.
type world struct {
	t   *testing.T
	sim *sim.Server
	up  string // the upstream's base URL, as a library caller would use it
	cfg *config.Config
	clk *policytest.Clock
	eng *policy.Engine

	mu   sync.Mutex
	recs []events.Record
	// next hands a turn from the test to a row's own upstream
	next chan struct{}
	// serving counts the gateway's requests in its handler; served is
	// signalled as each one returns
	serving atomic.Int32
	served  chan struct{}
}

// servingAtMost waits (in real time, on the gateway's own signal) until at
// most n requests are still in the gateway's handler; a library caller's
// request is over when its call returns, so there it returns at once.
func (w *world) servingAtMost(ctx context.Context, n int32) error {
	for w.serving.Load() > n {
		select {
		case <-w.served:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func newWorld(t *testing.T, r row) *world {
	t.Helper()
	w := &world{t: t, clk: policytest.New(t0), next: make(chan struct{}, 1), served: make(chan struct{}, 64)}
	// the simulator keeps the row's time too: a fault that lasts a minute
	// ends when the fake clock says so
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0, Regions: r.regions, Clock: simClock{w.clk}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	w.sim, w.up = srv, hs.URL
	if r.upstream != nil {
		us := httptest.NewServer(r.upstream(w))
		t.Cleanup(us.Close)
		w.up = us.URL
	}
	cfg := config.Default()
	for name, suffix := range map[string]string{"openai": "/v1", "anthropic": "", "gemini": ""} {
		p := cfg.Providers[name]
		p.BaseURL = w.up + suffix
		cfg.Providers[name] = p
	}
	for _, region := range r.regions { // a provider per region of the simulator: openai-eu, …
		cfg.Providers["openai-"+region] = config.Provider{Type: "openai", BaseURL: w.up + "/" + region + "/v1", Auth: "passthrough"}
	}
	cfg.Pacing = config.Pacing{MaxConcurrency: 8}
	cfg.Retry.Budget = config.Duration(5 * time.Second)
	cfg.Retry.BackoffBase = config.Duration(20 * time.Millisecond)
	cfg.Retry.BackoffMax = config.Duration(100 * time.Millisecond)
	cfg.Retry.NetworkGap = config.Duration(30 * time.Millisecond)
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0 // rows about breakers set their own
	if r.cfg != nil {
		r.cfg(cfg)
	}
	w.cfg = cfg
	w.eng = policy.New(cfg, policy.WithClock(w.clk), policy.WithRand(func() float64 { return 0.5 }))
	for _, f := range r.faults {
		if err := srv.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	for region, fs := range r.regionFaults {
		for _, f := range fs {
			if err := srv.Region(region).AddFault(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// simClock is the fake clock as the simulator's.
type simClock struct{ c *policytest.Clock }

func (s simClock) Now() time.Time { return s.c.Now() }
func (simClock) Factor() float64  { return 1 }

func (w *world) sink() events.Sink {
	return events.SinkFunc(func(rec events.Record) {
		w.mu.Lock()
		w.recs = append(w.recs, rec)
		w.mu.Unlock()
	})
}

func (w *world) records() []events.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]events.Record(nil), w.recs...)
}

// route is the event log's account of the attempts: "model:class > …".
func (w *world) route() string {
	var parts []string
	for _, r := range w.records() {
		name := r.Model
		if r.Deployment != "" {
			name += "@" + r.Deployment
		}
		parts = append(parts, name+":"+r.Class)
	}
	return strings.Join(parts, " > ")
}

// answerRoute is the route in the record of the last attempt whose answer
// reached the client.
func (w *world) answerRoute() string {
	route := ""
	for _, r := range w.records() {
		if r.Route != "" {
			route = r.Route
		}
	}
	return route
}

func (w *world) received(model string) int {
	if st := w.sim.Snapshot().Models[model]; st != nil {
		return st.Received
	}
	return 0
}

// waitReceived waits (in real time) until the simulator has received n
// requests for model: the attempt is in flight, past where a watchdog can
// cancel it before the simulator takes its fault.
func (w *world) waitReceived(ctx context.Context, model string, n int) {
	for w.received(model) < n {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Millisecond):
		}
	}
}

type call = behaviour.Call

var (
	chat      = behaviour.Chat
	responses = behaviour.Responses
	messages  = behaviour.Messages
	gemini    = behaviour.Gemini
	text      = behaviour.Text
)

// frontEnd is a way into the driver: it sends a call and returns what the
// client got.
type frontEnd struct {
	name string
	// start builds the front end on w and returns how to send through it.
	start func(t *testing.T, w *world) func(ctx context.Context, c call) (*http.Response, error)
}

var frontEnds = []frontEnd{
	{"gateway", func(t *testing.T, w *world) func(context.Context, call) (*http.Response, error) {
		gw, err := gateway.New(gateway.Options{Config: w.cfg, Engine: w.eng, Events: w.sink(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		h := gw.Handler()
		hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.serving.Add(1)
			defer func() {
				w.serving.Add(-1)
				select {
				case w.served <- struct{}{}:
				default:
				}
			}()
			h.ServeHTTP(rw, r)
		}))
		t.Cleanup(hs.Close)
		client := &http.Client{Transport: &http.Transport{}}
		t.Cleanup(client.CloseIdleConnections)
		return func(ctx context.Context, c call) (*http.Response, error) { return sendCall(ctx, client, hs.URL, c) }
	}},
	{"library", func(t *testing.T, w *world) func(context.Context, call) (*http.Response, error) {
		tr := transport.New(w.cfg, transport.WithEngine(w.eng), transport.WithEvents(w.sink()))
		t.Cleanup(tr.CloseIdleConnections)
		client := &http.Client{Transport: tr}
		return func(ctx context.Context, c call) (*http.Response, error) { return sendCall(ctx, client, w.up, c) }
	}},
}

func sendCall(ctx context.Context, client *http.Client, base string, c call) (*http.Response, error) {
	req, err := c.Request(ctx, base)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// result is what a client got: the answer, its body, and the error of the
// request or of reading the body.
type result struct {
	resp *http.Response
	body []byte
	err  error
}

func do(ctx context.Context, send func(context.Context, call) (*http.Response, error), c call) result {
	resp, err := send(ctx, c)
	if err != nil {
		return result{err: err}
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return result{resp: resp, body: b, err: err}
}

// row is one behaviour.
type row struct {
	name   string
	cfg    func(*config.Config)
	faults []sim.Fault
	// regions serve the models again under /region/, each the provider
	// openai-REGION: deployments; regionFaults are their faults
	regions      []string
	regionFaults map[string][]sim.Fault
	upstream     func(w *world) http.Handler // instead of the simulator
	call         call
	// tick runs while the request is in flight: it moves the fake clock
	// where a watchdog must fire.
	tick func(ctx context.Context, w *world)
	want want
	// run replaces the one call for behaviours that take several.
	run func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error))
	// exec is the behaviour under spillway exec with a fake agent, where
	// it applies.
	exec *execWant
	// only names the one front end a behaviour is of ("gateway"), when
	// the others do otherwise (and have a row of their own)
	only string
}

// want is what the client and the event log must show.
type want struct {
	status int
	model  string // X-Spillway-Model; "" for none
	route  string // X-Spillway-Route (a stream's last word), and the event log's route
	// header is a stream's X-Spillway-Route, when it is not route with its
	// last hop "streaming" (the headers went out before a continuation or
	// a hedge's loser joined the route)
	header string
	// logRoute is the event log's route when it is not route: a hop
	// refused before it was sent (a model passed over for the request's
	// size) is in the route, and no attempt
	logRoute string
	attempts int    // X-Spillway-Attempts
	text     string // the answer's text
	// class is the class of the answer the client got when it failed.
	class classify.Class
	// body and notBody are what the body must and must not hold.
	body, notBody []string
	// broken: output started and then the stream broke. The gateway ends
	// it with the protocol's error event; a library caller's read fails.
	broken bool
	check  func(t *testing.T, w *world, res result)
}

func (r row) verify(t *testing.T, fe string, w *world, res result) {
	t.Helper()
	wt := r.want
	if wt.broken {
		var bs *send.BrokenStream
		switch fe {
		case "gateway":
			if res.err != nil || !bytes.Contains(res.body, []byte("spillway: ")) {
				t.Fatalf("err %v; a broken stream must end with the protocol's error event:\n%s", res.err, res.body)
			}
		case "library":
			if !errors.Is(res.err, io.ErrUnexpectedEOF) || !errors.As(res.err, &bs) {
				t.Fatalf("read error %v, want a *BrokenStream and io.ErrUnexpectedEOF; body:\n%s", res.err, res.body)
			}
		}
		for _, done := range []string{"response.completed", "message_stop", "[DONE]"} {
			if bytes.Contains(res.body, []byte(done)) {
				t.Fatalf("a broken stream carries %s:\n%s", done, res.body)
			}
		}
	} else if res.err != nil {
		t.Fatalf("%v (body so far %q)", res.err, res.body)
	}
	if res.resp == nil {
		t.Fatal("no answer")
	}
	h := res.resp.Header
	if wt.status != 0 && res.resp.StatusCode != wt.status {
		t.Fatalf("status %d, want %d: %s", res.resp.StatusCode, wt.status, clip(res.body))
	}
	if got := h.Get("X-Spillway-Model"); got != wt.model {
		t.Fatalf("X-Spillway-Model %q, want %q (route %q)", got, wt.model, h.Get("X-Spillway-Route"))
	}
	if wt.route != "" {
		if got := h.Get("X-Spillway-Route"); strings.HasSuffix(got, ":streaming") {
			// a stream's headers went out with its first output, before
			// anyone knew how it ends: they say so, and its last word
			// (a comment before its final event) gives the route
			want := wt.route[:strings.LastIndex(wt.route, ":")] + ":streaming"
			if wt.header != "" {
				want = wt.header
			}
			if got != want {
				t.Fatalf("X-Spillway-Route %q, want %q", got, want)
			}
			if final := send.FinalRoute(res.body); final != wt.route && !strings.Contains(r.call.Path, "/v1beta/") {
				// (a Gemini stream has no last word: its SDK fails on
				// SSE comments)
				t.Fatalf("the stream's last word says route %q, want %q:\n%s", final, wt.route, clip(res.body))
			}
		} else if got != wt.route {
			t.Fatalf("X-Spillway-Route %q, want %q", got, wt.route)
		}
		// refusals are not logged, and a race's loser is logged as what
		// it is to the model (unknown), not as the route's hedge_lost
		switch {
		case wt.logRoute != "":
			if got := w.route(); got != wt.logRoute {
				t.Fatalf("event log route %q, want %q", got, wt.logRoute)
			}
		case !strings.Contains(wt.route, "breaker_open") && !strings.Contains(wt.route, "no_slot") && !strings.Contains(wt.route, "hedge_lost"):
			if got := w.route(); got != wt.route {
				t.Fatalf("event log route %q, want %q", got, wt.route)
			}
		}
		// the attempt whose answer reached the client says the route in
		// its record
		if got := w.answerRoute(); wt.model != "" && got != wt.route {
			t.Fatalf("the answer's record says route %q, want %q", got, wt.route)
		}
	}
	if wt.attempts != 0 && h.Get("X-Spillway-Attempts") != fmt.Sprint(wt.attempts) {
		t.Fatalf("X-Spillway-Attempts %q, want %d", h.Get("X-Spillway-Attempts"), wt.attempts)
	}
	if wt.text != "" && text(res.body) != wt.text {
		t.Fatalf("answer %q, want %q", text(res.body), wt.text)
	}
	if wt.class != "" {
		if v := classify.HTTP(res.resp.StatusCode, h, res.body); v.Class != wt.class {
			t.Fatalf("the client's answer is %s, want %s: %d %s", v.Class, wt.class, res.resp.StatusCode, clip(res.body))
		}
		if h.Get("X-Should-Retry") != "false" {
			t.Fatal("a failure after spillway's retries must tell SDKs not to retry")
		}
	}
	for _, s := range wt.body {
		if !bytes.Contains(res.body, []byte(s)) {
			t.Fatalf("the body lacks %q:\n%s", s, clip(res.body))
		}
	}
	for _, s := range wt.notBody {
		if bytes.Contains(res.body, []byte(s)) {
			t.Fatalf("the body holds %q:\n%s", s, clip(res.body))
		}
	}
	if id := h.Get("X-Spillway-Request-Id"); id == "" {
		t.Fatal("no X-Spillway-Request-Id")
	} else {
		for _, rec := range w.records() {
			if rec.RequestID != id {
				t.Fatalf("record of request %s, answer of %s", rec.RequestID, id)
			}
		}
	}
	if wt.check != nil {
		wt.check(t, w, res)
	}
}

// open sends c and returns the answer as soon as its headers came, its
// body unread; the test's end closes it.
func open(t *testing.T, send func(context.Context, call) (*http.Response, error), c call) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	resp, err := send(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// waits is the wait before each attempt, from the event log.
func waits(w *world) []time.Duration {
	var out []time.Duration
	for _, r := range w.records() {
		out = append(out, time.Duration(r.WaitMS)*time.Millisecond)
	}
	return out
}

func TestBehaviours(t *testing.T) {
	rows := slices.Concat(capacityRows(), behaviourRows(), deploymentRows(), failureRows(), streamRows(), answerRows(), strictRows(), crossRows())
	for _, fe := range frontEnds {
		t.Run(fe.name, func(t *testing.T) {
			for _, r := range rows {
				if r.only != "" && r.only != fe.name {
					continue
				}
				t.Run(r.name, func(t *testing.T) {
					w := newWorld(t, r)
					send := fe.start(t, w)
					if r.run != nil {
						r.run(t, w, send)
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if r.tick != nil {
						go r.tick(ctx, w)
					}
					r.verify(t, fe.name, w, do(ctx, send, r.call))
				})
			}
		})
	}
}

// capacityRows: the heavy model is full; every kind of request completes
// on the next model, and the client never sees the capacity error
// (response.failed or event: error before output included).
func capacityRows() []row {
	cases := []struct {
		name         string
		c            call
		heavy, next  string
		style        string
		exec         bool
		extraNotBody []string
	}{
		{"chat", chat("gpt-6-astra", "hi", false), "gpt-6-astra", "gpt-6.1-sol", "", true, nil},
		{"chat stream", chat("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", "", false, nil},
		{"chat stream, an error chunk", chat("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", "event", false, nil},
		{"responses", responses("gpt-6-astra", "hi", false), "gpt-6-astra", "gpt-6.1-sol", "", false, nil},
		{"responses stream, response.failed after response.created", responses("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", "", false, nil},
		{"responses stream, a 503", responses("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", "status", false, nil},
		{"messages", messages("claude-opus-5-5", "hi", false), "claude-opus-5-5", "claude-sonnet-5-5", "", false, nil},
		{"messages stream, a 529", messages("claude-opus-5-5", "hi", true), "claude-opus-5-5", "claude-sonnet-5-5", "", false, nil},
		{"messages stream, event: error before the first block", messages("claude-opus-5-5", "hi", true), "claude-opus-5-5", "claude-sonnet-5-5", "event", false, nil},
	}
	var rows []row
	for _, c := range cases {
		r := row{
			name:   "capacity falls back: " + c.name,
			faults: []sim.Fault{{Model: c.heavy, Kind: "capacity", Count: -1, Style: c.style}},
			call:   c.c,
			want: want{status: 200, model: c.next, route: c.heavy + ":capacity > " + c.next + ":ok", attempts: 2,
				text: sim.Answer(c.next, "hi", 16), notBody: []string{"overloaded", "response.failed", "event: error", `"error":{`},
				check: func(t *testing.T, w *world, _ result) {
					recs := w.records()
					if recs[1].FallbackFrom != c.heavy || recs[1].RequestedModel != c.heavy || recs[1].Status != 200 || recs[0].WaitMS != 0 {
						t.Fatalf("records %+v", recs)
					}
					if len(w.clk.Slept()) != 0 {
						t.Fatalf("a fallback to a free model waited: %v", w.clk.Slept())
					}
				}},
		}
		if c.exec {
			r.exec = &execWant{models: "gpt-6-astra,gpt-6.1-sol,gpt-6-luna", exit: 0, route: "gpt-6-astra:capacity > gpt-6.1-sol:ok"}
		}
		rows = append(rows, r)
	}
	return rows
}

func behaviourRows() []row {
	three, zero := 3, 0
	allFull := []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1}, {Model: "gpt-6.1-sol", Kind: "capacity", Count: -1}, {Model: "gpt-6-luna", Kind: "capacity", Count: -1}}
	return []row{
		{
			name:   "min tier: never below it",
			faults: allFull[:2],
			cfg:    func(c *config.Config) { c.Retry.Budget = config.Duration(300 * time.Millisecond) },
			call:   chat("gpt-6-astra", "hi", false).With("X-Spillway-Min-Tier", "medium"),
			want: want{status: 503, class: classify.Capacity, body: []string{"gpt-6-astra (capacity)", "gpt-6.1-sol (capacity)", "waited"}, notBody: []string{"gpt-6-luna ("},
				check: func(t *testing.T, w *world, _ result) {
					if w.received("gpt-6-luna") != 0 {
						t.Fatal("a request with min tier medium reached a light model")
					}
				}},
		},
		{
			name:   "no fallback: the named model only",
			faults: allFull[:1],
			cfg:    func(c *config.Config) { c.Retry.Budget = config.Duration(300 * time.Millisecond) },
			call:   chat("gpt-6-astra", "hi", false).With("X-Spillway-No-Fallback", "1"),
			want: want{status: 503, class: classify.Capacity, check: func(t *testing.T, w *world, _ result) {
				for _, r := range w.records() {
					if r.Model != "gpt-6-astra" {
						t.Fatalf("a no-fallback request went to %s", r.Model)
					}
				}
			}},
			exec: &execWant{models: "gpt-6-astra", exit: 1, ladder: []time.Duration{}, budget: 300 * time.Millisecond},
		},
		{
			name:   "Retry-After is a floor on the capacity backoff",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "capacity", Count: 1, RetryAfter: 0.3}},
			call:   chat("gpt-6-luna", "hi", false),
			want: want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:capacity > gpt-6-luna:ok", attempts: 2,
				check: func(t *testing.T, w *world, _ result) {
					if got := waits(w); got[1] != 300*time.Millisecond {
						t.Fatalf("waits %v, want the 300ms Retry-After before the second attempt", got)
					}
				}},
		},
		{
			name:   "rate limit: the same model after its Retry-After",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "rate_limit", Count: 1, RetryAfter: 0.4}},
			call:   chat("gpt-6-luna", "hi", false),
			want: want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:rate_limit > gpt-6-luna:ok", attempts: 2,
				check: func(t *testing.T, w *world, _ result) {
					if got := waits(w); got[1] != 400*time.Millisecond || w.received("gpt-6-luna") != 2 {
						t.Fatalf("waits %v, received %d", got, w.received("gpt-6-luna"))
					}
					if gap := w.records()[1].TS.Sub(w.records()[0].TS); gap < 400*time.Millisecond {
						t.Fatalf("the second attempt came %v after the first", gap)
					}
				}},
			exec: &execWant{models: "gpt-6-luna", exit: 0, route: "gpt-6-luna:rate_limit > gpt-6-luna:ok"},
		},
		{
			name:   "the budget bounds every wait: every model full",
			faults: allFull,
			cfg:    func(c *config.Config) { c.Retry.Budget = config.Duration(600 * time.Millisecond) },
			call:   responses("gpt-6-astra", "hi", false),
			want: want{status: 503, class: classify.Capacity, body: []string{"tried gpt-6-astra (capacity), gpt-6.1-sol (capacity), gpt-6-luna (capacity)", "waited"},
				check: func(t *testing.T, w *world, _ result) {
					var total time.Duration
					walks := 0
					for i, r := range w.records() {
						total += time.Duration(r.WaitMS) * time.Millisecond
						if i > 0 && r.Model == "gpt-6-astra" {
							walks++
							if r.WaitMS < 5 { // backoff_base 20ms / 4
								t.Fatalf("a new walk of the chain started with no wait: %+v", r)
							}
						}
					}
					if total > 600*time.Millisecond || walks == 0 || len(w.records()) != 3*(walks+1) {
						t.Fatalf("waited %v in %d walks, %d attempts", total, walks, len(w.records()))
					}
				}},
			exec: &execWant{models: "gpt-6-astra,gpt-6.1-sol,gpt-6-luna", exit: 75, ladder: []time.Duration{time.Second, 2 * time.Second},
				stderr: "global outage", route: "gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity > gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity > gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity"},
		},
		{
			name:   "network: fixed retries on the same model",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "reset", Count: 2}},
			call:   chat("gpt-6-astra", "hi", false),
			want: want{status: 200, model: "gpt-6-astra", route: "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:ok", attempts: 3,
				check: func(t *testing.T, w *world, _ result) {
					if got := waits(w); got[1] != 30*time.Millisecond || got[2] != 30*time.Millisecond {
						t.Fatalf("waits %v, want retry.network_gap before each retry", got)
					}
				}},
			exec: &execWant{models: "gpt-6-astra,gpt-6.1-sol", exit: 0, route: "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:ok"},
		},
		{
			name:   "network: a failure that persists is never a model switch",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "reset", Count: -1}},
			call:   chat("gpt-6-astra", "hi", false),
			want: want{status: 502, class: classify.Network, route: "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network",
				body: []string{"network failures persisted after 3 retries"}},
		},
		{
			name:   "quota fails at once with the provider's own answer",
			faults: []sim.Fault{{Model: "*", Kind: "quota", Count: -1}},
			call:   chat("gpt-6-astra", "hi", false),
			want:   want{status: 429, class: classify.Quota, route: "gpt-6-astra:quota", attempts: 1, body: []string{"insufficient_quota"}, notBody: []string{"spillway"}},
			exec:   &execWant{models: "gpt-6-astra,gpt-6.1-sol", exit: 77, route: "gpt-6-astra:quota"},
		},
		{
			name:   "auth fails at once with the provider's own answer",
			faults: []sim.Fault{{Model: "*", Kind: "auth", Count: -1}},
			call:   chat("gpt-6-astra", "hi", false),
			want:   want{status: 401, class: classify.Auth, route: "gpt-6-astra:auth", attempts: 1, body: []string{"invalid_api_key"}, notBody: []string{"spillway"}},
			exec:   &execWant{models: "gpt-6-astra,gpt-6.1-sol", exit: 77, route: "gpt-6-astra:auth"},
		},
		{
			name:     "bad_request fails at once with the provider's own answer",
			upstream: fixed(400, `{"error":{"message":"Invalid value for 'temperature': must be at most 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`),
			call:     chat("gpt-6-astra", "hi", false),
			want:     want{status: 400, class: classify.BadRequest, route: "gpt-6-astra:bad_request", attempts: 1, body: []string{"Invalid value for 'temperature'"}, notBody: []string{"spillway"}},
		},
		{
			name:     "content_filter fails at once with the provider's own answer",
			upstream: fixed(400, `{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`),
			call:     chat("gpt-6-astra", "hi", false),
			want:     want{status: 400, class: classify.ContentFilter, route: "gpt-6-astra:content_filter", attempts: 1, body: []string{"safety system"}, notBody: []string{"spillway"}},
		},
		{
			// ~375k tokens by the simulator's count and by spillway's
			// estimate (a fourth of the bytes): over 272k, under 500k
			name: "context length: a request too large for the model starts where it fits",
			cfg:  func(c *config.Config) { c.Chains["codex"] = []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra"} },
			call: chat("gpt-6-astra", strings.Repeat("word ", 300000), false),
			// the models passed over for its size are refused hops, not attempts
			want: want{status: 200, model: "gpt-6.1-terra", route: "gpt-6-astra:context_length > gpt-6.1-sol:context_length > gpt-6.1-terra:ok",
				logRoute: "gpt-6.1-terra:ok", attempts: 1, check: func(t *testing.T, w *world, _ result) {
					if rec := w.records()[0]; rec.FallbackFrom != "gpt-6-astra" {
						t.Fatalf("record %+v: the answer fell back from gpt-6-astra", rec)
					}
				}},
		},
		{
			// the estimate says it fits; the model says it does not
			name: "context length: the next model with a larger window",
			cfg: func(c *config.Config) {
				c.Chains["codex"] = []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra"}
				for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol"} {
					mm := c.Models[m]
					mm.Context = 400000
					c.Models[m] = mm
				}
				mm := c.Models["gpt-6.1-terra"]
				mm.Context = 500000
				c.Models["gpt-6.1-terra"] = mm
			},
			call: chat("gpt-6-astra", strings.Repeat("word ", 300000), false),
			// (gpt-6.1-sol's window is no larger than the one that said
			// no: passed over)
			want: want{status: 200, model: "gpt-6.1-terra", route: "gpt-6-astra:context_length > gpt-6.1-sol:context_length > gpt-6.1-terra:ok",
				logRoute: "gpt-6-astra:context_length > gpt-6.1-terra:ok"},
		},
		{
			name: "context length: no larger window, the requested model's provider's own answer",
			call: chat("gpt-6-astra", strings.Repeat("word ", 300000), false),
			want: want{status: 400, class: classify.ContextLength, route: "gpt-6-astra:context_length", body: []string{"maximum context length"}},
		},
		{
			name: "model not found: skipped",
			cfg: func(c *config.Config) {
				c.Models["gpt-ghost"] = config.Model{Provider: "openai", Tier: config.Heavy, Context: 272000}
				c.Chains["codex"] = []string{"gpt-ghost", "gpt-6.1-sol", "gpt-6-luna"}
			},
			call: chat("gpt-ghost", "hi", false),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-ghost:model_not_found > gpt-6.1-sol:ok"},
		},
		{
			name:   "server error: one short retry, then as capacity",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "server_error", Count: -1}},
			call:   chat("gpt-6-astra", "hi", false),
			want:   want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:server_error > gpt-6-astra:server_error > gpt-6.1-sol:ok"},
		},
		{
			// a silent model is left at once (retry.timeout_retries: 0),
			// though its timeout took more than the 5s wait budget
			name:   "header watchdog: no response headers, a timeout before any byte, then the next model",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "stall", Count: -1}}, // accepts, then says nothing at all
			call:   responses("gpt-6-astra", "hi", true),
			tick:   advanceWhenReceived("gpt-6-astra", 30*time.Second),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:timeout > gpt-6.1-sol:ok", text: sim.Answer("gpt-6.1-sol", "hi", 16),
				check: errorSays(0, "no response headers within 30s (timeouts.header)")},
		},
		{
			name:   "header watchdog: a model's own header_timeout; timeout retries when configured",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "stall", Count: 1}},
			cfg: func(c *config.Config) {
				m := c.Models["gpt-6-luna"]
				m.HeaderTimeout = config.Duration(12 * time.Second)
				c.Models["gpt-6-luna"] = m
				c.Retry.TimeoutRetries = 1
				c.Retry.Budget = config.Duration(time.Minute) // a retry after 12s of silence fits
			},
			call: responses("gpt-6-luna", "hi", true),
			tick: advanceWhenReceived("gpt-6-luna", 12*time.Second),
			want: want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:timeout > gpt-6-luna:ok", text: sim.Answer("gpt-6-luna", "hi", 16),
				check: errorSays(0, "no response headers within 12s (models.gpt-6-luna.header_timeout)")},
		},
		{
			name:   "request watchdog: a whole answer's headers may take timeouts.request",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "stall", Count: 1}},
			cfg:    func(c *config.Config) { c.Timeouts.Request = config.Duration(5 * time.Minute) },
			call:   chat("gpt-6-astra", "hi", false),
			tick:   advanceWhenReceived("gpt-6-astra", 5*time.Minute),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:timeout > gpt-6.1-sol:ok",
				check: errorSays(0, "no answer within 5m0s (timeouts.request")},
		},
		{
			name:   "first-token watchdog: opening events, then silence: the next model before the client sees a byte",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "stall", AfterTokens: &zero, Count: 1}},
			cfg: func(c *config.Config) {
				// a header limit of another length: the tick fires the first-token one
				c.Timeouts.Header, c.Timeouts.FirstToken = config.Duration(20*time.Second), config.Duration(30*time.Second)
			},
			call: responses("gpt-6-astra", "hi", true),
			tick: advanceWhenReceived("gpt-6-astra", 30*time.Second),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:timeout > gpt-6.1-sol:ok", text: sim.Answer("gpt-6.1-sol", "hi", 16),
				check: func(t *testing.T, w *world, res result) {
					if n := bytes.Count(res.body, []byte("event: response.created")); n != 1 {
						t.Fatalf("the client saw %d response.created events", n)
					}
				}},
		},
		{
			// (with first_token 0 the silence before the first output is
			// idle's to watch: all three must be off)
			name: "header, first-token and idle watchdogs: zero turns them off",
			cfg:  func(c *config.Config) { c.Timeouts.Header, c.Timeouts.FirstToken, c.Timeouts.Idle = 0, 0, 0 },
			upstream: func(w *world) http.Handler {
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(rw, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
					rw.(http.Flusher).Flush()
					w.clk.Advance(24 * time.Hour) // a day with no output: nothing may fire
					fmt.Fprint(rw, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"late\"}\n\n")
					fmt.Fprint(rw, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":1}}}\n\n")
				})
			},
			call: responses("gpt-6-luna", "hi", true),
			want: want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:ok", text: "late"},
		},
		{
			name:     "idle watchdog: a whole answer that stalls midway is retried (retry.timeout_retries: 1)",
			upstream: stallsOnce(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"completion_tokens":1}}`),
			cfg:      func(c *config.Config) { c.Retry.TimeoutRetries, c.Retry.Budget = 1, config.Duration(10*time.Minute) },
			call:     chat("gpt-6-luna", "hi", false),
			tick:     fireIdle(2 * time.Minute),
			want:     want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:timeout > gpt-6-luna:ok", text: "whole", check: errorSays(0, "the answer stalled for 2m0s")},
		},
		{
			name:   "idle watchdog: a stream that goes silent after output ends as a broken stream",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "stall", AfterTokens: &three}},
			// a first-token limit of its own, so that the only watchdog due
			// after timeouts.idle is the one armed at the first output
			cfg:  func(c *config.Config) { c.Timeouts.FirstToken = config.Duration(30 * time.Second) },
			call: responses("gpt-6-luna", "hi", true),
			tick: fireIdle(2 * time.Minute),
			want: want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:timeout", check: errorSays(0, "went silent for 2m0s")},
		},
		{
			name:   "broken stream: responses reset after output",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three}},
			call:   responses("gpt-6-luna", "hi", true),
			want:   want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:network", body: []string{"["}},
		},
		{
			name:   "broken stream: messages reset after output",
			only:   "library", // the gateway continues it (streamRows)
			faults: []sim.Fault{{Model: "claude-haiku-5-5", Kind: "reset", AfterTokens: &three}},
			call:   messages("claude-haiku-5-5", "hi", true),
			want:   want{status: 200, model: "claude-haiku-5-5", broken: true, route: "claude-haiku-5-5:network", body: []string{"["}},
		},
		{
			name:   "broken stream: chat reset after output",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three}},
			call:   chat("gpt-6-luna", "hi", true),
			want:   want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:network", body: []string{"["}},
		},
		{
			name: "broken stream: a clean end without the final event",
			upstream: func(w *world) http.Handler {
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(rw, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
					fmt.Fprint(rw, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"half\"}\n\n")
				})
			},
			call: responses("gpt-6-luna", "hi", true),
			want: want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:network", body: []string{"half"}},
		},
		{
			// a library caller's stream is not continued: it reads the
			// provider's own event (the gateway continues a Messages
			// answer: streamRows)
			name:   "an overload after output passes through as the provider's event",
			only:   "library",
			faults: []sim.Fault{{Model: "claude-haiku-5-5", Kind: "midstream"}},
			call:   messages("claude-haiku-5-5", "hi", true),
			want: want{status: 200, model: "claude-haiku-5-5", body: []string{"overloaded_error"}, notBody: []string{"message_stop"},
				check: func(t *testing.T, w *world, _ result) {
					// the headers went out with the first output; the record says how it ended
					if got := w.route(); got != "claude-haiku-5-5:capacity" {
						t.Fatalf("event log route %q", got)
					}
				}},
		},
		{
			name:   "an overload after output passes through as the provider's event (a Responses stream)",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "midstream"}},
			call:   responses("gpt-6-luna", "hi", true),
			want:   want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:capacity", body: []string{"response.failed", "server_is_overloaded"}, notBody: []string{"response.completed"}},
		},
		{
			name:   "X-Spillway-Budget: the configured budget runs out",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "capacity", Count: 4}},
			cfg:    budgetCfg,
			call:   chat("gpt-6-luna", "hi", false),
			want:   want{status: 503, class: classify.Capacity},
		},
		{
			name:   "X-Spillway-Budget: a client's longer budget waits it out",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "capacity", Count: 4}},
			cfg:    budgetCfg,
			call:   chat("gpt-6-luna", "hi", false).With("X-Spillway-Budget", "20s"),
			want: want{status: 200, model: "gpt-6-luna", attempts: 5, check: func(t *testing.T, w *world, _ result) {
				if w.received("gpt-6-luna") != 5 {
					t.Fatalf("the simulator saw %d attempts, want 5", w.received("gpt-6-luna"))
				}
			}},
		},
		{
			name:   "X-Spillway-Budget: a client's shorter budget fails sooner",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "capacity", Count: 4}},
			cfg:    budgetCfg,
			call:   chat("gpt-6-luna", "hi", false).With("X-Spillway-Budget", "1ms"),
			want: want{status: 503, class: classify.Capacity, route: "gpt-6-luna:capacity", check: func(t *testing.T, w *world, _ result) {
				if len(w.clk.Slept()) != 0 {
					t.Fatalf("waited %v on a 1ms budget", w.clk.Slept())
				}
			}},
		},
		{
			name: "X-Spillway-Budget: a bad value is refused before anything is sent",
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				res := do(context.Background(), send, chat("gpt-6-luna", "hi", false).With("X-Spillway-Budget", "soon"))
				if res.err == nil && res.resp.StatusCode != 400 || !strings.Contains(fmt.Sprint(res.err)+string(res.body), `X-Spillway-Budget: \"soon\"`) &&
					!strings.Contains(fmt.Sprint(res.err)+string(res.body), `X-Spillway-Budget: "soon"`) {
					t.Fatalf("%v %v %s", res.err, res.resp, res.body)
				}
				if w.received("gpt-6-luna") != 0 || len(w.records()) != 0 {
					t.Fatal("a request with a bad header was sent")
				}
			},
		},
		{
			name: "giving up: spillway's own error, naming what was tried",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1}, {Model: "gpt-6.1-sol", Kind: "reset", Count: -1},
				{Model: "gpt-6-luna", Kind: "capacity", Count: -1}},
			// no budget for a retry of sol; its provider just answered
			// astra, so sol's reset is sol's problem: on to luna
			cfg:  func(c *config.Config) { c.Retry.Budget = config.Duration(0) },
			call: chat("gpt-6-astra", "hi", false),
			want: want{status: 503, class: classify.Capacity, model: "", body: []string{"spillway: capacity", "tried gpt-6-astra (capacity), gpt-6.1-sol (network), gpt-6-luna (capacity)"},
				check: func(t *testing.T, w *world, res result) {
					if res.resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:capacity > gpt-6.1-sol:network > gpt-6-luna:capacity" {
						t.Fatalf("route %q", res.resp.Header.Get("X-Spillway-Route"))
					}
				}},
		},
		{
			name: "pacing, when: always: starts min_gap apart, at most max_concurrency at once",
			cfg: func(c *config.Config) {
				c.Pacing = config.Pacing{MinGap: config.Duration(80 * time.Millisecond), MaxConcurrency: 2, When: config.PaceAlways}
			},
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "slow", Count: -1, DelayMS: 3}},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				var wg sync.WaitGroup
				for i := 0; i < 6; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if res := do(context.Background(), send, chat("gpt-6-luna", "pace", true)); res.err != nil || res.resp.StatusCode != 200 {
							t.Errorf("%v %v", res.err, res.resp)
						}
					}()
				}
				wg.Wait()
				st := w.sim.Snapshot().Models["gpt-6-luna"]
				if st.PeakConcurrency > 2 || st.Served != 6 {
					t.Fatalf("peak concurrency %d (limit 2), served %d", st.PeakConcurrency, st.Served)
				}
				var starts []time.Time
				for _, r := range w.records() {
					starts = append(starts, r.TS)
				}
				slices.SortFunc(starts, time.Time.Compare)
				for i := 1; i < len(starts); i++ {
					if gap := starts[i].Sub(starts[i-1]); gap < 80*time.Millisecond {
						t.Fatalf("starts %d and %d were %v apart (min_gap 80ms)", i-1, i, gap)
					}
				}
			},
		},
		{
			name: "a pacing slot is waited for no longer than the budget",
			cfg: func(c *config.Config) {
				c.Pacing = config.Pacing{MaxConcurrency: 1, When: config.PaceAlways}
				c.Retry.Budget = config.Duration(time.Second)
			},
			upstream: holdsAStream,
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				open(t, send, responses("gpt-6-luna", "hold", true)) // holds luna's only slot
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				go func() {
					// the first stream's idle watchdog, and the second's wait for a slot
					if w.clk.BlockUntil(ctx, 2) == nil {
						w.clk.Advance(time.Second)
					}
				}()
				res := do(ctx, send, chat("gpt-6-luna", "wait", false).With("X-Spillway-No-Fallback", "1"))
				if res.err != nil || res.resp.StatusCode != 503 || !strings.HasPrefix(res.resp.Header.Get("X-Spillway-Route"), "gpt-6-luna:no_slot") ||
					res.resp.Header.Get("X-Spillway-Attempts") != "0" {
					t.Fatalf("%v %v %s", res.err, res.resp, res.body)
				}
				if n := len(w.records()); n != 0 {
					t.Fatalf("%d records: a request that never got a slot is not an attempt", n)
				}
			},
		},
		{
			name: "held opening events are capped at 1 MiB",
			upstream: func(w *world) http.Handler {
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					openingPastTheHoldLimit(rw)
					rw.(http.Flusher).Flush()
					<-r.Context().Done() // no output, ever
				})
			},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				resp := open(t, send, responses("gpt-6-luna", "hi", true))
				// the opening events reach the client while the upstream
				// still has given no output: holding stopped at 1 MiB
				got, err := io.ReadFull(resp.Body, make([]byte, 1<<20))
				if err != nil || resp.StatusCode != 200 || got != 1<<20 {
					t.Fatalf("read %d bytes: %v (status %d)", got, err, resp.StatusCode)
				}
			},
		},
		{
			// the output that follows opening events past the hold limit
			// is the stream's first: the first-token watchdog stops there
			name: "output after opening events past the hold limit keeps the stream alive",
			cfg:  func(c *config.Config) { c.Timeouts.FirstToken = config.Duration(30 * time.Second) },
			upstream: func(w *world) http.Handler {
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					openingPastTheHoldLimit(rw)
					fmt.Fprint(rw, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"late\"}\n\n")
					rw.(http.Flusher).Flush()
					select {
					case <-w.next:
					case <-r.Context().Done():
						return
					}
					fmt.Fprint(rw, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":1}}}\n\n")
				})
			},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				resp := open(t, send, responses("gpt-6-luna", "hi", true))
				var got bytes.Buffer
				buf := make([]byte, 64<<10)
				for !strings.Contains(got.String(), `"delta":"late"`) {
					n, err := resp.Body.Read(buf)
					got.Write(buf[:n])
					if err != nil {
						t.Fatalf("%v after %d bytes", err, got.Len())
					}
				}
				w.clk.Advance(45 * time.Second) // past the first-token timeout, within the idle one
				w.next <- struct{}{}
				rest, err := io.ReadAll(resp.Body)
				if err != nil || !bytes.Contains(rest, []byte("response.completed")) || bytes.Contains(rest, []byte("response.failed")) {
					t.Fatalf("%v: %s", err, rest)
				}
				if recs := w.records(); len(recs) != 1 || recs[0].Class != "ok" {
					t.Fatalf("records %+v", recs)
				}
			},
		},
		{
			name:   "breaker: an open breaker sends new requests one tier down until its probe",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: 1}},
			cfg: func(c *config.Config) {
				c.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(10 * time.Second), MaxCooldown: config.Duration(10 * time.Second)}
			},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				ctx := context.Background()
				routeOf := func(prompt string) string {
					t.Helper()
					res := do(ctx, send, chat("gpt-6-astra", prompt, false))
					if res.err != nil || res.resp.StatusCode != 200 {
						t.Fatalf("%v %v", res.err, res.resp)
					}
					return res.resp.Header.Get("X-Spillway-Route") + " (" + res.resp.Header.Get("X-Spillway-Attempts") + ")"
				}
				if got := routeOf("a"); got != "gpt-6-astra:capacity > gpt-6.1-sol:ok (2)" {
					t.Fatalf("first: %s", got)
				}
				if got := routeOf("b"); got != "gpt-6-astra:breaker_open > gpt-6.1-sol:ok (1)" || w.received("gpt-6-astra") != 1 {
					t.Fatalf("while open: %s, heavy received %d", got, w.received("gpt-6-astra"))
				}
				if st := w.eng.BreakerStates()["openai/gpt-6-astra"]; st != "open" {
					t.Fatalf("breaker %s", st)
				}
				w.clk.Advance(10 * time.Second)
				if got := routeOf("c"); got != "gpt-6-astra:ok (1)" {
					t.Fatalf("the probe after the cooldown: %s", got)
				}
				if st := w.eng.BreakerStates()["openai/gpt-6-astra"]; st != "closed" {
					t.Fatalf("breaker after a good probe: %s", st)
				}
			},
		},
		{
			name:   "breaker: a refusal is not an attempt",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: 1}},
			cfg: func(c *config.Config) {
				c.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute), MaxCooldown: config.Duration(time.Minute)}
				c.Retry.Budget = config.Duration(300 * time.Millisecond)
			},
			call: chat("gpt-6-astra", "hi", false).With("X-Spillway-Min-Tier", "heavy"),
			want: want{status: 503, class: classify.Capacity, attempts: 1, body: []string{"in 1 attempt;"}, check: func(t *testing.T, w *world, res result) {
				if route := res.resp.Header.Get("X-Spillway-Route"); !strings.HasPrefix(route, "gpt-6-astra:capacity > gpt-6-astra:breaker_open") {
					t.Fatalf("route %q", route)
				}
				if w.received("gpt-6-astra") != 1 || len(w.records()) != 1 {
					t.Fatalf("received %d, records %d: refusals reached the upstream or the log", w.received("gpt-6-astra"), len(w.records()))
				}
			}},
		},
		{
			name: "breaker: a probe's first output closes it; a break after that is a failure of its own",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: 1},
				{Model: "gpt-6-astra", Kind: "reset", AfterTokens: &three, Count: 1}},
			cfg: func(c *config.Config) {
				c.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(10 * time.Second), MaxCooldown: config.Duration(time.Minute)}
			},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				ctx := context.Background()
				do(ctx, send, chat("gpt-6-astra", "open it", false))
				if st := w.eng.BreakerStates()["openai/gpt-6-astra"]; st != "open" {
					t.Fatalf("breaker %s", st)
				}
				w.clk.Advance(10 * time.Second)
				res := do(ctx, send, chat("gpt-6-astra", "probe", true))
				if res.resp == nil || res.resp.Header.Get("X-Spillway-Model") != "gpt-6-astra" {
					t.Fatalf("the probe did not go to heavy: %v %v", res.err, res.resp)
				}
				if st := w.eng.BreakerStates()["openai/gpt-6-astra"]; st != "closed" {
					t.Fatalf("breaker %s after the probe's output", st)
				}
				recs := w.records()
				if last := recs[len(recs)-1]; last.Class != "network" || last.Model != "gpt-6-astra" {
					t.Fatalf("the broken probe's record: %+v", last)
				}
			},
		},
		{
			name: "keep-alive comments after output keep a stream alive and reach the client",
			upstream: func(w *world) http.Handler {
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					fl := rw.(http.Flusher)
					fmt.Fprint(rw, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
					fmt.Fprint(rw, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"thinking\"}\n\n")
					fl.Flush()
					for range 5 {
						select {
						case <-w.next:
						case <-r.Context().Done():
							return
						}
						fmt.Fprint(rw, ": keep-alive\n")
						fl.Flush()
					}
					fmt.Fprint(rw, "\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":1}}}\n\n")
				})
			},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				resp := open(t, send, responses("gpt-6-luna", "hi", true))
				// each comment comes 100s of fake time after the last, with a
				// 120s idle timeout: the stream lives 500s
				var got bytes.Buffer
				buf := make([]byte, 4096)
				for i := 0; i < 5; {
					n, err := resp.Body.Read(buf)
					got.Write(buf[:n])
					if err != nil {
						t.Fatalf("%v after %q", err, got.String())
					}
					if c := strings.Count(got.String(), ": keep-alive"); c == i {
						w.clk.Advance(100 * time.Second)
						w.next <- struct{}{}
						i++
					}
				}
				rest, err := io.ReadAll(resp.Body)
				got.Write(rest)
				s := got.String()
				if err != nil || !strings.Contains(s, "response.completed") || strings.Contains(s, "response.failed") || strings.Count(s, ": keep-alive") != 5 {
					t.Fatalf("%v\n%s", err, s)
				}
			},
		},
	}
}

// budgetCfg: a 300ms budget, backoff 200–400ms.
func budgetCfg(c *config.Config) {
	c.Retry.Budget = config.Duration(300 * time.Millisecond)
	c.Retry.BackoffBase = config.Duration(200 * time.Millisecond)
	c.Retry.BackoffMax = config.Duration(400 * time.Millisecond)
}

// advanceWhenReceived moves the clock d once the simulator has model's
// request and a watchdog is armed.
func advanceWhenReceived(model string, d time.Duration) func(context.Context, *world) {
	return func(ctx context.Context, w *world) {
		w.waitReceived(ctx, model, 1)
		if w.clk.BlockUntilDue(ctx, d) == nil { // the watchdog of d, not another
			w.clk.Advance(d)
		}
	}
}

// fireIdle moves the fake clock past an idle watchdog of d until the first
// attempt has ended: bytes that arrive just after an advance count as life
// and re-arm the watchdog for d, so one advance may not be enough. It stops
// at the first record, before a retry's watchdogs.
func fireIdle(d time.Duration) func(context.Context, *world) {
	return func(ctx context.Context, w *world) {
		for len(w.records()) == 0 {
			if w.clk.BlockUntilDue(ctx, d) != nil || len(w.records()) > 0 {
				return
			}
			w.clk.Advance(d)
		}
	}
}

// errorSays checks the error of record i.
func errorSays(i int, s string) func(*testing.T, *world, result) {
	return func(t *testing.T, w *world, _ result) {
		if recs := w.records(); len(recs) <= i || !strings.Contains(recs[i].Error, s) {
			t.Fatalf("record %d's error should say %q: %+v", i, s, recs)
		}
	}
}

// fixed is an upstream that always answers status and body.
func fixed(status int, body string) func(*world) http.Handler {
	return func(*world) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(status)
			io.WriteString(rw, body)
		})
	}
}

// firstTime reports true on its first call only; safe for concurrent use.
func firstTime() func() bool {
	var once sync.Once
	return func() (first bool) {
		once.Do(func() { first = true })
		return first
	}
}

// stallsOnce is an upstream whose first whole answer stops halfway and
// never ends; then it answers body.
func stallsOnce(body string) func(*world) http.Handler {
	return func(*world) http.Handler {
		first := firstTime()
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			stall := first()
			rw.Header().Set("Content-Type", "application/json")
			if !stall {
				io.WriteString(rw, body)
				return
			}
			rw.Header().Set("Content-Length", fmt.Sprint(len(body)))
			io.WriteString(rw, body[:len(body)/2])
			rw.(http.Flusher).Flush()
			<-r.Context().Done()
		})
	}
}

// openingPastTheHoldLimit writes 1.1 MB of opening events (no output).
func openingPastTheHoldLimit(w io.Writer) {
	pad := strings.Repeat("x", 1000)
	for n := 0; n < 1100; n++ {
		fmt.Fprintf(w, "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"pad\":%q}\n\n", pad)
	}
}

// holdsAStream is an upstream that starts a stream and never ends it.
func holdsAStream(*world) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(rw, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"forever\"}\n\n")
		rw.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// astraIn serves gpt-6-astra by a deployment in each region, weights given.
func astraIn(regions []string, weights ...int) func(*config.Config) {
	return func(c *config.Config) {
		m := c.Models["gpt-6-astra"]
		m.Provider, m.Deployments = "", nil
		for i, r := range regions {
			m.Deployments = append(m.Deployments, config.Deployment{Name: r, Provider: "openai-" + r, Weight: weights[i]})
		}
		c.Models["gpt-6-astra"] = m
	}
}

// deploymentRows: one model served by several deployments (the
// simulator's regions, with pools of their own).
func deploymentRows() []row {
	full := []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1}}
	return []row{
		{
			name:    "deployments: a full one spills to the model's next, with no step down a tier",
			regions: []string{"us", "eu"}, cfg: astraIn([]string{"us", "eu"}, 1, 1),
			regionFaults: map[string][]sim.Fault{"us": full},
			call:         chat("gpt-6-astra", "hi", false),
			want: want{status: 200, model: "gpt-6-astra", route: "gpt-6-astra@us:capacity > gpt-6-astra@eu:ok", attempts: 2, text: sim.Answer("gpt-6-astra", "hi", 16),
				check: func(t *testing.T, w *world, _ result) {
					recs := w.records()
					if recs[0].Deployment != "us" || recs[1].Deployment != "eu" || recs[1].FallbackFrom != "gpt-6-astra@us" || recs[1].Model != "gpt-6-astra" {
						t.Fatalf("records %+v", recs)
					}
					if w.sim.Region("eu").Snapshot().Models["gpt-6-astra"].Served != 1 || w.received("gpt-6-astra") != 0 {
						t.Fatal("the answer did not come from the eu deployment")
					}
				}},
		},
		{
			name:    "deployments: with every one full, the next tier answers",
			regions: []string{"us", "eu"}, cfg: astraIn([]string{"us", "eu"}, 1, 1),
			regionFaults: map[string][]sim.Fault{"us": full, "eu": full},
			call:         chat("gpt-6-astra", "hi", false),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra@us:capacity > gpt-6-astra@eu:capacity > gpt-6.1-sol:ok", attempts: 3,
				check: func(t *testing.T, w *world, _ result) {
					if recs := w.records(); recs[2].FallbackFrom != "gpt-6-astra@eu" || recs[2].Deployment != "" {
						t.Fatalf("records %+v", recs)
					}
				}},
		},
		{
			name:    "deployments: healthy traffic is split by weight",
			regions: []string{"us", "eu"}, cfg: astraIn([]string{"us", "eu"}, 3, 1),
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				for i := range 20 {
					if res := do(context.Background(), send, chat("gpt-6-astra", fmt.Sprint("split ", i), false)); res.err != nil || res.resp.StatusCode != 200 {
						t.Fatalf("%v %v", res.err, res.resp)
					}
				}
				got := map[string]int{}
				for _, r := range w.records() {
					got[r.Deployment]++
				}
				if got["us"] < 14 || got["us"] > 16 || got["us"]+got["eu"] != 20 {
					t.Fatalf("split %v, want about 15:5 (weights 3:1)", got)
				}
			},
		},
		{
			name:    "deployments: a rate-limited key slows the deployments that share it, not one with another key",
			regions: []string{"us", "eu", "ap"},
			cfg: func(c *config.Config) {
				astraIn([]string{"us", "eu", "ap"}, 1, 1, 1)(c)
				for r, key := range map[string]string{"us": "sk-shared-0123", "eu": "sk-shared-0123", "ap": "sk-other-0123"} {
					p := c.Providers["openai-"+r]
					p.Auth, p.APIKey = "key", config.Secret{Ref: "env:KEY", Value: key}
					c.Providers["openai-"+r] = p
				}
				c.Retry.Budget = config.Duration(time.Millisecond) // a rate limit's wait moves on at once
			},
			regionFaults: map[string][]sim.Fault{
				"us": {{Model: "gpt-6-astra", Kind: "rate_limit", Count: -1, RetryAfter: 1}},
				"eu": {{Model: "gpt-6-astra", Kind: "rate_limit", Count: -1, RetryAfter: 1}},
			},
			call: chat("gpt-6-astra", "hi", false),
			want: want{status: 200, model: "gpt-6-astra", check: func(t *testing.T, w *world, res result) {
				// the limit is the key's: the request moves to a deployment
				// with another key at once, not to eu, which shares it
				if route := res.resp.Header.Get("X-Spillway-Route"); route != "gpt-6-astra@us:rate_limit > gpt-6-astra@ap:ok" {
					t.Fatalf("route %q", route)
				}
				cands := w.eng.Candidates(policy.Request{Model: "gpt-6-astra"})
				slow := map[string]float64{}
				for _, c := range cands[:3] {
					slow[c.Deployment] = w.eng.Slowness(c, "")
				}
				if slow["us"] != 2 || slow["eu"] != 2 || slow["ap"] != 1 {
					t.Fatalf("slowness %v: a rate limit on the shared key slows us and eu alike; ap's key is another", slow)
				}
			}},
		},
	}
}
