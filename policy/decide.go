package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/words"
)

// after records the outcome of the attempt sent to the current candidate
// and returns the next step.
func (p *plan) after(v classify.Verdict) step {
	if v.Code != HedgeLost { // a race's loser is noted when it loses
		p.note(v)
	}
	return p.decide(v)
}

// decide is after, but for the note.
func (p *plan) decide(v classify.Verdict) step {
	c := p.chain[p.cur]
	if v.Class == classify.OK {
		return step{Action: done, Candidate: c}
	}
	if passedOver(v) {
		return p.passOver(c, v)
	}
	p.lastBad = v
	if !local(v) {
		p.heard = v
	}
	if p.resuming && v.Code == classify.PrefillRefused {
		// the model refuses a partial assistant turn: never again, and
		// the continuation goes on elsewhere
		p.e.noPrefill.Store(c.Model, true)
		if next, ok := p.onward(nil); ok {
			return p.switchTo(next, c)
		}
		return p.fail(v, "the answer broke after output started, and no model that takes a partial answer to continue is left")
	}
	if v.Code == classify.TooLarge {
		// an answer larger than spillway holds for a request: the model
		// would send it again, so it is not asked again
		put(&p.skip, c.Key(), true)
		if next, ok := p.onward(nil); ok {
			return p.switchTo(next, c)
		}
		return p.fail(v, "its answer was larger than spillway holds for a request, and no other model is left to try")
	}
	switch v.Class {
	case classify.Capacity:
		return p.onCapacity(c, v)
	case classify.ServerError:
		put(&p.srvN, c.Key(), p.srvN[c.Key()]+1)
		if wait := max(v.Wait, p.e.backoff(1)); p.srvN[c.Key()] <= 1 && p.fitsRetry(c, wait) {
			return p.retrySame(c, wait)
		}
		return p.onCapacity(c, v)
	case classify.RateLimit:
		return p.onRateLimit(c, v)
	case classify.Network:
		return p.onNetwork(c, v)
	case classify.Timeout:
		put(&p.toN, c.Key(), p.toN[c.Key()]+1)
		retry := p.toN[c.Key()] <= p.e.cfg.Retry.TimeoutRetries
		if retry && p.fitsRetry(c, v.Wait) {
			return p.retrySame(c, v.Wait)
		}
		if next, ok := p.onward(nil); ok {
			return p.switchTo(next, c)
		}
		if retry {
			return p.fail(v, p.noRoomFor(c, v.Wait))
		}
		return p.fail(v, fmt.Sprintf("timed out after %d %s, and no other model is left to try", p.toN[c.Key()], words.Plural(p.toN[c.Key()], "try", "tries")))
	case classify.ModelNotFound:
		put(&p.skip, c.Key(), true)
		if next, ok := p.next(p.cur+1, nil); ok {
			return p.switchTo(next, c)
		}
		return p.fail(v, "no model in the chain exists for this key")
	case classify.Auth:
		if c.KeyID != "" {
			// spillway's own credentials (a key of its own, a cloud's)
			// were refused: no step sent with them is asked again, and a
			// step with other credentials (the model's deployment in
			// another region or cloud) may answer. With none, and for the
			// caller's own key, the request fails at once, below.
			other := func(n Candidate) bool { return !sameCredential(n, c) }
			if next, ok := p.onward(other); ok {
				for _, x := range p.chain {
					if sameCredential(x, c) {
						put(&p.skip, x.Key(), true)
					}
				}
				return p.switchTo(next, c)
			}
		}
	case classify.UsageLimit:
		return p.onUsageLimit(c, v)
	case classify.ContextLength:
		// only a strictly larger window may take it (one of unknown size
		// is not known larger); a smaller one on the way is passed over
		p.noFit, p.atLeast = false, max(p.atLeast, c.Context+1)
		bigger := func(n Candidate) bool { return c.Context > 0 && n.Context > c.Context }
		if next, ok := p.next(p.cur+1, bigger); ok {
			return p.switchTo(next, c)
		}
		return p.fail(v, "the request is larger than every remaining model's context window")
	}
	return p.fail(v, "")
}

// onward is the candidate after the current one a request should move to:
// the first whose breaker is not open and whose room is not all taken, else
// the first not open, else (every breaker open) the first there is; only
// among those ok allows (all when nil).
func (p *plan) onward(ok func(Candidate) bool) (int, bool) {
	allowed := func(n Candidate) bool { return ok == nil || ok(n) }
	if next, found := p.next(p.cur+1, func(n Candidate) bool {
		return allowed(n) && !p.e.breakers.Open(n.Key()) && !p.e.pacer.crowded(n.Key())
	}); found {
		return next, true
	}
	if next, found := p.next(p.cur+1, func(n Candidate) bool { return allowed(n) && !p.e.breakers.Open(n.Key()) }); found {
		return next, true
	}
	return p.next(p.cur+1, allowed)
}

// passOver skips c, a step this request can never take, for the rest of
// it, and goes on as from a full model (the others may still be full);
// with no step left at all, it fails with what the last one said, or with
// why c was passed over when nothing was sent.
func (p *plan) passOver(c Candidate, v classify.Verdict) step {
	put(&p.skip, c.Key(), true)
	why := v.Message
	if !names(why, c.Model) { // (said once: most reasons name it)
		why = c.Name() + ": " + why
	}
	p.passedWhy = append(p.passedWhy, why)
	if _, ok := p.next(0, nil); !ok {
		if p.overflowed || len(p.e.overflowCandidates(p.req, p.chain[0], false)) == 0 {
			if p.lastBad.Class != "" {
				return p.fail(p.lastBad, p.walkSays())
			}
			return p.fail(v, v.Message)
		}
	}
	last := v
	if p.lastBad.Class != "" {
		last = p.lastBad
	}
	if next, ok := p.onward(nil); ok {
		return p.switchTo(next, c)
	}
	if next, ok := p.overflow(c, false, nil); ok {
		return p.switchTo(next, c)
	}
	if p.lastBad.Class == "" {
		return p.fail(v, v.Message)
	}
	return p.onCapacity(c, last)
}

// onRateLimit: the same model after its Retry-After (or backoff), at most
// retry.rate_limit_retries times and within the budget, then the next
// model; a deployment of the same model with another key first, at once
// (the limit is the key's, not the model's).
func (p *plan) onRateLimit(c Candidate, v classify.Verdict) step {
	key := c.Key()
	put(&p.rateN, key, p.rateN[key]+1)
	put(&p.limited, limitKey(c), true)
	// a candidate whose model and key were rate-limited in this request
	// would answer the same
	fresh := func(n Candidate) bool { return !p.limited[limitKey(n)] }
	otherKey := func(n Candidate) bool {
		return n.Model == c.Model && fresh(n) && !p.e.breakers.Open(n.Key())
	}
	if next, ok := p.next(p.cur+1, otherKey); ok {
		return p.switchTo(next, c)
	}
	wait := v.Wait
	if wait <= 0 {
		wait = p.e.backoff(p.rateN[key])
	}
	retries := p.e.cfg.Retry.RateLimitRetries
	if p.rateN[key] <= retries && p.fitsRetry(c, wait) {
		return p.retrySame(c, wait)
	}
	if next, ok := p.onward(fresh); ok {
		return p.switchTo(next, c)
	}
	if p.rateN[key] > retries {
		return p.fail(v, fmt.Sprintf("rate limited %s (retry.rate_limit_retries: %d), and no other model is left to try", words.Count(p.rateN[key], "time"), retries))
	}
	return p.fail(v, "rate limited; "+p.noRoomFor(c, wait))
}

// onNetwork: the same model again after retry.network_gap, network_retries
// times; then another deployment of the model at another provider; then
// the next model only when the provider answered something else within the
// last minute (the network is fine, the model is not). Otherwise the
// request fails as network: a network problem is never masked as capacity.
// A provider already known down is not retried.
func (p *plan) onNetwork(c Candidate, v classify.Verdict) step {
	key := c.Key()
	down := local(v)
	if !down {
		put(&p.netN, key, p.netN[key]+1)
		if wait := max(v.Wait, p.e.cfg.Retry.NetworkGap.D()); p.netN[key] <= p.e.cfg.Retry.NetworkRetries && p.fitsRetry(c, wait) {
			return p.retrySame(c, wait)
		}
	}
	elsewhere := func(n Candidate) bool { return n.Model == c.Model && n.Provider != c.Provider }
	if next, ok := p.next(p.cur+1, elsewhere); ok {
		return p.switchTo(next, c)
	}
	if !down && p.e.reach.answeredWithin(c.Provider, recently) {
		if next, ok := p.onward(nil); ok {
			return p.switchTo(next, c)
		}
	}
	switch {
	case down:
		return p.fail(v, fmt.Sprintf("%s is unreachable: its connections fail and it has answered nothing for a minute; check your network, proxy or VPN", c.Provider))
	case p.netN[key] <= p.e.cfg.Retry.NetworkRetries:
		return p.fail(v, p.noRoomFor(c, max(v.Wait, p.e.cfg.Retry.NetworkGap.D())))
	}
	return p.fail(v, fmt.Sprintf("network failures persisted after %s on the same model, and %s has answered nothing else for a minute; check your network, proxy or VPN", words.Count(p.e.cfg.Retry.NetworkRetries, "retry"), c.Provider))
}

func (p *plan) onCapacity(c Candidate, v classify.Verdict) step {
	if next, ok := p.onward(nil); ok {
		return p.switchTo(next, c)
	}
	// one walk of the chain's own models found no room: its overflow chain
	// next, before any backoff
	if next, ok := p.overflow(c, false, nil); ok {
		return p.switchTo(next, c)
	}
	if p.walkBroken() {
		// every model failed on its own (a server_error after its
		// retry), and none said it is full: waiting for room would not
		// help, and walking the chain again would fail the same way
		return p.fail(v, p.walkSays())
	}
	return p.exhausted(c, v)
}

// overflow adds the overflow chain's candidates to the chain (once a
// request) and returns the first to try, among those ok allows.
func (p *plan) overflow(c Candidate, forLimit bool, ok func(Candidate) bool) (int, bool) {
	if p.overflowed {
		return 0, false
	}
	// (a model already in the chain is not added again: a candidate is in
	// the chain once, or the walk would go back and forth between the two)
	in := map[string]bool{}
	for _, x := range p.chain {
		in[x.Key()] = true
	}
	more := slices.DeleteFunc(p.e.overflowCandidates(p.req, p.chain[0], forLimit), func(x Candidate) bool { return in[x.Key()] })
	if len(more) == 0 {
		return 0, false
	}
	p.overflowed = true
	start := len(p.chain)
	p.chain = append(p.chain[:len(p.chain):len(p.chain)], more...)
	return p.next(start, ok)
}

// maxResets bounds how many times a request waits for a usage limit's
// reset: a limit said again after its reset is not waited for forever.
const maxResets = 3

// onUsageLimit: a plan's usage window used up is the account's, so no
// model sent with the same credentials is tried again; with the chain's
// on_usage_limit: overflow, the overflow chain's models with spillway's
// own key answer instead; else the request fails, and the front end passes
// the provider's own answer on (Codex prints its reset time).
func (p *plan) onUsageLimit(c Candidate, v classify.Verdict) step {
	for _, x := range p.chain {
		if sameCredential(x, c) && !p.skip[x.Key()] {
			put(&p.skip, x.Key(), true)
			put(&p.limitSkip, x.Key(), true)
		}
	}
	other := func(n Candidate) bool { return !sameCredential(n, c) }
	if p.overflowed && p.e.limitOverflows(p.req) {
		// the overflow chain is in already (a walk at capacity): its
		// models with spillway's own key
		if next, ok := p.next(p.cur+1, func(n Candidate) bool { return other(n) && n.KeyID != "" }); ok {
			return p.switchTo(next, c)
		}
	}
	if next, ok := p.overflow(c, true, other); ok {
		return p.switchTo(next, c)
	}
	why := "the plan's usage window is used up"
	if !v.ResetsAt.IsZero() {
		why += "; it resets at " + v.ResetsAt.UTC().Format(time.RFC3339)
	}
	if p.req.UntilReset && !v.ResetsAt.IsZero() {
		// wait it out: the same model again at the reset (a second after
		// it, and never at once: a reset already past that is said again
		// would have the request loop)
		p.resets++
		if p.resets > maxResets {
			return p.fail(v, why+fmt.Sprintf("; it did not reset at the time it said, %d times", maxResets))
		}
		wait := max(v.ResetsAt.Sub(p.e.clock.Now())+time.Second, p.e.backoff(p.resets))
		if !p.req.Park && p.req.Budget > 0 && p.spent+wait > p.budget {
			return p.fail(v, why+fmt.Sprintf(", past the wait budget of %s", classify.FormatWait(p.budget)))
		}
		for k := range p.limitSkip { // only what the limit skipped
			delete(p.skip, k)
		}
		p.limitSkip = nil
		if !p.req.Park {
			// the wait for a reset is the plan's, not the wait budget's
			// (unless one was set): the capacity waits after it keep theirs
			p.waited += wait
			p.waits[WaitReset] += wait
			if p.req.Budget > 0 {
				p.spent += wait
			}
		}
		return step{Action: send, Candidate: c, Wait: wait, reset: true}
	}
	return p.fail(v, why)
}

// walkBroken reports whether every attempt of the walk of the chain that
// just ended was a server_error (a model passed over for the request's
// size, or refused without a send, does not count either way).
func (p *plan) walkBroken() bool {
	sent := 0
	for _, h := range p.route[min(p.walkFrom, len(p.route)):] {
		switch {
		case h.Refused || h.Class == HedgeLost:
		case h.Class != classify.ServerError:
			return false
		default:
			sent++
		}
	}
	return sent > 0
}

// walkSays is what the walk of the chain that just ended found, in the
// words of the classes that happened: "at capacity" only when every model
// was full.
func (p *plan) walkSays() string {
	var classes []string
	for _, h := range p.route[min(p.walkFrom, len(p.route)):] {
		if h.Class == HedgeLost { // says nothing of the model
			continue
		}
		name := string(h.Class)
		if h.Refused && (h.Class == BreakerOpen || h.Class == NoSlot || h.Class == Crowded) {
			name = string(classify.Capacity)
		}
		if !slices.Contains(classes, name) {
			classes = append(classes, name)
		}
	}
	switch {
	case len(classes) == 0:
		return "no model of the chain answered"
	case len(classes) == 1 && classes[0] == string(classify.Capacity):
		return "every model of the chain is at capacity"
	case !slices.Contains(classes, string(classify.Capacity)):
		return "every model of the chain failed (" + strings.Join(classes, ", ") + "), and none was full"
	}
	return "no model of the chain could answer (" + strings.Join(classes, ", ") + ")"
}

// exhausted is the step after a walk of the whole chain found every model
// at capacity (or a check found no room): back off (or climb the ladder),
// then walk it again from the top.
func (p *plan) exhausted(c Candidate, v classify.Verdict) step {
	rung := len(p.req.Ladder) > 0
	if rung && p.rungLeft > 0 {
		// a check within a rung found no room: the rung goes on
		return p.rungCheck(c, v)
	}
	p.walks++
	var wait time.Duration
	if rung {
		i := p.req.Rung + p.walks - 1
		if i >= len(p.req.Ladder) {
			if !p.req.Park {
				return p.outage(v, fmt.Sprintf("%s: every model stayed at capacity through the whole wait ladder", GlobalOutage))
			}
			i = len(p.req.Ladder) - 1
		}
		p.rungAt = i
		wait = max(p.req.Ladder[i], v.Wait)
		if !p.req.Park && p.spent+wait > p.budget {
			return p.outage(v, fmt.Sprintf("%s: every model stayed at capacity, and the next wait (%s) would pass the wait budget of %s", GlobalOutage, classify.FormatWait(wait), p.budget))
		}
		if every := p.req.CheckEvery; every > 0 && wait > every {
			// the rung in checks: the first after every
			p.rungLeft, wait = wait, 0
			return p.rungCheck(c, v)
		}
	} else {
		wait = max(p.e.backoff(p.walks), v.Wait)
		if p.spent+wait > p.budget {
			return p.fail(v, p.walkSays())
		}
	}
	i, ok := p.top()
	if !ok {
		return p.fail(v, p.walkSays())
	}
	if only, confined := p.confined(); confined && p.req.Park {
		// a parked request leaves the engine while it waits (one in
		// process is counted as under way: Engine.Run, pacer.need)
		p.e.pacer.reserve(only.Key(), p.e.clock.Now().Add(wait+wait/4))
	}
	if !p.req.Park || !rung {
		kind := WaitBackoff
		if rung {
			kind = WaitRung
		}
		p.wait(kind, wait) // a parked request does not wait here
	}
	p.cur, p.walkFrom, p.passed = i, len(p.route), 0
	first := p.chain[i]
	s := step{Action: send, Candidate: first, Wait: wait, rung: rung}
	if first.Key() != c.Key() {
		s.FallbackFrom = c.Name()
	}
	return s
}

// rungCheck waits the next part of a rung being checked (at most
// CheckEvery of what is left of it), then walks the chain again from the
// top: the check.
func (p *plan) rungCheck(c Candidate, v classify.Verdict) step {
	i, ok := p.top()
	if !ok {
		return p.fail(v, p.walkSays())
	}
	// (the rung covers a Retry-After already: it is not added again)
	wait := min(p.req.CheckEvery, p.rungLeft)
	p.rungLeft -= wait
	if !p.req.Park {
		p.wait(WaitRung, wait)
	}
	p.cur, p.walkFrom, p.passed = i, len(p.route), 0
	first := p.chain[i]
	s := step{Action: send, Candidate: first, Wait: wait, rung: true, check: true}
	if first.Key() != c.Key() {
		s.FallbackFrom = c.Name()
	}
	return s
}

// fitsRetry reports whether another try of c after wait fits what is left
// of the budget: the wait, and as long again as c's last failed try took.
// A retry that does not fit is not a failure of the request: the caller
// goes on to its next option (another model waits nothing).
func (p *plan) fitsRetry(c Candidate, wait time.Duration) bool {
	return p.left() > 0 && p.spent+wait+p.took[c.Key()] <= p.budget
}

// noRoomFor says why a retry of c after wait did not fit the budget.
func (p *plan) noRoomFor(c Candidate, wait time.Duration) string {
	switch took := p.took[c.Key()]; {
	case p.left() <= 0:
		return fmt.Sprintf("the wait budget of %s is spent", p.budget)
	case took > 0:
		return fmt.Sprintf("another try (a wait of %s, and %s as the last one took) would pass the wait budget of %s",
			classify.FormatWait(wait), classify.FormatWait(took), p.budget)
	}
	return fmt.Sprintf("waiting %s more would exceed the wait budget of %s", classify.FormatWait(wait), p.budget)
}

// retrySame tries c again after wait (which fitsRetry allowed).
func (p *plan) retrySame(c Candidate, wait time.Duration) step {
	p.wait(WaitRetry, wait)
	return step{Action: send, Candidate: c, Wait: wait}
}

// switchTo moves to chain[i] at once. It waits nothing, so the budget
// does not stop it: a silent model whose timeout took the budget is still
// followed by its fallback (each model is tried once; no wait starts past
// the budget).
func (p *plan) switchTo(i int, from Candidate) step {
	for j := max(p.cur+1, p.passed); j < i; j++ {
		if c := p.chain[j]; !p.fits(c) { // passed over for the request's size: a refused hop, once
			p.route = append(p.route, p.hop(c, classify.ContextLength, true))
		}
	}
	p.passed = max(p.passed, i)
	p.cur = i
	return step{Action: send, Candidate: p.chain[i], FallbackFrom: from.Name()}
}

// confined reports whether the plan can use a single model only (its
// minimum tier or chain leaves no other), and which.
func (p *plan) confined() (Candidate, bool) {
	var only Candidate
	n := 0
	for i, c := range p.chain {
		if j, ok := p.next(i, nil); !ok || j != i {
			continue // skipped, or too small for the request
		}
		if n == 0 || c.Key() != only.Key() {
			only, n = c, n+1
		}
	}
	return only, n == 1
}

// top is where a walk of the chain starts again after a wait: the first
// usable candidate whose scarce room is not promised to requests that can
// use no other model (see pacer.crowded), else the first usable one. A
// request that may take a lower model then does not take, and collide
// with, the one slot a full pool frees for a request that waits for it.
func (p *plan) top() (int, bool) {
	if i, ok := p.next(0, func(c Candidate) bool { return !p.e.pacer.crowded(c.Key()) }); ok {
		return i, true
	}
	return p.next(0, nil)
}

// next finds the first usable candidate at or after i.
func (p *plan) next(i int, ok func(Candidate) bool) (int, bool) {
	for ; i < len(p.chain); i++ {
		c := p.chain[i]
		if p.skip[c.Key()] || !p.fits(c) || p.resuming && !p.e.prefills(c) {
			continue
		}
		if ok != nil && !ok(c) {
			continue
		}
		return i, true
	}
	return 0, false
}

// outage is fail, for a chain that stayed at capacity through the whole
// ladder.
func (p *plan) outage(v classify.Verdict, why string) step {
	st := p.fail(v, why)
	st.outage = true
	return st
}

func (p *plan) fail(v classify.Verdict, why string) step {
	// name each model once, with the classes it answered
	var order []string
	classes := map[string][]string{}
	for _, h := range p.route {
		if _, seen := classes[h.Model]; !seen {
			order = append(order, h.Model)
		}
		cs := classes[h.Model]
		if len(cs) == 0 || cs[len(cs)-1] != string(h.Class) {
			classes[h.Model] = append(cs, string(h.Class))
		}
	}
	tried := make([]string, len(order))
	for i, m := range order {
		tried[i] = fmt.Sprintf("%s (%s)", m, strings.Join(classes[m], ", "))
	}
	reason := fmt.Sprintf("spillway: %s", v.Class)
	if why != "" {
		reason += ": " + why
	}
	attempts := p.attempts()
	noun := "attempts"
	if attempts == 1 {
		noun = "attempt"
	}
	if attempts == 0 && why != "" && why == v.Message {
		// nothing was sent: the local reason is the whole story, said once
		// (no "tried … in 0 attempts", no "last upstream message")
		return step{Action: fail, Reason: reason, Verdict: v, Candidate: p.chain[p.cur]}
	}
	reason += fmt.Sprintf("; tried %s in %d %s; waited %s", strings.Join(tried, ", "), attempts, noun, classify.FormatWait(p.waited))
	if len(p.passedWhy) > 0 && !passedOver(v) { // why a step was passed over, when the last word is not that already
		reason += "; passed over: " + strings.Join(p.passedWhy, "; ")
	}
	said := v
	if local(v) {
		said = p.heard // a refusal of spillway's is in the route already
	}
	if said.Message != "" && attempts > 0 {
		// (an error of the HTTP client quotes the URL: a Gemini key in its
		// query must not reach the caller's answer or a log)
		reason += "; last upstream message: " + redact.String(said.Message)
	}
	return step{Action: fail, Reason: reason, Verdict: v, Candidate: p.chain[p.cur]}
}

// names reports whether text names model as a whole name: not "gpt-6"
// within "gpt-6-luna".
func names(text, model string) bool {
	part := func(c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_'
	}
	for i := 0; model != ""; {
		j := strings.Index(text[i:], model)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(model)
		// (a sentence's full stop after the name ends it)
		if (start == 0 || !part(text[start-1])) && (end == len(text) || !part(text[end]) || text[end] == '.' && (end+1 == len(text) || text[end+1] == ' ')) {
			return true
		}
		i = start + 1
	}
	return false
}
