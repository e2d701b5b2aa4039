package policy

import (
	"context"
	"errors"

	"github.com/spillway/spillway/classify"
)

// hedgeStep is the attempt to start beside the hedged attempt to c, which
// passed its first-token limit: the next candidate (as a timeout would
// move on to), or fail when there is none.
func (p *plan) hedgeStep(c Candidate, takes func(Candidate) bool) step {
	p.at(c)
	next, ok := p.onward(takes) // never a step that would be passed over: that is no race
	if !ok {
		return step{Action: fail}
	}
	st := p.switchTo(next, c)
	st.hedge = true
	return st
}

// racer is an attempt that runs on while the request goes on without it: a
// hedged attempt past its first-token limit, racing the next model's.
type racer struct {
	a    *Attempt
	cand Candidate
	done chan Result
}

// race runs the next model beside rc's attempt, which passed its
// first-token limit: whichever reports output first answers, and the other
// is given up (both reach the upstream and are counted). It leaves the
// candidate and result to go on with in r.cand and r.res: the one that
// answered, or, when neither did, the hedge's (the plan then moves on from
// it), with the hedged attempt's own hop noted first.
func (r *run) race(ctx context.Context, rc *racer) {
	r.mu.Lock()
	st := r.plan.hedgeStep(rc.cand, r.takes)
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
			r.e.pacer.slowDown(rateKey(st.Candidate, r.c.callerKey()))
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
