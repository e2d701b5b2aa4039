package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// Request is what a plan is made for.
type Request struct {
	Model string
	// Type is the wire format of the endpoint the client called; a model the
	// configuration does not know goes to that type's provider as is.
	Type       config.Format
	MinTier    config.Tier // "" for none
	NoFallback bool
	// InputTokens is the request's size as its bytes tell it (about four
	// a token); 0 when unknown. It picks the first model whose context
	// window fits.
	InputTokens int
	// Tokens, when set, is a finer estimate (inline images and PDFs at
	// what they cost, not their base64's length: wire.EstimateTokens). It
	// is asked only when InputTokens passes the smallest known window of
	// the request's chain, so that a request of common size parses
	// nothing; its answer then replaces InputTokens (for the plan and the
	// event records).
	Tokens func() int
	// Budget is the most the request may wait in total; 0 means the
	// configuration's retry.budget.
	Budget time.Duration
	// Models, when set, is the chain to walk instead of the configured one
	// (spillway exec --models); unknown names are taken as they are.
	Models []string
	// Ladder, when set, replaces backoff once the whole chain is at
	// capacity: the n-th exhausted walk waits Ladder[n-1], and after the
	// last rung the plan fails with a global outage (exec and the queue).
	Ladder []time.Duration
	// Rung is how many rungs of the ladder this work has already waited
	// (a queue task parked before): its next rung is Ladder[Rung].
	Rung int
	// CheckEvery, when set, splits a rung longer than it: after each
	// CheckEvery of waiting the chain is walked again (an agent at
	// capacity fails fast), and the first answer ends the rung early; a
	// walk still at capacity waits on, the rung not over (exec and the
	// queue: at most once a minute).
	CheckEvery time.Duration
	// RungLeft is what was left of the current rung (Ladder[Rung]) when a
	// parked request came back for a check: it waits that, in checks,
	// before the next rung.
	RungLeft time.Duration
	// ModelsOnly is for sends that can name a model but not a deployment
	// (a CLI agent given -m): one candidate per model, its first
	// deployment's.
	ModelsOnly bool
	// UntilReset waits a usage limit out: at its reset (Verdict.ResetsAt)
	// the same model is tried again, or, with Park, the request parks
	// until then (no attempt used). The wait is within Budget when Budget
	// is set, else as long as the reset says (spillway exec --until-reset,
	// the queue).
	UntilReset bool
	// SignIn says the caller's credentials are a person's sign-in (a plan's
	// token, not an API key: a Claude login on the API's route, and every
	// request of a Via route). They go only to the provider they came for
	// (another candidate has spillway's own key in their place); the
	// request is sent only as the caller asked, never raced by a hedge nor
	// continued by a request of spillway's own (a broken answer ends
	// Unfinished, for the front end to end); and its pace is the process's
	// own: Call.Key is not part of it (nothing derived from the token
	// reaches the fleet).
	SignIn bool
	// Keyless: the caller sends no credential a vendor's API takes (a
	// cloud client of the gateway's: its credentials are the cloud's, and
	// go nowhere). Every step goes with its provider's own credentials
	// (an api_key, under passthrough too, or a cloud's); a step whose
	// provider has none is passed over (NoKey).
	Keyless bool
	// Via, when set, is the sign-in provider every candidate goes to (the
	// ChatGPT plan's backend): each model of the chain once, under its own
	// name, on that provider alone, so that a plan's models never share a
	// deployment, a breaker or a pace with the API's.
	Via string
	// Park, with a ladder, makes Run return instead of sleeping through a
	// rung (Outcome.ParkUntil): a queue worker has other tasks to run
	// meanwhile. A parked request never ends in a global outage: its last
	// rung repeats.
	Park bool
}

// GlobalOutage starts the reason of a plan that climbed its whole ladder
// with every model at capacity.
const GlobalOutage = "global outage"

// action is what to do next.
type action int

const (
	send action = iota // send to step.Candidate after step.Wait
	done               // the last attempt succeeded
	fail               // give up; step.Reason says why
)

// step is the plan's decision.
type step struct {
	Action    action
	Candidate Candidate
	Wait      time.Duration
	// rung marks a wait that is a rung of the ladder (the whole chain is at
	// capacity): a parked request returns instead of sleeping it.
	rung bool
	// check marks a part of a rung, after which the chain is checked
	check bool
	// FallbackFrom is the model the previous attempt went to when this
	// step switches model.
	FallbackFrom string
	// Reason explains a fail, naming the models tried, their classes and
	// the time waited.
	Reason string
	// Verdict is the last failure (for fail: what to answer the client).
	Verdict classify.Verdict
	// hedge marks the attempt started beside a hedged one: it races, and
	// is not hedged itself.
	hedge bool
	// outage, on a fail: every model stayed at capacity through the whole
	// ladder (Outcome.GlobalOutage)
	outage bool
	// reset marks the wait for a usage limit's reset (Request.UntilReset):
	// a parked request returns instead of sleeping it.
	reset bool
}

// Hop is one attempt's outcome, for X-Spillway-Route and logs.
type Hop struct {
	Model string // the candidate's name: the model, and its deployment when it has several
	Class classify.Class
	// Refused: the attempt was never sent (an open breaker, no pacing
	// slot, a provider that is down); Class then says why.
	Refused bool
	// Vendor, on a cross-vendor step, is the model's wire format: the
	// route shows it ("claude-sonnet-5-5[anthropic]:ok"), the step being
	// translated.
	Vendor config.Format
}

// hop is c's hop of the route with class.
func (p *plan) hop(c Candidate, class classify.Class, refused bool) Hop {
	h := Hop{Model: c.Name(), Class: class, Refused: refused}
	if c.Format != "" && p.req.Type != "" && c.Format != p.req.Type {
		h.Vendor = c.Format
	}
	return h
}

// largeBody is the size (in tokens by its bytes: 64 KB) past which a
// request's finer estimate is asked whatever its chain's windows: a body
// that large most likely carries media.
const largeBody = 16 << 10

// plan is one request's walk along its chain. Only the driver (Run) walks
// plans. It is not safe for concurrent use; one request, one plan.
type plan struct {
	e     *Engine
	req   Request
	chain []Candidate
	cur   int
	walks int
	// rungLeft is what is left of the rung being waited in checks
	// (Request.CheckEvery); rungAt is that rung's index
	rungLeft time.Duration
	rungAt   int
	rateN    map[string]int // by candidate key: rate limits so far
	netN     map[string]int // connection failures so far
	toN      map[string]int // timeouts so far
	srvN     map[string]int
	took     map[string]time.Duration // by candidate key: how long its last failed attempt took
	limited  map[string]bool          // by limitKey: rate-limited in this request
	// resuming: the answer reached the caller and broke; every step now
	// continues it, on candidates that take a partial assistant turn
	resuming      bool
	continuations int
	skip          map[string]bool
	// overflowed: the overflow chain's candidates were added to the chain
	// (once a request: overflow is not transitive)
	overflowed bool
	// passedWhy says why each step passed over was (a give-up names them)
	passedWhy []string
	// limitSkip are the candidates a usage limit skipped (back at its
	// reset); resets counts the waits for one
	limitSkip map[string]bool
	resets    int
	// noFit: no model of the chain is known to fit the request, so the
	// ones of a window no smaller than the requested model's are taken to
	// (the upstream judges)
	noFit    bool
	atLeast  int           // the request is larger than this: a model of that window said it is too long
	walkFrom int           // where the route of the current walk of the chain starts
	passed   int           // before it, the candidates passed over in this walk (their refused hops are noted)
	waited   time.Duration // every wait: the plan's and the pacer's
	waits    Waits         // waited, by what it was for
	spent    time.Duration // against the budget: every wait, and failed HTTP attempts
	budget   time.Duration
	route    []Hop
	lastBad  classify.Verdict
	heard    classify.Verdict // the last answer an upstream gave (no local refusal)
}

// newPlan makes a plan for r.
func (e *Engine) newPlan(r Request) *plan {
	// the counts and marks are made on first use: a request answered at
	// once (most) makes none of them
	p := &plan{e: e, req: r, chain: e.Candidates(r)}
	if r.Tokens != nil && r.InputTokens > 0 {
		smallest := 0
		for _, c := range p.chain {
			if c.Context > 0 && (smallest == 0 || c.Context < smallest) {
				smallest = c.Context
			}
		}
		// (a large body is looked at too, so that the records and a key's
		// daily tokens count media alike at any size)
		if smallest > 0 && r.InputTokens > smallest || r.InputTokens > largeBody {
			p.req.InputTokens = r.Tokens()
		}
	}
	p.budget = r.Budget
	if p.budget <= 0 {
		p.budget = e.cfg.Retry.Budget.D()
	}
	if len(r.Ladder) > 0 && r.Budget <= 0 && !r.Park {
		// with a ladder the capacity waits are the ladder's, and other
		// waits (rate limits, network gaps) still get the budget on top.
		// A parked request waits its rungs elsewhere: the budget is only
		// for what it waits in process (a pacing slot, a Retry-After), and
		// must not hold a queue worker for the whole ladder's length
		for _, d := range r.Ladder {
			p.budget += d
		}
	}
	if r.RungLeft > 0 && len(r.Ladder) > 0 {
		// back from a check of rung r.Rung: the rest of it first
		p.rungLeft, p.walks, p.rungAt = r.RungLeft, 1, r.Rung
	}
	return p
}

// note adds the current candidate's outcome to the route.
func (p *plan) note(v classify.Verdict) { p.noteAt(p.chain[p.cur], v) }

// noteAt adds c's outcome to the route.
func (p *plan) noteAt(c Candidate, v classify.Verdict) {
	hop := p.hop(c, v.Class, local(v))
	if hop.Refused && v.Code != NetworkDown || v.Code == HedgeLost {
		hop.Class = classify.Class(v.Code)
	}
	p.route = append(p.route, hop)
}

// at moves the plan's place to c (an attempt that raced ended there).
func (p *plan) at(c Candidate) {
	for i, x := range p.chain {
		if x.Key() == c.Key() {
			p.cur = i
			return
		}
	}
}

// afterAt is after, for the attempt to c.
func (p *plan) afterAt(c Candidate, v classify.Verdict) step {
	p.at(c)
	return p.after(v)
}

// decideAt is afterAt for an outcome whose hop is already in the route.
func (p *plan) decideAt(c Candidate, v classify.Verdict) step {
	p.at(c)
	return p.decide(v)
}

// charge counts a wait the plan did not ask for (the pacer's) against the
// budget.
func (p *plan) charge(d time.Duration) { p.wait(WaitPace, d) }

// wait counts a wait for what: it is a wait, and it spends the budget.
func (p *plan) wait(what WaitKind, d time.Duration) {
	p.waited += max(d, 0)
	p.spent += max(d, 0)
	p.waits[what] += max(d, 0)
}

// failedAfter charges a failed HTTP attempt to c's time against the
// budget, and remembers it: a retry of c that would likely end past the
// budget is not started.
func (p *plan) failedAfter(c Candidate, d time.Duration) {
	p.spent += max(d, 0)
	put(&p.took, c.Key(), max(d, 0))
}

// left is what remains of the wait budget.
func (p *plan) left() time.Duration { return max(p.budget-p.spent, 0) }

// routeString renders the route: "gpt-6-astra:capacity > gpt-6.1-sol:ok".
// A long route keeps its first and last five hops.
func (p *plan) routeString() string { return renderRoute(p.route) }

// renderRoute renders hops as a route.
func renderRoute(route []Hop) string { return renderRouteWith(route, nil) }

// renderRouteWith renders route and then, when last is not nil, one hop
// more, into one string (on every request's path: one allocation).
func renderRouteWith(route []Hop, last *Hop) string {
	n := len(route)
	if last != nil {
		n++
	}
	hop := func(i int) Hop {
		if i == len(route) {
			return *last
		}
		return route[i]
	}
	size := 0
	for i := range n {
		h := hop(i)
		size += len(h.Model) + len(h.Class) + len(h.Vendor) + 13
	}
	var b strings.Builder
	b.Grow(size)
	for i := range n {
		if n > 12 && i >= 5 && i < n-5 {
			if i == 5 {
				fmt.Fprintf(&b, " > … %d more …", n-10)
			}
			continue
		}
		if i > 0 {
			b.WriteString(" > ")
		}
		h := hop(i)
		if h.Model == "" {
			// a command whose model spillway does not set (not an agent it
			// knows, no {model}): the hop is the command's run
			b.WriteString("command")
		}
		b.WriteString(h.Model)
		if h.Vendor != "" {
			b.WriteByte('[')
			b.WriteString(string(h.Vendor))
			b.WriteByte(']')
		}
		b.WriteByte(':')
		b.WriteString(string(h.Class))
	}
	return b.String()
}

// Local refusals are the Codes of verdicts for attempts that were never
// sent: routes show them in place of a class ("gpt-6-astra:breaker_open"),
// and they are neither logged nor counted as attempts.
const (
	// BreakerOpen: the candidate's breaker is open (or its probe is out).
	BreakerOpen = "breaker_open"
	// Crowded: the candidate's pool has shown less room than
	// pacing.max_concurrency, and that room is taken (or promised to a
	// request that can use no other model): a request that can go
	// elsewhere starts there instead (see pacer.crowded).
	Crowded = "crowded"
	// NoSlot: no concurrency slot and turn came free within the wait
	// budget (pacing.max_concurrency).
	NoSlot = "no_slot"
	// NetworkDown: the candidate's provider is down (its connections fail
	// and it answered nothing for a minute); the route says network.
	NetworkDown = "network_down"
	// NoKey: a cross-vendor step whose provider has no api_key of its own
	// (a caller's credentials never go to another vendor).
	NoKey = "no_key"
	// Untranslatable: a cross-vendor step the request cannot be carried
	// to (a stateful Responses request, hosted tools, audio, images or
	// tools the model does not take).
	Untranslatable = "untranslatable"
	// OtherVendor: a cross-vendor step this request never takes (an
	// agent's run, a sign-in's request).
	OtherVendor = "other_vendor"
)

// refused is the verdict for an attempt to c that was never sent.
func refused(c Candidate, code string) classify.Verdict {
	switch code {
	case NoSlot:
		return classify.Verdict{Class: classify.Capacity, Code: code, Message: "no free slot for " + c.Model + " within the wait budget (pacing.max_concurrency); not sent"}
	case NetworkDown:
		return classify.Verdict{Class: classify.Network, Code: code, Message: "connections to " + c.Provider + " fail and it has answered nothing for a minute; not sent"}
	}
	return classify.Verdict{Class: classify.Capacity, Code: code, Message: "breaker open for " + c.Key() + "; not sent"}
}

func local(v classify.Verdict) bool {
	return v.Code == BreakerOpen || v.Code == NoSlot || v.Code == NetworkDown || passedOver(v)
}

// passedOver reports a step the request can never take (a cross-vendor
// step it cannot be sent): skipped for the rest of the request.
func passedOver(v classify.Verdict) bool {
	return v.Code == NoKey || v.Code == Untranslatable || v.Code == OtherVendor
}

// FailFast reports a class that no wait and no other model can fix (the
// key, the account or the request itself is the problem): the plan gives up
// at once, and front ends pass the upstream's own answer on.
// context_length is one once no model with a larger window is left.
func FailFast(c classify.Class) bool {
	switch c {
	case classify.Quota, classify.UsageLimit, classify.Auth, classify.BadRequest, classify.ContentFilter, classify.ContextLength, classify.Unknown:
		return true
	}
	return false
}

// start is the first step: the first model of the chain whose breaker is not
// open (so requests start at medium while heavy is open), whose room is not
// all taken (see pacer.crowded) and whose context window fits the request.
func (p *plan) start() step {
	if _, known := p.e.cfg.Models[p.req.Model]; !known && len(p.req.Models) == 0 && !p.e.cfg.PassesUnknown() {
		v := classify.Verdict{Class: classify.ModelNotFound, Message: fmt.Sprintf("model %q is not in the configuration", p.req.Model)}
		return step{Action: fail, Verdict: v, Candidate: p.chain[0],
			Reason: fmt.Sprintf("spillway: model %q is not in the configuration (catalog: none): add it under models:, or set passthrough_unknown: true to send unknown models upstream as named", p.req.Model)}
	}
	open := func(c Candidate) bool { return p.e.breakers.Open(c.Key()) }
	// A request larger than the requested model's window starts at the
	// first model whose window is known to be larger and to fit it (a
	// model of unknown window is not known larger); with none, the
	// requested model gets it and the upstream judges.
	var fit func(Candidate) bool // nil: what next allows
	if !p.fits(p.chain[0]) {
		known := func(c Candidate) bool { return c.Context > 0 }
		if _, ok := p.next(0, known); ok {
			fit = known
		} else {
			p.noFit = true
		}
	}
	and := func(ok func(Candidate) bool) func(Candidate) bool {
		if fit == nil {
			return ok
		}
		return func(c Candidate) bool { return fit(c) && (ok == nil || ok(c)) }
	}
	// the first fitting model neither open nor crowded, else the first
	// fitting one not open; with every fitting model open, the last of them
	// (its refusal costs nothing upstream), and with none fitting, the last
	p.cur = -1
	for _, ok := range []func(Candidate) bool{
		func(c Candidate) bool { return !open(c) && !p.e.pacer.crowded(c.Key()) },
		func(c Candidate) bool { return !open(c) },
	} {
		if i, found := p.next(0, and(ok)); found {
			p.cur = p.spread(i, and(ok))
			break
		}
	}
	for i := len(p.chain) - 1; p.cur < 0 && i >= 0; i-- {
		if j, ok := p.next(i, and(nil)); ok && j == i {
			p.cur = i
		}
	}
	if p.cur < 0 {
		p.cur = len(p.chain) - 1
	}
	p.passed = p.cur
	for _, c := range p.chain[:p.cur] {
		switch {
		case !p.fits(c) || fit != nil && !fit(c):
			p.route = append(p.route, p.hop(c, classify.ContextLength, true))
		case open(c):
			p.route = append(p.route, p.hop(c, BreakerOpen, true))
		case p.e.pacer.crowded(c.Key()):
			// its reduced room taken: passed over, and the route says so
			p.route = append(p.route, p.hop(c, Crowded, true))
		}
	}
	st := step{Action: send, Candidate: p.chain[p.cur]}
	if first := p.chain[0]; fit != nil && st.Candidate.Model != first.Model {
		// moved on for the request's size: a fallback like any other
		st.FallbackFrom = first.Name()
		st.Verdict = classify.Verdict{Class: classify.ContextLength,
			Message: fmt.Sprintf("the request (about %d tokens) is larger than %s's context window of %d tokens", p.req.InputTokens, first.Model, first.Context)}
	}
	return st
}

// spread balances a request across the deployments of the model it starts
// at (chain[i]'s): of those that pass ok, the engine picks one by weight and
// fewest in flight and moves it to the front of the model's run of
// candidates, where the request starts; the others follow, for it to spill
// to. It returns where the request starts.
func (p *plan) spread(i int, ok func(Candidate) bool) int {
	a, b := i, i+1
	for a > 0 && p.chain[a-1].Model == p.chain[i].Model {
		a--
	}
	for b < len(p.chain) && p.chain[b].Model == p.chain[i].Model {
		b++
	}
	if b-a < 2 {
		return i
	}
	var healthy []int
	for j := a; j < b; j++ {
		if k, found := p.next(j, ok); found && k == j {
			healthy = append(healthy, j)
		}
	}
	best := healthy[p.e.balancer.pick(p.chain, healthy, p.e.pacer.inflight)]
	run := append([]Candidate{p.chain[best]}, append(append([]Candidate(nil), p.chain[a:best]...), p.chain[best+1:b]...)...)
	copy(p.chain[a:b], run)
	return a
}

// fits reports whether the request fits c's context window, as far as is
// known (an unknown window fits); every candidate fits once none is known
// to (noFit: the upstream judges).
func (p *plan) fits(c Candidate) bool {
	need := max(p.req.InputTokens, p.atLeast)
	if p.noFit {
		// no model is known to fit: the upstream judges, at a window no
		// smaller than the requested model's
		need = max(p.chain[0].Context, p.atLeast)
	}
	return c.Context == 0 || need == 0 || need <= c.Context
}

// attempts counts the hops that went upstream (not the local refusals).
func (p *plan) attempts() int {
	n := 0
	for _, h := range p.route {
		if !h.Refused {
			n++
		}
	}
	return n
}

// put sets (*m)[k] = v, making the map on first use.
func put[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[k] = v
}
