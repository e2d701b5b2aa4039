package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/events"
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

	// Cross says whether this call can go to cand, a model of another
	// wire format than Request.Type (a cross-vendor step): "" when it can
	// (the front end translates it), else the local refusal's Code
	// (NoKey, Untranslatable) and why, and the step is passed over
	// without being sent. Nil: the front end sends no other format (an
	// agent's -m): such steps are passed over (OtherVendor). A sign-in's
	// request never goes to another vendor, whatever Cross says.
	Cross func(cand Candidate) (code, why string)

	// Events receives one record per attempt that reached the upstream.
	Events events.Sink
	// OnSwitch, when set, is told of every move to another model, and why.
	OnSwitch func(from, to Candidate, why classify.Verdict)
	// OnWait, when set, is told before every wait the plan asks for.
	OnWait func(d time.Duration, next Candidate, why classify.Verdict)
	// Check, when set, is how a check within a rung (Request.CheckEvery)
	// looks for room without a whole attempt: a minimal request to the
	// candidate, say. room is false when the candidate is still at
	// capacity; checked is false when it could not look (then the attempt
	// is the check). Without it, a check is an attempt. The chain is
	// walked only when one candidate has room.
	//
	// A check goes to the model like an attempt as far as its breaker
	// goes: it is made only with the breaker's leave (so a lane whose
	// breaker is open is not checked, and a half-open one gets one probe,
	// the check or another request's, here or anywhere in the fleet), and
	// its answer is the breaker's evidence (room closes a half-open
	// breaker; capacity counts towards opening it).
	Check func(ctx context.Context, c Candidate) (room, checked bool)
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
	// Waited is every wait charged to the budget; Waits says what for.
	Waited time.Duration
	Waits  Waits
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
	e *Engine
	c *Call
	// mu guards the plan, n, winner and live, shared with the attempts in
	// flight (and the committed attempt's noted). The lock order of a request's path: a run's mu and an
	// attempt's (Attempt.mu) are never held together (take one, let it go,
	// then the other); under either, only the engine's own locks are taken
	// (breakers, pacer, reach, balancer, the random source, the clock's
	// timers), and those are leaves: each is held within one method of its
	// own, never across a call out of it.
	mu   sync.Mutex
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
	// unsent is what the request waited since its last attempt began
	// (the plan's waits, pacing before a refusal): the next attempt's
	// record carries it (wait_ms)
	unsent time.Duration
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
	if only, confined := r.plan.confined(); confined {
		defer e.pacer.need(only.Key())()
	}
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
		if st.reset && c.Park && r.resume == nil { // a usage limit's reset: back then, the rung where it was
			return r.outcome(st.Candidate, Outcome{Result: r.last, Verdict: r.last.Verdict, ParkUntil: e.clock.Now().Add(st.Wait), RungLeft: c.Request.RungLeft, NextRung: c.Request.Rung,
				Reason: fmt.Sprintf("the plan's usage limit; parked until its reset in %s", classify.FormatWait(st.Wait))})
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
			r.mu.Lock()
			r.unsent += st.Wait
			r.mu.Unlock()
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

// callerKey is the caller's part of the request's pace key: Key, or
// nothing for a sign-in (Request.SignIn).
func (c *Call) callerKey() string {
	if c.SignIn {
		return ""
	}
	return c.Key
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
		if c.SignIn { // a continuation would be a request the caller never made
			return r.outcome(cand, Outcome{Committed: true, Unfinished: true, Result: *res, Verdict: res.Verdict, Reason: "spillway: " + res.Verdict.Message})
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
		e.pacer.slowDown(rateKey(cand, c.callerKey()))
	}
	if r.st.Action == send && r.st.Candidate.Model != cand.Model && c.OnSwitch != nil {
		c.OnSwitch(cand, r.st.Candidate, res.Verdict)
	}
	return nil
}

// room reports whether Call.Check finds room at a candidate of the chain,
// checking each only with its breaker's leave and telling the breaker
// what it found (see Call.Check).
func (r *run) room(ctx context.Context) bool {
	for _, cand := range r.plan.chain {
		if code, _ := r.crossing(cand); code != "" {
			continue // a step this request never takes
		}
		permit, ok := r.e.allow(ctx, cand.Key(), rateKey(cand, r.c.callerKey()))
		if !ok {
			continue // open, or its probe is out: nothing to look at there now
		}
		room, checked := r.c.Check(ctx, cand)
		switch {
		case !checked:
			permit(classify.Verdict{Class: classify.Unknown})
			return true // it cannot be looked at: the attempt is the check
		case room:
			permit(classify.Verdict{Class: classify.OK})
			return true
		}
		permit(classify.Verdict{Class: classify.Capacity})
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
	o.Route, o.Attempts, o.Waited, o.Waits = r.plan.routeString(), r.plan.attempts(), r.plan.waited, r.plan.waits
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

// takes reports whether the request can be sent to cand at all (a
// cross-vendor step it cannot take is passed over when it is reached).
func (r *run) takes(cand Candidate) bool {
	code, _ := r.crossing(cand)
	return code == ""
}

// crossing is why cand, another vendor's model, is not sent this call's
// request (Call.Cross), "" when it is not another vendor's or can be; and
// why a keyless request (Request.Keyless) is not sent to a step that
// takes the caller's credentials.
func (r *run) crossing(cand Candidate) (code, why string) {
	c := r.c
	if c.Keyless && cand.KeyID == "" && cand.Cloud == "" {
		return NoKey, fmt.Sprintf("provider %s of %s has no api_key of its own, and this request carries no key of its vendor's (a cloud client's credentials are the cloud's, sent nowhere)", cand.Provider, cand.Name())
	}
	if cand.Format == "" || c.Type == "" || cand.Format == c.Type {
		return "", ""
	}
	switch {
	case c.SignIn || c.Via != "":
		return OtherVendor, "a sign-in's request never leaves its own vendor; " + cand.Model + " is " + string(cand.Format) + "'s"
	case !r.e.optedIn(c.Request, cand):
		return Untranslatable, r.e.untranslatable(c.Request)
	case c.Cross == nil:
		return OtherVendor, cand.Model + " is " + string(cand.Format) + "'s model, and this request cannot be translated here (an agent runs its own vendor's models)"
	}
	return c.Cross(cand)
}

// untranslatable says why r's chain is not sent r in another format than
// its own: the same for every step, so it names the model asked for (not
// the step that happens to be the last passed over).
func (e *Engine) untranslatable(r Request) string {
	if len(r.Models) > 0 {
		return fmt.Sprintf("not sent: the chain given (%s) does not translate: none of its models speaks %s, the format the request came in", strings.Join(r.Models, ", "), r.Type)
	}
	if name, _ := e.cfg.ChainFor(r.Model); name != "" {
		return fmt.Sprintf("not sent: model %s is in chain %s, which does not translate: none of its models speaks %s, the format the request came in", r.Model, name, r.Type)
	}
	return fmt.Sprintf("not sent: model %s speaks %s, not %s (the format the request came in), and is in no chain that translates", r.Model, e.cfg.ModelType(r.Model), r.Type)
}

// ready paces st's attempt, asks the breakers and makes it; nil when it is
// not to be sent, with why in out.
func (r *run) ready(ctx context.Context, st *step, out *Result) *Attempt {
	e, c, cand := r.e, r.c, st.Candidate
	r.mu.Lock()
	now := e.clock.Now()
	deadline := now.Add(r.plan.left())
	rk := rateKey(cand, c.callerKey())
	_, confined := r.plan.confined()
	var fleetWait time.Duration // a request with somewhere else to go waits one fleet call for a fleet-wide slot
	if !confined {
		fleetWait = fleetCallTimeout
	}
	if e.pacer.slowed(rk) {
		if !confined {
			// a request with somewhere else to go waits for a pace that
			// rate limits slowed (up to 16×) no longer than an unslowed
			// gap: past it, it moves on (no_slot) instead of waiting
			// seconds for this model while another has room
			if d := now.Add(e.pacer.unslowed()); d.Before(deadline) {
				deadline = d
			}
		}
	}
	wait := ctx
	if st.hedge && r.hedgeWait != nil {
		wait = r.hedgeWait
	}
	r.mu.Unlock()
	if code, why := r.crossing(cand); code != "" {
		*out = Result{Verdict: classify.Verdict{Class: classify.BadRequest, Code: code, Message: why}, NotSent: true}
		return nil
	}
	if e.breakers.Refuses(cand.Key()) {
		// refused before its pace: a step that will not be sent waits
		// nothing for its model's turn (the next step's pace is its own
		// lane's)
		*out = Result{Verdict: refused(cand, BreakerOpen), NotSent: true}
		return nil
	}
	release, start, paced, err := e.pacer.acquireWithin(wait, cand.Key(), rk, deadline, fleetWait)
	r.mu.Lock()
	r.plan.charge(paced)
	r.unsent += paced
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
	permit, ok := e.allow(ctx, cand.Key(), rk)
	if !ok {
		release()
		e.reach.observe(cand.Provider, classify.Verdict{}, 0, probe)
		*out = Result{Verdict: refused(cand, BreakerOpen), NotSent: true}
		return nil
	}
	a := r.begin(ctx, st, start, permit, release, probe)
	if a == nil { // a hedge whose race was decided before it started
		permit(classify.Verdict{Class: classify.Unknown})
		e.reach.observe(cand.Provider, classify.Verdict{}, 0, probe)
		release()
		*out = Result{Verdict: lostVerdict(), NotSent: true}
	}
	return a
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
func (r *run) begin(ctx context.Context, st *step, start time.Time, permit func(classify.Verdict), release func(), probe bool) *Attempt {
	r.mu.Lock()
	if st.hedge && r.winner != nil {
		r.mu.Unlock()
		return nil
	}
	r.n++
	a := &Attempt{Candidate: st.Candidate, N: r.n, RequestID: r.c.ID, FallbackFrom: st.FallbackFrom,
		Continues: r.resumeFrom, Resume: r.resume, r: r, permit: permit, release: release, t0: start, waited: r.unsent, probe: probe, hedging: st.hedge}
	r.unsent = 0
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	r.live = append(r.live, a)
	r.mu.Unlock()
	m := r.e.cfg.Models[st.Candidate.Model]
	if r.c.Watchdogs && r.c.Stream && m.Hedge && !r.c.SignIn && r.e.cfg.FirstToken(st.Candidate.Model) > 0 && !st.hedge && a.Continues == nil {
		a.hedge = make(chan struct{}, 1)
	}
	if r.c.Watchdogs {
		a.arm(watchHeader)
	}
	return a
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
