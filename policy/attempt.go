package policy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/redact"
)

// Attempt is one send of a request to one candidate. Its exported fields
// are for Send to read; its methods report progress to the driver and are
// safe for concurrent use.
type Attempt struct {
	Candidate Candidate
	// N numbers the attempts of the request that reached the upstream,
	// from 1 (X-Spillway-Attempts).
	N         int
	RequestID string
	// FallbackFrom is the model of the previous attempt when this one
	// moved to another model.
	FallbackFrom string
	// Continues, when set, is an earlier attempt of the request whose
	// answer reached the caller and then broke: this one continues it,
	// from Resume (what that attempt's Result.Resume left).
	Continues *Attempt
	Resume    any

	r       *run
	ctx     context.Context
	cancel  context.CancelCauseFunc
	release func()
	t0      time.Time
	waited  time.Duration
	last    atomic.Int64 // clock time of the last progress, UnixNano

	probe   bool          // the attempt is its provider's probe (see reach)
	hedge   chan struct{} // hedgeable: told when the first-token limit passes
	hedging bool          // the attempt is a hedge, started beside a hedged one
	noted   bool          // its committed answer's hop is in the route (the run's mu, r.mu, guards it)

	// mu guards what follows; never held with the run's mu (see run.mu
	// for the lock order)
	mu       sync.Mutex
	hedged   bool                   // past its first-token limit, racing a hedge
	lost     bool                   // another attempt of the request reported output first
	reached  bool                   // the provider answered, and reach was told
	returned bool                   // Send returned
	early    *Result                // a Finish that came before Send returned
	permit   func(classify.Verdict) // the breaker's, until evidence was given
	ttfb     time.Duration
	headers  bool
	phase    watch
	gen      int         // bumped at every re-arm, so a stale timer does nothing
	stop     func() bool // the armed watchdog's
	expired  *classify.Verdict
	finished bool
	result   Result // of an open attempt, until Finish
}

// watch is what an attempt's watchdog is waiting for.
type watch int

const (
	watchNone   watch = iota
	watchHeader       // the response headers
	watchFirst        // a stream's first output
	watchBody         // more of a whole answer's body
	watchIdle         // more of a stream whose output has started
	watchHold         // more of a stream whose output is held back (a hold window)
)

// limit is how long the watchdog of w allows, 0 for none, and what it says
// when it fires.
func (a *Attempt) limit(w watch) (time.Duration, string) {
	g := a.r.e.cfg.Timeouts
	switch w {
	case watchHeader:
		// headers come at once on a stream from a healthy provider, and
		// only once the answer is done for a whole one
		if !a.r.c.Stream {
			return g.Request.D(), "no answer within %s (timeouts.request: a whole answer's headers come once it is written)"
		}
		if m, ok := a.r.e.cfg.Models[a.Candidate.Model]; ok && m.HeaderTimeout > 0 {
			return m.HeaderTimeout.D(), "no response headers within %s (models." + a.Candidate.Model + ".header_timeout)"
		}
		return g.Header.D(), "no response headers within %s (timeouts.header)"
	case watchFirst:
		if a.firstIdle() {
			// no first-token limit (or a hedge already started): the
			// stream may take its time to start, but not go silent (its
			// opening events and keep-alives count as life) for longer
			// than timeouts.idle
			return g.Idle.D(), "the upstream stream went silent for %s (timeouts.idle) before its first output"
		}
		if m, ok := a.r.e.cfg.Models[a.Candidate.Model]; ok && m.FirstTokenTimeout > 0 {
			return m.FirstTokenTimeout.D(), "no output within %s (models." + a.Candidate.Model + ".first_token_timeout)"
		}
		return g.FirstToken.D(), "no output within %s (timeouts.first_token)"
	case watchHold:
		return g.Idle.D(), "the upstream stream went silent for %s (timeouts.idle) within its hold window, before the client saw any of it"
	case watchBody:
		return g.Idle.D(), "the answer stalled for %s (timeouts.idle)"
	case watchIdle:
		return g.Idle.D(), "the upstream stream went silent for %s (timeouts.idle) after output started"
	}
	return 0, ""
}

// firstIdle reports that the silence before the first output is watched as
// idle time, not against a first-token limit; a.mu must be held.
func (a *Attempt) firstIdle() bool {
	return a.hedged || a.r.e.cfg.FirstToken(a.Candidate.Model) <= 0
}

// arm points the watchdog at w (a.mu must not be held).
func (a *Attempt) arm(w watch) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armLocked(w, 0)
}

func (a *Attempt) armLocked(w watch, after time.Duration) {
	if a.stop != nil {
		a.stop()
		a.stop = nil
	}
	a.phase = w
	a.gen++
	d, _ := a.limit(w)
	if d <= 0 || a.finished || a.expired != nil {
		return
	}
	if after <= 0 {
		after = d
	}
	gen := a.gen
	a.stop = a.r.e.clock.AfterFunc(after, func() { a.fire(gen) })
}

// fire ends the attempt when its watchdog's time is up; an idle watchdog
// that saw progress meanwhile re-arms for the rest.
func (a *Attempt) fire(gen int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen != a.gen || a.finished {
		return
	}
	d, what := a.limit(a.phase)
	if a.phase == watchFirst && a.hedge != nil && !a.hedged {
		// a hedged model past its first-token limit: not given up, raced
		a.hedged = true
		a.hedge <- struct{}{}
		a.last.Store(a.r.e.clock.Now().UnixNano())
		a.armLocked(watchFirst, 0)
		return
	}
	if a.phase == watchBody || a.phase == watchIdle || a.phase == watchHold || a.phase == watchFirst && a.firstIdle() {
		if since := a.r.e.clock.Now().Sub(time.Unix(0, a.last.Load())); since < d {
			a.armLocked(a.phase, d-since)
			return
		}
	}
	v := classify.Verdict{Class: classify.Timeout, Message: fmt.Sprintf(what, d)}
	a.expired = &v
	a.stop = nil
	a.cancel(&classify.Failure{Verdict: v})
}

// Headers reports that the upstream's response headers arrived; stream says
// whether the answer is an event stream (its first output is awaited next)
// or a whole answer (its body is awaited, and must not stall).
func (a *Attempt) Headers(stream bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.headers {
		return
	}
	a.headers = true
	if !a.reached {
		a.reached = true
		a.r.e.reach.observe(a.Candidate.Provider, classify.Verdict{Class: classify.OK}, 1, a.probe)
	}
	a.ttfb = a.r.e.clock.Now().Sub(a.t0)
	a.last.Store(a.r.e.clock.Now().UnixNano())
	if a.phase == watchHeader {
		if stream {
			a.armLocked(watchFirst, 0)
		} else {
			a.armLocked(watchBody, 0)
		}
	}
}

// Output reports the first real output: a stream's first token, or a whole
// answer read to its end. The model answered: the breaker records a success
// (so a healed model's probe frees it at once), and a stream's silence is
// watched from here on. It returns false when another attempt of the
// request (a hedge) reported output first: this one has lost, its context
// is ending, and Send must give the caller nothing and return.
func (a *Attempt) Output() bool {
	if !a.Claim() {
		return false
	}
	a.mu.Lock()
	permit := a.permit
	a.permit = nil
	switch a.phase {
	case watchFirst, watchHeader:
		a.last.Store(a.r.e.clock.Now().UnixNano())
		a.armLocked(watchIdle, 0)
	case watchBody:
		a.armLocked(watchNone, 0) // the whole answer is in
	}
	a.mu.Unlock()
	if permit != nil {
		permit(classify.Verdict{Class: classify.OK})
		a.r.e.pacer.ease(rateKey(a.Candidate, a.r.c.callerKey()))
	}
	return true
}

// HoldOutput tells the driver that the stream's output is being held back
// after its first (a hold window): a silence of timeouts.idle within it
// ends the attempt as a timeout before the caller saw anything. Deliver
// ends the window.
func (a *Attempt) HoldOutput() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last.Store(a.r.e.clock.Now().UnixNano())
	a.armLocked(watchHold, 0)
}

// After is closed once d has passed on the engine's clock (a hold window's
// end); stop ends its timer early.
func (a *Attempt) After(d time.Duration) (ch <-chan struct{}, stop func() bool) {
	c := make(chan struct{})
	return c, a.r.e.clock.AfterFunc(d, func() { close(c) })
}

// Deliver ends a hold window: the output goes to the caller, and its
// silence is timeouts.idle's to watch.
func (a *Attempt) Deliver() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last.Store(a.r.e.clock.Now().UnixNano())
	a.armLocked(watchIdle, 0)
}

// Classify is the engine's classifier, for Send to judge what came back.
func (a *Attempt) Classify(in classify.Input) classify.Verdict { return a.r.e.Classify(in) }

// Waited is how long the request waited before this attempt (the plan's
// wait and the pacer's).
func (a *Attempt) Waited() time.Duration { return a.waited }

// Now is the engine's clock's time.
func (a *Attempt) Now() time.Time { return a.r.e.clock.Now() }

// Progress reports that bytes arrived; it keeps an idle watchdog from
// firing. It is cheap enough to call for every event of a stream.
func (a *Attempt) Progress() { a.last.Store(a.r.e.clock.Now().UnixNano()) }

// Failure is the verdict for err, an error Send met reading the upstream:
// the watchdog's timeout when it was a watchdog that ended the attempt.
func (a *Attempt) Failure(err error) classify.Verdict {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.lost:
		return lostVerdict()
	case a.expired != nil:
		return *a.expired
	}
	return classify.Err(err)
}

// RouteAs is the request's route so far with this attempt's hop as class:
// "streaming" while a stream's answer is still on its way (the headers
// that go out with its first output), its end's class in the stream's last
// words.
func (a *Attempt) RouteAs(class classify.Class) string {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	hops := a.r.plan.route
	if a.noted {
		// the request ended with this attempt's answer on its way (a
		// library caller reads it): its hop is the route's last
		hops = hops[:len(hops)-1]
	}
	last := a.r.plan.hop(a.Candidate, class, false)
	return renderRouteWith(hops, &last)
}

// Finish ends an attempt whose Result was Open: v is how delivery ended
// (OK, or why the stream broke) and outputTokens what the caller received.
// Later calls do nothing.
func (a *Attempt) Finish(v classify.Verdict, outputTokens int) {
	a.mu.Lock()
	if !a.returned {
		// delivery ended before Send returned its Open result: end the
		// attempt with that result, once it comes
		if a.early == nil {
			a.early = &Result{Verdict: v, OutputTokens: outputTokens}
		}
		a.mu.Unlock()
		return
	}
	res := a.result
	a.mu.Unlock()
	res.Verdict, res.OutputTokens = v, outputTokens
	a.end(res)
}

// sent takes Send's result: it applies a watchdog's verdict, and ends the
// attempt unless its answer is still being delivered.
func (a *Attempt) sent(res *Result) {
	a.mu.Lock()
	a.returned = true
	if res.NotSent {
		a.finished = true
		a.armLocked(watchNone, 0)
		permit := a.permit
		a.permit = nil
		a.mu.Unlock()
		if permit != nil {
			permit(classify.Verdict{Class: classify.Unknown}) // no word on the pool
		}
		a.r.e.reach.observe(a.Candidate.Provider, classify.Verdict{}, 0, a.probe) // nor on the network
		a.release()
		a.cancel(nil)
		a.r.mu.Lock()
		a.r.n--
		a.r.mu.Unlock()
		return
	}
	switch {
	case a.lost && !res.Committed:
		res.Verdict = lostVerdict()
	case a.expired != nil && res.Verdict.Class != classify.OK:
		res.Verdict = *a.expired
	}
	if res.Committed && res.Open {
		a.result = *res
		early := a.early
		a.mu.Unlock()
		if early != nil {
			a.Finish(early.Verdict, early.OutputTokens)
		}
		return
	}
	a.mu.Unlock()
	a.end(*res)
}

// end gives the evidence, writes the record and frees the slot, once.
func (a *Attempt) end(res Result) {
	a.mu.Lock()
	if a.finished {
		a.mu.Unlock()
		return
	}
	a.finished = true
	a.armLocked(watchNone, 0)
	switch {
	case a.lost && !res.Committed:
		res.Verdict = lostVerdict()
	case a.expired != nil && res.Verdict.Class != classify.OK:
		res.Verdict = *a.expired
	}
	permit := a.permit
	a.permit = nil
	ttfb, headers, reached, lost := a.ttfb, a.headers, a.reached, a.lost
	a.reached = true
	// the caller's own context ended the attempt (its deadline, its
	// cancel), not a watchdog, or a hedge answered first: what the attempt
	// met says nothing of the model or the network
	callerEnded := a.expired == nil && a.ctx.Err() != nil && res.Verdict.Class != classify.OK && !a.lost
	noWord := callerEnded || a.lost
	a.mu.Unlock()

	e, c, key := a.r.e, a.r.c, a.Candidate.Key()
	v := res.Verdict
	evidence := v
	if noWord {
		evidence = classify.Verdict{Class: classify.Unknown}
	}
	if !reached {
		e.reach.observe(a.Candidate.Provider, evidence, res.Status, a.probe)
	}
	switch {
	case permit != nil:
		permit(evidence)
		if v.Class == classify.OK {
			e.pacer.ease(rateKey(a.Candidate, c.callerKey()))
		}
	case evidence.Class != classify.OK:
		// the attempt's success was recorded at its first output; what
		// broke it later is evidence of its own
		e.breakers.Observe(key, evidence)
		e.adapt(key, evidence)
		e.tell(key, rateKey(a.Candidate, c.callerKey()), evidence, false)
	}
	now := e.clock.Now()
	rec := events.Record{TS: a.t0.UTC(), RequestID: a.RequestID, Attempt: a.N, Source: c.Source, Provider: a.Candidate.Provider,
		Model: a.Candidate.Model, Deployment: a.Candidate.Deployment, RequestedModel: c.Model, Endpoint: c.Endpoint, Status: res.Status, Class: string(v.Class),
		LatencyMS: now.Sub(a.t0).Milliseconds(), ReqBytes: c.ReqBytes, EstInputTokens: a.r.plan.req.InputTokens,
		OutputTokens: res.OutputTokens, Stream: c.Stream, FallbackFrom: a.FallbackFrom, WaitMS: a.waited.Milliseconds(), CallerEnded: callerEnded, HedgeLost: lost}
	if headers {
		rec.TTFBMS = ttfb.Milliseconds()
	}
	if f := a.Candidate.Format; f != "" && c.Type != "" && f != c.Type {
		rec.TranslatedFrom = endpointKind(c.Endpoint)
	}
	if v.Class != classify.OK {
		rec.Error = redact.String(v.Message)
	}
	if res.Committed {
		rec.Route = a.RouteAs(v.Class)
	}
	c.Events.Write(rec)
	a.release()
	a.cancel(nil)
}

// rateKey is what a rate limit slows: the model at one set of credentials,
// the candidate's own key when its provider sends one, else the caller's.
// Deployments of a model that share a key share its pace.
func rateKey(c Candidate, callerKey string) string {
	cred := c.KeyID
	if cred == "" {
		cred = "caller:" + callerKey
	}
	return c.Model + "\x00" + cred
}

// endpointKind is the kind of request an endpoint path takes: its method
// after a ':' (Gemini's), else its last segment, Chat Completions' "chat".
func endpointKind(endpoint string) string {
	if i := strings.LastIndex(endpoint, ":"); i >= 0 {
		return endpoint[i+1:]
	}
	k := endpoint[strings.LastIndex(endpoint, "/")+1:]
	if k == "completions" {
		return "chat"
	}
	return k
}
