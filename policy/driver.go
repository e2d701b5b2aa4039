package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/redact"
)

// Call is one request for Run to drive. A front end (the gateway, the Go
// library, the agent wrapper, the queue) fills it in; Run owns everything
// else: the plan, every wait (charged to the request's budget), pacing,
// breaker permission and evidence, slow-down and recovery, the ladder, the
// watchdogs and the event record. A front end has no loop of its own.
type Call struct {
	Request

	// ID names the request in the event log (request_id) and in
	// X-Spillway-Request-Id; Run makes one when it is empty.
	ID string
	// Source, Endpoint, Stream and ReqBytes go into every event record
	// (events.Source*, the endpoint called or the agent's kind).
	Source   string
	Endpoint string
	Stream   bool
	ReqBytes int64
	// Key identifies the caller's credentials for per-key pacing: a hash,
	// never the key itself.
	Key string
	// Watchdogs arms the attempt watchdogs, for sends that report their
	// progress (Attempt.Headers, Output, Progress): no headers within the
	// header timeout, no output within timeouts.first_token, or a silence
	// of timeouts.idle ends the attempt as a timeout (a zero duration turns
	// its watchdog off); a stream to a model with hedge: true that passes
	// its first-token limit races the next model.
	Watchdogs bool
	// ChargeFailures counts the time a failed attempt took against the
	// wait budget: the client waited it without an answer (an HTTP
	// attempt's; an agent's run is work, not waiting).
	ChargeFailures bool

	// Send sends one attempt to a.Candidate and reports what came back.
	//
	// ctx is the attempt's own context: it ends when a watchdog fires, when
	// Run's context ends, or when the driver gives the attempt up; Send must
	// then stop and return promptly (its verdict is replaced by the
	// watchdog's). Send may be called for several attempts of one request at
	// once (a hedge) and again after an attempt committed (a continuation,
	// a.Continues): an attempt's own state lives in Send's frame while it
	// runs and in what it returns (Result.Detail, Result.Resume, which the
	// next attempt gets as a.Resume); what Send keeps of the request (its
	// writer to the client, its body) must take two attempts at once.
	//
	// An HTTP send calls a.Headers when the response headers arrive,
	// a.Output at the first real output (a token, a complete whole answer)
	// and a.Progress as bytes arrive after that; the watchdogs and the
	// breaker's evidence depend on it.
	//
	// The Result's Verdict classifies what came back. Committed means the
	// answer was given to the caller (possibly a stream still running: then
	// Open is set too, and Send's side calls a.Finish once delivery ends);
	// the request then ends with this attempt. A Result that is not
	// committed must have given the caller nothing, and cannot be OK (the
	// request ends at once with the Code SendContract). Send never sleeps
	// or retries: waiting is the driver's.
	Send func(ctx context.Context, a *Attempt) Result

	// Events receives one record per attempt that reached the upstream.
	Events events.Sink
	// OnSwitch, when set, is told of every move to another model, and why.
	OnSwitch func(from, to Candidate, why classify.Verdict)
	// OnWait, when set, is told before every wait the plan asks for.
	OnWait func(d time.Duration, next Candidate, why classify.Verdict)
	// Check, when set, is how a check within a rung (Request.CheckEvery)
	// looks for room without a whole attempt: a minimal request to the
	// candidate, say; it reports false when the candidate is still at
	// capacity. Without it, a check is an attempt. The chain is walked
	// only when one candidate has room.
	Check func(ctx context.Context, c Candidate) bool
}

// Result is what one Send found (see Call.Send).
type Result struct {
	Verdict   classify.Verdict
	Committed bool
	// Open, with Committed: the caller is still reading the answer; the
	// attempt ends when Send's side calls Attempt.Finish.
	Open bool
	// NotSent: nothing reached the upstream (the request could not be
	// built, the command could not start). No record, no breaker evidence,
	// not counted as an attempt; the plan still hears the verdict.
	NotSent bool
	// Status is the upstream's HTTP status, 0 when none came.
	Status int
	// OutputTokens is what the caller received, for the record.
	OutputTokens int
	// Detail is the front end's own account of the attempt (the upstream's
	// error answer, an agent run's exit code); Outcome.Result keeps the
	// last one.
	Detail any
	// Resume, on a committed answer that broke (its Verdict a failure),
	// says the front end can continue it and left the stream's end to
	// the driver: what a continuation needs (the text delivered so far).
	// The driver then sends a continuation (Attempt.Continues and
	// Attempt.Resume set) on the same or the next model within the
	// budget, or returns an Unfinished outcome for the front end to end.
	Resume any

	noted bool // its hop is in the route already (a hedge that failed on its own)
}

// Outcome is how a request ended.
type Outcome struct {
	ID string
	// Committed: an attempt's answer reached the caller; Result is that
	// attempt's (its Verdict may still be a failure: a stream that broke
	// after output started).
	Committed bool
	// Result is the last attempt's that reached the upstream (or the
	// committed one); the zero Result when none did.
	Result Result
	// Candidate is where the request was last sent or meant to go.
	Candidate Candidate
	// Verdict is OK for a committed answer, else the failure that ended the
	// request.
	Verdict classify.Verdict
	// Reason explains a failure: the models tried, their classes, the time
	// waited and the last upstream message.
	Reason string
	// Route is every attempt's model and class: "gpt-6-astra:capacity >
	// gpt-6.1-sol:ok". Attempts counts those that reached the upstream.
	Route    string
	Attempts int
	// Waited is every wait charged to the budget.
	Waited time.Duration
	// ParkUntil, for a parked request (Request.Park), is when to come back:
	// the whole chain is at capacity and the next rung (or a breaker's
	// probe, or a check within the rung, whichever is sooner) is not due
	// before then. RungLeft is what will be left of the rung then
	// (Request.RungLeft of the request that comes back; 0: the rung is over).
	ParkUntil time.Time
	RungLeft  time.Duration
	// NextRung is the Request.Rung of the request that comes back: the
	// same rung while some of it is left, else the next (the last
	// repeats).
	NextRung int
	// Err is the context's error when the request was given up because its
	// context ended.
	Err error
	// Unfinished: the answer reached the caller, broke, and was left to
	// the driver to continue (Result.Resume), which it could not; the
	// front end ends it (the protocol's error event).
	Unfinished bool
	// GlobalOutage: every model stayed at capacity through the whole
	// ladder (Request.Ladder), and the request was given up.
	GlobalOutage bool
}

// SendContract is the Verdict Code of a request that ended because its
// Send broke the contract of Call.Send (an OK result it did not commit).
const SendContract = "send_contract"

// Failed reports an outcome that gave the caller no answer.
func (o Outcome) Failed() bool { return !o.Committed && o.Err == nil && o.ParkUntil.IsZero() }

// run is one Call being driven.
type run struct {
	e    *Engine
	c    *Call
	mu   sync.Mutex // the plan, n, winner and live, shared with attempts in flight
	plan *plan
	n    int
	// winner is the attempt whose output reaches the caller: the first to
	// report output (a hedge's race); live are the attempts in flight.
	winner *Attempt
	live   []*Attempt
	live1  [2]*Attempt // live's room: one attempt, or a hedge's two, with no allocation
	// resumeFrom and resume, while the driver continues a broken answer:
	// the attempt whose answer broke, and what its front end left to
	// continue from.
	resumeFrom *Attempt
	resume     any
	committed  *Attempt // the last attempt whose answer reached the caller
	// hedgeWait, while a hedge is being started, is the context of its
	// pacing wait, and unhedge ends it: the hedged attempt reported output
	// first. (The hedge's own attempt is not in it: a library caller reads
	// a winning hedge's stream after the race.)
	hedgeWait context.Context
	unhedge   context.CancelFunc

	// Run's own, between attempts: the step to take; the attempt just
	// made and its candidate; the last result of an attempt that reached
	// the upstream; a broken answer's, once one broke; the outcome
	st        step
	cand      Candidate // the candidate r.res is from
	res       Result    // the attempt's result
	last      Result
	delivered *delivered // set once an answer that reached the caller broke
	out       Outcome    // how it ended (outcome)
}

// delivered is the last committed answer of a run that continues a
// broken one, and its candidate (rare: kept apart from the run).
type delivered struct {
	res Result
	to  Candidate
}

// racer is an attempt that runs on while the request goes on without it: a
// hedged attempt past its first-token limit, racing the next model's.
type racer struct {
	a    *Attempt
	cand Candidate
	done chan Result
}

// Run drives c to its end: it walks c's plan, and for every step waits what
// the plan asks (charged to the budget), takes a pacing slot and turn
// within what is left of the budget, asks the candidate's breaker, calls
// c.Send, gives the breaker and the pacer the evidence, writes the event
// record, and feeds the verdict back to the plan, until an answer is
// committed, the plan gives up, the context ends, or (parked requests) the
// whole chain is at capacity.
func (e *Engine) Run(ctx context.Context, c *Call) Outcome {
	// Run's own frame stays small: a stream is relayed from deep inside
	// it (Send), so every byte of each frame on the way there is held by
	// each open stream's goroutine (BENCHMARKS.md, peak RSS). What is
	// decided between attempts is in before and after, and the state they
	// share is in the run.
	if c.ID == "" {
		c.ID = newID()
	}
	r := e.newRun(c)
	r.st = r.plan.start()
	if c.Request.RungLeft > 0 && r.st.Action == send {
		r.st.check = true // a parked request back for a check within its rung
	}
	if r.st.Action == send && r.st.FallbackFrom != "" && c.OnSwitch != nil {
		c.OnSwitch(r.plan.chain[0], r.st.Candidate, r.st.Verdict) // passed over for its size
	}
	for {
		if o := r.before(ctx); o != nil {
			return *o
		}
		if o := r.next(ctx); o != nil {
			return *o
		}
	}
}

// next makes the attempt at r.st and takes its result.
func (r *run) next(ctx context.Context) *Outcome {
	r.cand = r.st.Candidate
	if rc := r.attempt(ctx, &r.st, &r.res); rc != nil {
		// past its first-token limit the attempt races the next model
		r.race(ctx, rc)
	}
	return r.after(ctx, r.cand, &r.res)
}

// before ends the run when its step says so (the plan gave up, or a parked
// request is to wait elsewhere), and waits what the step asks; nil when an
// attempt is to be made at r.st.
func (r *run) before(ctx context.Context) *Outcome {
	e, c := r.e, r.c
	for {
		st := &r.st
		if st.Action == fail {
			if r.resume != nil { // the caller has part of an answer: the front end ends it
				return r.outcome(r.delivered.to, Outcome{Committed: true, Unfinished: true, Result: r.delivered.res, Verdict: st.Verdict, Reason: st.Reason})
			}
			return r.outcome(st.Candidate, Outcome{Result: r.last, Verdict: st.Verdict, Reason: st.Reason, GlobalOutage: st.outage})
		}
		if st.rung && c.Park && r.resume == nil { // even a rung of 0: a parked request never loops in process
			until, left := r.parkUntil(st.Wait), r.plan.rungLeft
			if short := st.Wait - until.Sub(e.clock.Now()); st.check && short > 0 {
				left += short // back sooner (a breaker's probe): that much of the rung is still to wait
			}
			next := r.plan.rungAt
			if left <= 0 {
				next = min(next+1, len(c.Request.Ladder)-1)
			}
			return r.outcome(st.Candidate, Outcome{Result: r.last, Verdict: r.last.Verdict, ParkUntil: until, RungLeft: left, NextRung: next,
				Reason: fmt.Sprintf("every model at capacity; parked for %s", classify.FormatWait(st.Wait))})
		}
		if st.Wait > 0 {
			if c.OnWait != nil {
				c.OnWait(st.Wait, st.Candidate, r.last.Verdict)
			}
			if err := e.clock.Sleep(ctx, st.Wait); err != nil {
				return r.outcome(st.Candidate, Outcome{Result: r.last, Verdict: classify.Err(err), Err: err, Committed: r.resume != nil, Unfinished: r.resume != nil})
			}
		}
		if st.check && c.Check != nil && !r.room(ctx) {
			// no room anywhere: the rung goes on, no attempt made
			r.mu.Lock()
			r.st = r.plan.exhausted(st.Candidate, r.last.Verdict)
			r.mu.Unlock()
			continue
		}
		return nil
	}
}

// after takes an attempt's result at cand: the run ends on a committed
// answer (or goes on to continue a broken one), or when ctx ended; else the
// plan decides the next step. nil when the run goes on at r.st.
func (r *run) after(ctx context.Context, cand Candidate, res *Result) *Outcome {
	e, c := r.e, r.c
	if res.Committed {
		r.mu.Lock()
		r.plan.noteAt(cand, res.Verdict)
		if r.committed != nil {
			r.committed.noted = true
		}
		r.mu.Unlock()
		if res.Verdict.Class == classify.OK || res.Resume == nil {
			return r.outcome(cand, Outcome{Committed: true, Result: *res, Verdict: res.Verdict})
		}
		// the answer broke after reaching the caller, and its front
		// end can continue it: the same or the next model goes on from
		// what the caller has
		r.delivered, r.last = &delivered{res: *res, to: cand}, *res
		r.mu.Lock()
		r.resumeFrom, r.resume, r.winner = r.committed, res.Resume, nil
		r.st = r.plan.resume(cand, res.Verdict)
		r.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		return r.outcome(cand, Outcome{Result: *res, Verdict: classify.Err(err), Err: err, Committed: r.resume != nil, Unfinished: r.resume != nil})
	}
	if res.Verdict.Class == classify.OK {
		// an answer called OK that the caller was not given: the plan
		// would send it again to the same model, for ever
		why := fmt.Sprintf("policy: the Send for %s returned an OK result it did not commit (Call.Send: an OK answer is committed)", cand.Name())
		return r.outcome(cand, Outcome{Result: *res, Verdict: classify.Verdict{Class: classify.Unknown, Code: SendContract, Message: why}, Reason: "spillway: " + why})
	}
	r.mu.Lock()
	if res.noted {
		r.st = r.plan.decideAt(cand, res.Verdict)
	} else {
		r.st = r.plan.afterAt(cand, res.Verdict)
	}
	r.mu.Unlock()
	if !local(res.Verdict) {
		r.last = *res
	}
	if res.Verdict.Class == classify.RateLimit && !res.NotSent {
		e.pacer.slowDown(paceKey(cand, c.Key))
	}
	if r.st.Action == send && r.st.Candidate.Model != cand.Model && c.OnSwitch != nil {
		c.OnSwitch(cand, r.st.Candidate, res.Verdict)
	}
	return nil
}

// room reports whether Call.Check finds room at a candidate of the chain.
func (r *run) room(ctx context.Context) bool {
	for _, cand := range r.plan.chain {
		if r.c.Check(ctx, cand) {
			return true
		}
	}
	return false
}

// newRun is c's run, its plan made.
func (e *Engine) newRun(c *Call) *run {
	if c.Events == nil {
		c.Events = events.Nop{}
	}
	r := &run{e: e, c: c, plan: e.newPlan(c.Request)}
	r.live = r.live1[:0]
	return r
}

// race runs the next model beside rc's attempt, which passed its
// first-token limit: whichever reports output first answers, and the other
// is given up (both reach the upstream and are counted). It returns the
// candidate and result to go on with: the one that answered, or, when
// neither did, the hedge's (the plan then moves on from it), with the
// hedged attempt's own hop noted first.
func (r *run) race(ctx context.Context, rc *racer) {
	r.mu.Lock()
	st := r.plan.hedgeStep(rc.cand)
	r.mu.Unlock()
	if st.Action != send { // nothing to race against: wait for it
		r.cand, r.res = rc.cand, <-rc.done
		return
	}
	if r.c.OnSwitch != nil {
		r.c.OnSwitch(rc.cand, st.Candidate, classify.Verdict{Class: classify.Timeout, Message: "no output within the first-token limit; hedging"})
	}
	// (a loser's hop went into the route when it lost)
	hctx, unhedge := context.WithCancel(ctx)
	defer unhedge()
	r.mu.Lock()
	r.hedgeWait, r.unhedge = hctx, unhedge
	r.mu.Unlock()
	var hres Result
	r.attempt(ctx, &st, &hres)
	r.mu.Lock()
	r.hedgeWait, r.unhedge = nil, nil
	r.mu.Unlock()
	if hres.Committed {
		rc.a.lose()
		<-rc.done
		r.cand, r.res = st.Candidate, hres
		return
	}
	if hres.NotSent && hctx.Err() != nil && ctx.Err() == nil {
		// the hedged attempt answered while the hedge waited to start: it
		// never went
		hres = Result{Verdict: lostVerdict(), NotSent: true}
	}
	if hres.Verdict.Code != HedgeLost {
		// the hedge failed on its own: its hop goes in the route now, in
		// the order things happened (the hedged attempt may still answer)
		r.mu.Lock()
		r.plan.noteAt(st.Candidate, hres.Verdict)
		r.mu.Unlock()
		hres.noted = true
		if hres.Verdict.Class == classify.RateLimit && !hres.NotSent {
			r.e.pacer.slowDown(paceKey(st.Candidate, r.c.Key))
		}
	}
	pres := <-rc.done
	if pres.Committed || hres.Verdict.Code == HedgeLost {
		// it answered; or it won the race and then failed (a hold
		// window): the plan goes on from it
		r.cand, r.res = rc.cand, pres
		return
	}
	if pres.Verdict.Code != HedgeLost {
		r.mu.Lock()
		r.plan.noteAt(rc.cand, pres.Verdict)
		r.mu.Unlock()
	}
	r.cand, r.res = st.Candidate, hres
}

// parkUntil is when a request parked for wait should come back: no later
// than its candidates' breakers let a probe through.
func (r *run) parkUntil(wait time.Duration) time.Time {
	if pw := r.e.probeWait(r.c.Request); pw > 0 && pw < wait {
		wait = pw
	}
	return r.e.clock.Now().Add(wait)
}

func (r *run) outcome(c Candidate, o Outcome) *Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o.ID, o.Candidate = r.c.ID, c
	o.Route, o.Attempts, o.Waited = r.plan.routeString(), r.plan.attempts(), r.plan.waited
	r.out = o // kept in the run, which is on the heap anyway: no allocation of its own
	return &r.out
}

// attempt paces, asks the breaker and sends one step. A hedged candidate's
// attempt (a stream with a first-token limit and hedge: true) that passes
// its limit returns a racer instead of a result: it runs on, and the
// request goes on beside it (race).
func (r *run) attempt(ctx context.Context, st *step, out *Result) *racer {
	a := r.ready(ctx, st, out)
	if a == nil {
		return nil
	}
	if a.hedge == nil {
		r.send(a, out)
		return nil
	}
	return r.hedged(a, st.Candidate, out)
}

// ready paces st's attempt, asks the breakers and makes it; nil when it is
// not to be sent, with why in out.
func (r *run) ready(ctx context.Context, st *step, out *Result) *Attempt {
	e, c, cand := r.e, r.c, st.Candidate
	r.mu.Lock()
	deadline := e.clock.Now().Add(r.plan.left())
	wait := ctx
	if st.hedge && r.hedgeWait != nil {
		wait = r.hedgeWait
	}
	r.mu.Unlock()
	release, start, paced, err := e.pacer.acquire(wait, cand.Key(), paceKey(cand, c.Key), deadline)
	r.mu.Lock()
	r.plan.charge(paced)
	r.mu.Unlock()
	if err != nil {
		if wait.Err() != nil {
			*out = Result{Verdict: classify.Err(wait.Err()), NotSent: true}
			return nil
		}
		*out = Result{Verdict: refused(cand, NoSlot), NotSent: true}
		return nil
	}
	reachable, probe := e.reach.allow(cand.Provider)
	if !reachable {
		release()
		*out = Result{Verdict: refused(cand, NetworkDown), NotSent: true}
		return nil
	}
	permit, ok := e.allow(ctx, cand.Key(), paceKey(cand, c.Key))
	if !ok {
		release()
		e.reach.observe(cand.Provider, classify.Verdict{}, 0, probe)
		*out = Result{Verdict: refused(cand, BreakerOpen), NotSent: true}
		return nil
	}
	a := r.begin(ctx, st, start, st.Wait+paced, permit, release, probe)
	if a == nil { // a hedge whose race was decided before it started
		permit(classify.Verdict{Class: classify.Unknown})
		e.reach.observe(cand.Provider, classify.Verdict{}, 0, probe)
		release()
		*out = Result{Verdict: lostVerdict(), NotSent: true}
	}
	return a
}

// hedged sends a, a stream with a first-token limit, on a goroutine of its
// own: its result when it comes first, or, once it passes its limit, a
// racer for the request to race the next model beside it.
func (r *run) hedged(a *Attempt, cand Candidate, out *Result) *racer {
	done := make(chan Result, 1)
	go func() {
		var res Result
		r.send(a, &res)
		done <- res
	}()
	select {
	case *out = <-done:
		return nil
	case <-a.hedge:
		*out = Result{}
		return &racer{a: a, cand: cand, done: done}
	}
}

// send calls c.Send for a and takes its result: the evidence, the record,
// the budget's charge for a failed HTTP attempt.
func (r *run) send(a *Attempt, res *Result) {
	e, c := r.e, r.c
	sendStart := e.clock.Now()
	*res = c.Send(a.ctx, a)
	r.took(a, res, sendStart)
}

// took is send's after Send returned (apart, so that send's frame, which
// a relayed stream holds, stays small).
func (r *run) took(a *Attempt, res *Result, sendStart time.Time) {
	e, c := r.e, r.c
	a.sent(res)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = slices.DeleteFunc(r.live, func(x *Attempt) bool { return x == a })
	if !res.Committed && r.winner == a {
		r.winner = nil // its output never reached the caller (a hold window): the next attempt's may
	}
	if res.Committed {
		r.committed = a
	} else if !res.NotSent && c.ChargeFailures {
		// the budget is the clock's: an HTTP attempt that failed took
		// time the request spent without an answer (an agent's run, by
		// contrast, is work, not waiting)
		r.plan.failedAfter(a.Candidate, e.clock.Now().Sub(sendStart))
	}
}

// begin makes the attempt for st, numbered, with its watchdog armed; nil
// for a hedge when another attempt of the request already reported output.
func (r *run) begin(ctx context.Context, st *step, start time.Time, waited time.Duration, permit func(classify.Verdict), release func(), probe bool) *Attempt {
	r.mu.Lock()
	if st.hedge && r.winner != nil {
		r.mu.Unlock()
		return nil
	}
	r.n++
	a := &Attempt{Candidate: st.Candidate, N: r.n, RequestID: r.c.ID, FallbackFrom: st.FallbackFrom,
		Continues: r.resumeFrom, Resume: r.resume, r: r, permit: permit, release: release, t0: start, waited: waited, probe: probe, hedging: st.hedge}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	r.live = append(r.live, a)
	r.mu.Unlock()
	m := r.e.cfg.Models[st.Candidate.Model]
	if r.c.Watchdogs && r.c.Stream && m.Hedge && r.e.cfg.FirstToken(st.Candidate.Model) > 0 && !st.hedge && a.Continues == nil {
		a.hedge = make(chan struct{}, 1)
	}
	if r.c.Watchdogs {
		a.arm(watchHeader)
	}
	return a
}

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

	mu       sync.Mutex
	noted    bool                   // its committed answer's hop is in the route (r.mu guards it)
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
		a.r.e.pacer.ease(paceKey(a.Candidate, a.r.c.Key))
	}
	return true
}

// Claim makes a the request's answer without word of output yet (a stream
// whose opening events passed what its front end holds, so they go out):
// another attempt racing it (a hedge) is given up. It returns false when
// another attempt got there first: a has lost, and Send must give the
// caller nothing and return. Output claims too.
func (a *Attempt) Claim() bool {
	r := a.r
	r.mu.Lock()
	if r.winner != nil && r.winner != a {
		r.mu.Unlock()
		a.lose()
		return false
	}
	r.winner = a
	var others []*Attempt
	for _, o := range r.live {
		if o != a {
			others = append(others, o)
		}
	}
	unhedge := r.unhedge
	r.mu.Unlock()
	for _, o := range others {
		o.lose()
	}
	if unhedge != nil && !a.hedging {
		unhedge() // a hedge still waiting to start never goes
	}
	return true
}

// HedgeLost is the Code of the verdict of an attempt that lost a hedge's
// race: it reached the upstream (it is counted and logged) and says
// nothing of the model.
const HedgeLost = "hedge_lost"

// lose gives a up: another attempt of the request answered first.
func (a *Attempt) lose() {
	a.mu.Lock()
	if a.lost || a.finished {
		a.mu.Unlock()
		return
	}
	a.lost = true
	a.armLocked(watchNone, 0)
	a.mu.Unlock()
	// its hop goes in the route now, so that the answer's route says it
	r := a.r
	r.mu.Lock()
	r.plan.noteAt(a.Candidate, lostVerdict())
	r.mu.Unlock()
	a.cancel(errLost)
}

var errLost = errors.New("another attempt of the request answered first")

func lostVerdict() classify.Verdict {
	return classify.Verdict{Class: classify.Unknown, Code: HedgeLost, Message: errLost.Error()}
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

// Now is the engine's clock's time, for a send that measures (a hold
// window).
func (a *Attempt) Now() time.Time { return a.r.e.clock.Now() }

// Classify is the engine's classifier, for Send to judge what came back.
func (a *Attempt) Classify(in classify.Input) classify.Verdict { return a.r.e.classify(in) }

// Waited is how long the request waited before this attempt (the plan's
// wait and the pacer's).
func (a *Attempt) Waited() time.Duration { return a.waited }

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

// Route is the request's route so far with this attempt as its answer:
// what X-Spillway-Route says when this attempt's answer is committed.
func (a *Attempt) Route() string { return a.RouteAs(classify.OK) }

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
	return renderRouteWith(hops, &Hop{Model: a.Candidate.Name(), Class: class})
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
			e.pacer.ease(paceKey(a.Candidate, c.Key))
		}
	case evidence.Class != classify.OK:
		// the attempt's success was recorded at its first output; what
		// broke it later is evidence of its own
		e.breakers.Observe(key, evidence)
		e.adapt(key, evidence)
		e.tell(key, paceKey(a.Candidate, c.Key), evidence, false)
	}
	now := e.clock.Now()
	rec := events.Record{TS: a.t0.UTC(), RequestID: a.RequestID, Attempt: a.N, Source: c.Source, Provider: a.Candidate.Provider,
		Model: a.Candidate.Model, Deployment: a.Candidate.Deployment, RequestedModel: c.Model, Endpoint: c.Endpoint, Status: res.Status, Class: string(v.Class),
		LatencyMS: now.Sub(a.t0).Milliseconds(), ReqBytes: c.ReqBytes, EstInputTokens: a.r.plan.req.InputTokens,
		OutputTokens: res.OutputTokens, Stream: c.Stream, FallbackFrom: a.FallbackFrom, WaitMS: a.waited.Milliseconds(), CallerEnded: callerEnded, HedgeLost: lost}
	if headers {
		rec.TTFBMS = ttfb.Milliseconds()
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

// paceKey is what a rate limit slows: the model at one set of credentials,
// the candidate's own key when its provider sends one, else the caller's.
// Deployments of a model that share a key share its pace.
func paceKey(c Candidate, callerKey string) string {
	cred := c.KeyID
	if cred == "" {
		cred = "caller:" + callerKey
	}
	return c.Model + "\x00" + cred
}

// Slowness is how many times pacing.min_gap and jitter attempts to c now
// wait between starts, for a caller with callerKey (Call.Key): 1 until a
// rate limit slowed the key, back to 1 as answers come. For status pages.
func (e *Engine) Slowness(c Candidate, callerKey string) float64 {
	return e.pacer.slowness(paceKey(c, callerKey))
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
