package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/redact"
)

// Candidate is one place a request may be sent to: a model and, once models
// may have several, one of its deployments.
type Candidate struct {
	Model    string            // the name clients use
	Upstream string            // the name sent upstream
	Provider string            // provider name in the configuration
	Type     classify.Provider // the provider's wire format
	Tier     config.Tier       // "" for a model the configuration does not know
	Context  int               // 0 when unknown
	// Deployment names one of the model's deployments; empty while a model
	// has exactly one (its provider's). Weight shares healthy traffic
	// between a model's deployments.
	Deployment string
	Weight     int
	// KeyID identifies the credentials the candidate is sent with when its
	// provider sends a key of its own (auth: key): a hash, never the key.
	// Empty when the caller's credentials go through. Rate limits are per
	// key: deployments of a model that share one share its pace.
	KeyID string
}

// Name is the candidate's name in routes and messages: the model, and its
// deployment when it has several ("gpt-6-astra@eu").
func (c Candidate) Name() string {
	if c.Deployment != "" {
		return c.Model + "@" + c.Deployment
	}
	return c.Model
}

// Key identifies the candidate's breaker, pacing lane and adaptive limit.
func (c Candidate) Key() string {
	if c.Deployment != "" {
		return c.Provider + "/" + c.Upstream + "@" + c.Deployment
	}
	return c.Provider + "/" + c.Upstream
}

// Request is what a plan is made for.
type Request struct {
	Model string
	// Type is the wire format of the endpoint the client called; a model the
	// configuration does not know goes to that type's provider as is.
	Type       classify.Provider
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
}

// Hop is one attempt's outcome, for X-Spillway-Route and logs.
type Hop struct {
	Model string // the candidate's name: the model, and its deployment when it has several
	Class classify.Class
	// Refused: the attempt was never sent (an open breaker, no pacing
	// slot, a provider that is down); Class then says why.
	Refused bool
}

// Rand returns a float in [0, 1).
type Rand func() float64

// Engine is the policy engine: its plans decide, its driver (Run) acts on
// the decisions, and its breakers and pacer remember what the models said.
// It is safe for concurrent use; share one among everything that sends to
// the same models.
type Engine struct {
	cfg      *config.Config
	clock    Clock
	rnd      Rand
	rndMu    *sync.Mutex // shared with the engines Reconfigured makes
	breakers Breakers
	fleet    Fleet // nil: this process alone
	pacer    *pacer
	reach    *reach
	balancer balancer
	classify func(classify.Input) classify.Verdict
	batch    bool
	// noPrefill: models seen refusing a partial assistant turn
	noPrefill sync.Map
	// known are the candidate keys of the configured models: the state of
	// any other (a name a client makes up) is bounded, and shown only as
	// a count
	known map[string]bool
}

// largeBody is the size (in tokens by its bytes: 64 KB) past which a
// request's finer estimate is asked whatever its chain's windows: a body
// that large most likely carries media.
const largeBody = 16 << 10

// knownKeys are the candidate keys of cfg's models.
func knownKeys(cfg *config.Config) map[string]bool {
	known := map[string]bool{}
	for name := range cfg.Models {
		for _, d := range cfg.Deployments(name) {
			known[Candidate{Provider: d.Provider, Upstream: d.Upstream, Deployment: d.Name}.Key()] = true
		}
	}
	return known
}

// learn sets the engine's known keys for its configuration, and tells
// the in-memory breakers.
func (e *Engine) learn() {
	e.known = knownKeys(e.cfg)
	if mb, ok := e.breakers.(*MemoryBreakers); ok {
		known := e.known
		mb.SetKnown(func(key string) bool { return known[key] })
	}
}

// KnownKey reports whether key (Candidate.Key) is a configured model's.
func (e *Engine) KnownKey(key string) bool { return e.known[key] }

// OtherBreakers is how many breakers of models outside the configuration
// the engine keeps (the 256 used last; 0 for shared breakers that do not
// say).
func (e *Engine) OtherBreakers() int {
	if mb, ok := e.breakers.(*MemoryBreakers); ok {
		return mb.Others()
	}
	return 0
}

// prefills reports whether c may be sent a continuation: its wire format
// takes a partial assistant turn (Anthropic Messages), its configuration
// does not say prefill: false, and it has not refused one.
func (e *Engine) prefills(c Candidate) bool {
	if c.Type != classify.Anthropic || !e.cfg.Prefills(c.Model) {
		return false
	}
	_, refused := e.noPrefill.Load(c.Model)
	return !refused
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock sets the clock (tests).
func WithClock(c Clock) Option { return func(e *Engine) { e.clock = c } }

// WithRand sets the random source (tests).
func WithRand(r Rand) Option { return func(e *Engine) { e.rnd = r } }

// ForBatchWork makes pacing.when: auto pace from the first request, as
// batch work (the library, the queue) wants; without it auto paces only
// under pressure, as an interactive gateway wants.
func ForBatchWork() Option { return func(e *Engine) { e.batch = true } }

// WithBreakers replaces the in-memory breakers (a fleet shares them).
func WithBreakers(b Breakers) Option { return func(e *Engine) { e.breakers = b } }

// WithClassifier replaces classify.Classify for every failure signal the
// engine's front ends meet: an upstream's error answer (status, headers,
// body), a stream's error event (its name and data), a line an agent
// printed; Input.Provider is the candidate's wire format. What f returns
// decides what the driver does: Class picks the rule, Wait is a floor for
// the next wait, Message goes to the record and the route's account. f is
// called concurrently and on the request's path: it must be safe for
// concurrent use and quick. To change a few cases, call classify.Classify
// and adjust its verdict.
func WithClassifier(f func(classify.Input) classify.Verdict) Option {
	return func(e *Engine) { e.classify = f }
}

// Classify is the engine's classifier (classify.Classify unless
// WithClassifier replaced it).
func (e *Engine) Classify(in classify.Input) classify.Verdict { return e.classify(in) }

// New returns an engine for cfg.
func New(cfg *config.Config, opts ...Option) *Engine {
	e := &Engine{cfg: cfg, clock: RealClock{}, classify: classify.Classify, rndMu: &sync.Mutex{}}
	src := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5b111))
	e.rnd = src.Float64
	for _, o := range opts {
		o(e)
	}
	if e.breakers == nil {
		e.breakers = NewMemoryBreakers(cfg.Breaker, e.clock)
	}
	e.learn()
	always := cfg.Pacing.When == config.PaceAlways || e.batch && cfg.Pacing.When != config.PacePressure
	e.pacer = newPacer(cfg.Pacing, always, e.clock, e.random, e.fleet)
	e.reach = newReach(e.clock, cfg.Retry.NetworkRetries+1, cfg.Breaker.Cooldown.D())
	if e.fleet != nil {
		e.fleet.Listen(e.heard)
	}
	return e
}

// Reconfigured is an engine for cfg that keeps what e learned: the
// breakers (a deployment that remains keeps its state; a removed one's is
// never asked again), each provider's reachability, the models that
// refused a prefill, and the pacer while the pacing settings are the same.
// The breakers keep the thresholds they were made with while breaker:
// settings are unchanged; changed settings start new breakers. e goes on
// serving the requests it has; new requests should use the result.
func (e *Engine) Reconfigured(cfg *config.Config) (ne *Engine, kept []string) {
	ne = &Engine{cfg: cfg, clock: e.clock, rnd: e.rnd, rndMu: e.rndMu, classify: e.classify, batch: e.batch, reach: e.reach, fleet: e.fleet} // one random source, one lock
	e.noPrefill.Range(func(k, v any) bool { ne.noPrefill.Store(k, v); return true })
	kept = append(kept, "reachability")
	_, memory := e.breakers.(*MemoryBreakers)
	if !memory || reflect.DeepEqual(e.cfg.Breaker, cfg.Breaker) {
		ne.breakers = e.breakers // shared breakers (a fleet's) are kept whatever the settings
		kept = append(kept, "breakers")
	} else {
		ne.breakers = NewMemoryBreakers(cfg.Breaker, e.clock)
	}
	if reflect.DeepEqual(e.cfg.Pacing, cfg.Pacing) {
		ne.pacer = e.pacer
		kept = append(kept, "pacing")
	} else {
		always := cfg.Pacing.When == config.PaceAlways || e.batch && cfg.Pacing.When != config.PacePressure
		ne.pacer = newPacer(cfg.Pacing, always, e.clock, e.random, e.fleet)
	}
	ne.learn()
	if ne.fleet != nil {
		ne.fleet.Listen(ne.heard) // what the fleet says goes to the engine that serves new requests
	}
	return ne, kept
}

// Pacing is when the engine paces: config.PaceAlways (from the first
// request) or config.PacePressure (once a model or key answered capacity or
// rate_limit, until pacing.relax passes).
func (e *Engine) Pacing() string {
	if e.pacer.always {
		return config.PaceAlways
	}
	return config.PacePressure
}

// ProvidersDown lists the providers whose connections fail and that have
// answered nothing for a minute: requests to them are refused as network
// until a probe gets through (for status pages).
func (e *Engine) ProvidersDown() []string { return e.reach.downs() }

// Clock is the engine's clock.
func (e *Engine) Clock() Clock { return e.clock }

// Config is the configuration the engine plans with.
func (e *Engine) Config() *config.Config { return e.cfg }

// BreakerStates lists the state (closed, open, half-open) of every
// configured model's breaker by candidate key (OtherBreakers counts the
// others).
func (e *Engine) BreakerStates() map[string]string {
	states := e.breakers.States()
	for k := range states {
		if !e.known[k] {
			delete(states, k)
		}
	}
	return states
}

// OnBreakerChange registers f to be told of every breaker state change,
// when the breakers can tell (the in-memory ones can).
func (e *Engine) OnBreakerChange(f func(key, from, to string)) {
	if b, ok := e.breakers.(interface {
		OnChange(func(key, from, to string))
	}); ok {
		b.OnChange(f)
	}
}

func (e *Engine) random() float64 {
	e.rndMu.Lock()
	defer e.rndMu.Unlock()
	return e.rnd()
}

// backoff is exponential backoff with full jitter: a random wait in
// [0, min(max, base·2^(n-1))] for the n-th consecutive wait (n ≥ 1), with a
// floor of base/4 so that a full chain is never walked again at once (full
// jitter alone can draw a wait of nothing, and then nothing again).
func (e *Engine) backoff(n int) time.Duration {
	base, ceil := e.cfg.Retry.BackoffBase.D(), e.cfg.Retry.BackoffMax.D()
	if n < 1 {
		n = 1
	}
	d := float64(base) * math.Pow(2, float64(n-1))
	if d > float64(ceil) {
		d = float64(ceil)
	}
	return max(time.Duration(e.random()*d), min(base/4, time.Duration(d)))
}

// Candidates resolves the chain a request walks: the requested model, then
// the rest of its chain at or above the minimum tier.
func (e *Engine) Candidates(r Request) []Candidate {
	_, chain := e.cfg.ChainFor(r.Model)
	if len(r.Models) > 0 {
		chain = r.Models
	}
	if len(chain) == 0 {
		return []Candidate{{Model: r.Model, Upstream: r.Model, Provider: string(r.Type), Type: r.Type}}
	}
	var out []Candidate
	for i, name := range chain {
		m, known := e.cfg.Models[name]
		if i > 0 {
			if r.NoFallback {
				break
			}
			if r.MinTier != "" && m.Tier.Rank() < r.MinTier.Rank() {
				continue
			}
		}
		if !known {
			out = append(out, Candidate{Model: name, Upstream: name, Provider: string(r.Type), Type: r.Type, Weight: 1})
			continue
		}
		// every deployment of the model, in a row: a full one spills to
		// the next before the chain steps down a tier
		deps := e.cfg.Deployments(name)
		if r.ModelsOnly {
			deps = []config.Deployment{{Provider: deps[0].Provider, Upstream: deps[0].Upstream, Weight: 1}}
		}
		for _, d := range deps {
			out = append(out, Candidate{Model: name, Upstream: d.Upstream, Provider: d.Provider, Type: classify.Provider(e.cfg.ProviderType(d.Provider)),
				Tier: m.Tier, Context: m.Context, Deployment: d.Name, Weight: d.Weight, KeyID: e.keyID(d.Provider)})
		}
	}
	return out
}

// keyID is the id of the key provider sends of its own, "" when the
// caller's credentials go through.
func (e *Engine) keyID(provider string) string {
	p, ok := e.cfg.Providers[provider]
	if !ok || p.Auth != "key" {
		return ""
	}
	sum := sha256.Sum256([]byte(p.APIKey.Value))
	return "key:" + hex.EncodeToString(sum[:6])
}

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
	// noFit: no model of the chain is known to fit the request, so the
	// ones of a window no smaller than the requested model's are taken to
	// (the upstream judges)
	noFit    bool
	atLeast  int           // the request is larger than this: a model of that window said it is too long
	walkFrom int           // where the route of the current walk of the chain starts
	passed   int           // before it, the candidates passed over in this walk (their refused hops are noted)
	waited   time.Duration // every wait: the plan's and the pacer's
	spent    time.Duration // against the budget: every wait, and failed HTTP attempts
	budget   time.Duration
	route    []Hop
	lastBad  classify.Verdict
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
	hop := Hop{Model: c.Name(), Class: v.Class, Refused: local(v)}
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

// hedgeStep is the attempt to start beside the hedged attempt to c, which
// passed its first-token limit: the next candidate (as a timeout would
// move on to), or fail when there is none.
func (p *plan) hedgeStep(c Candidate) step {
	p.at(c)
	next, ok := p.onward(nil)
	if !ok {
		return step{Action: fail}
	}
	st := p.switchTo(next, c)
	st.hedge = true
	return st
}

// maxContinuations bounds how often one answer is continued.
const maxContinuations = 3

// resume decides how an answer that broke after reaching the caller goes
// on, its front end able to continue it: on the same candidate (after a
// cut or a stall: the model is fine), or on the next that takes a partial
// assistant turn (after an overload, or when the same one does not), at
// once and while the budget lasts; else fail (the front end ends the
// answer). While resuming, every step is a continuation.
func (p *plan) resume(c Candidate, v classify.Verdict) step {
	p.at(c)
	p.resuming = true
	p.continuations++
	p.lastBad = v
	switch {
	case p.continuations > maxContinuations:
		return p.fail(v, fmt.Sprintf("the answer broke after output started and was continued %d times already", maxContinuations))
	case p.left() <= 0:
		return p.fail(v, fmt.Sprintf("the answer broke after output started, and the wait budget of %s is spent", p.budget))
	}
	if v.Class != classify.Capacity && p.e.prefills(c) {
		return step{Action: send, Candidate: c}
	}
	if next, ok := p.onward(nil); ok {
		return p.switchTo(next, c)
	}
	if p.e.prefills(c) {
		return step{Action: send, Candidate: c}
	}
	return p.fail(v, "the answer broke after output started, and no model that takes a partial answer to continue is left")
}

// charge counts a wait the plan did not ask for (the pacer's) against the
// budget.
func (p *plan) charge(d time.Duration) { p.wait(d) }

// wait counts a wait: it is a wait, and it spends the budget.
func (p *plan) wait(d time.Duration) {
	p.waited += max(d, 0)
	p.spent += max(d, 0)
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
		size += len(h.Model) + len(h.Class) + 4
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
		b.WriteString(h.Model)
		b.WriteByte(':')
		b.WriteString(string(h.Class))
	}
	return b.String()
}

// allow asks key's breaker for one attempt. done must be called with the
// model's answer: it goes to the breaker, to the pacer's adaptive
// concurrency limit and, in a fleet, to the other processes. In a fleet a
// half-open breaker's probe also needs the fleet's probe token: while
// another process probes, this one does not.
func (e *Engine) allow(ctx context.Context, key, paceKey string) (done func(classify.Verdict), ok bool) {
	bdone, probe, ok := e.breakers.Allow(key)
	if !ok {
		return nil, false
	}
	release := func() {}
	if probe && e.fleet != nil {
		cctx, cancel := context.WithTimeout(ctx, fleetCallTimeout)
		rel, got, err := e.fleet.Probe(cctx, key, fleetProbeLease)
		cancel()
		switch {
		case err != nil: // the fleet cannot say: probe on this process's word
		case !got: // another process's probe is out: no word from this one
			bdone(classify.Verdict{Class: classify.Unknown})
			return nil, false
		default:
			release = rel
		}
	}
	return func(v classify.Verdict) {
		e.adapt(key, v)
		bdone(v)
		e.tell(key, paceKey, v, probe) // before the token goes back: the others hear the probe's answer first
		release()
	}, true
}

// adapt moves key's concurrency limit after an answer from the model.
func (e *Engine) adapt(key string, v classify.Verdict) {
	switch v.Class {
	case classify.Capacity:
		e.pacer.full(key)
	case classify.OK:
		e.pacer.served(key)
	}
}

// Local refusals are the Codes of verdicts for attempts that were never
// sent: routes show them in place of a class ("gpt-6-astra:breaker_open"),
// and they are neither logged nor counted as attempts.
const (
	// BreakerOpen: the candidate's breaker is open (or its probe is out).
	BreakerOpen = "breaker_open"
	// NoSlot: no concurrency slot and turn came free within the wait
	// budget (pacing.max_concurrency).
	NoSlot = "no_slot"
	// NetworkDown: the candidate's provider is down (its connections fail
	// and it answered nothing for a minute); the route says network.
	NetworkDown = "network_down"
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
	return v.Code == BreakerOpen || v.Code == NoSlot || v.Code == NetworkDown
}

// FailFast reports a class that no wait and no other model can fix (the
// key, the account or the request itself is the problem): the plan gives up
// at once, and front ends pass the upstream's own answer on.
// context_length is one once no model with a larger window is left.
func FailFast(c classify.Class) bool {
	switch c {
	case classify.Quota, classify.Auth, classify.BadRequest, classify.ContentFilter, classify.ContextLength, classify.Unknown:
		return true
	}
	return false
}

// probeWait is how long until a request like r could next be sent anywhere:
// the soonest probe among its candidates' open breakers, or 0 when one of
// them is not open (then nothing is known, and the caller's own wait
// applies). A parked request comes back no later than this.
func (e *Engine) probeWait(r Request) time.Duration {
	var soonest time.Duration
	for i, c := range e.Candidates(r) {
		w := e.breakers.Wait(c.Key())
		if w == 0 {
			return 0
		}
		if i == 0 || w < soonest {
			soonest = w
		}
	}
	return soonest
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
			p.route = append(p.route, Hop{Model: c.Name(), Class: classify.ContextLength, Refused: true})
		case open(c):
			p.route = append(p.route, Hop{Model: c.Name(), Class: BreakerOpen, Refused: true})
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
	p.lastBad = v
	if p.resuming && v.Code == classify.PrefillRefused {
		// the model refuses a partial assistant turn: never again, and
		// the continuation goes on elsewhere
		p.e.noPrefill.Store(c.Model, true)
		if next, ok := p.onward(nil); ok {
			return p.switchTo(next, c)
		}
		return p.fail(v, "the answer broke after output started, and no model that takes a partial answer to continue is left")
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
		return p.fail(v, fmt.Sprintf("timed out after %d %s, and no other model is left to try", p.toN[c.Key()], plural(p.toN[c.Key()], "try", "tries")))
	case classify.ModelNotFound:
		put(&p.skip, c.Key(), true)
		if next, ok := p.next(p.cur+1, nil); ok {
			return p.switchTo(next, c)
		}
		return p.fail(v, "no model in the chain exists for this key")
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
		return p.fail(v, fmt.Sprintf("rate limited %d times (retry.rate_limit_retries: %d), and no other model is left to try", p.rateN[key], retries))
	}
	return p.fail(v, "rate limited; "+p.noRoomFor(c, wait))
}

// limitKey is what a rate limit binds: a model at one set of credentials
// (the candidate's own key, or the caller's: the same for every
// candidate of this request).
func limitKey(c Candidate) string { return c.Model + "\x00" + c.KeyID }

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
	return p.fail(v, fmt.Sprintf("network failures persisted after %d retries on the same model, and %s has answered nothing else for a minute; check your network, proxy or VPN", p.e.cfg.Retry.NetworkRetries, c.Provider))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (p *plan) onCapacity(c Candidate, v classify.Verdict) step {
	if next, ok := p.onward(nil); ok {
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
		if h.Refused && (h.Class == BreakerOpen || h.Class == NoSlot) {
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
	i, ok := p.next(0, nil)
	if !ok {
		return p.fail(v, p.walkSays())
	}
	if only, confined := p.confined(); confined {
		p.e.pacer.reserve(only.Key(), p.e.clock.Now().Add(wait+wait/4))
	}
	if !p.req.Park || !rung {
		p.wait(wait) // a parked request does not wait here
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
	i, ok := p.next(0, nil)
	if !ok {
		return p.fail(v, p.walkSays())
	}
	// (the rung covers a Retry-After already: it is not added again)
	wait := min(p.req.CheckEvery, p.rungLeft)
	p.rungLeft -= wait
	if !p.req.Park {
		p.wait(wait)
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
	p.wait(wait)
	return step{Action: send, Candidate: c, Wait: wait}
}

// switchTo moves to chain[i] at once. It waits nothing, so the budget
// does not stop it: a silent model whose timeout took the budget is still
// followed by its fallback (each model is tried once; no wait starts past
// the budget).
func (p *plan) switchTo(i int, from Candidate) step {
	for j := max(p.cur+1, p.passed); j < i; j++ {
		if c := p.chain[j]; !p.fits(c) { // passed over for the request's size: a refused hop, once
			p.route = append(p.route, Hop{Model: c.Name(), Class: classify.ContextLength, Refused: true})
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
	reason += fmt.Sprintf("; tried %s in %d %s; waited %s", strings.Join(tried, ", "), attempts, noun, classify.FormatWait(p.waited))
	if v.Message != "" {
		// (an error of the HTTP client quotes the URL: a Gemini key in its
		// query must not reach the caller's answer or a log)
		reason += "; last upstream message: " + redact.String(v.Message)
	}
	return step{Action: fail, Reason: reason, Verdict: v, Candidate: p.chain[p.cur]}
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

// balancer shares healthy traffic between a model's deployments: by fewest
// in flight for its weight, then by smooth weighted round robin (as nginx
// balances upstreams), so that sequential requests split exactly by weight.
type balancer struct {
	mu      sync.Mutex
	current map[string]int // by candidate key: the round robin's running weight
}

// pick chooses among the candidates at indexes healthy of chain and returns
// the chosen one's position in healthy. Only the deployments tied at the
// lowest load take part in the round robin: one that is busier gains no
// credit meanwhile, so it does not come back to take a run of requests in a
// row once its load falls.
func (b *balancer) pick(chain []Candidate, healthy []int, inflight func(key string) int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.current == nil {
		b.current = map[string]int{}
	}
	load := make([]float64, len(healthy))
	lowest := 0.0
	for j, h := range healthy {
		c := chain[h]
		load[j] = float64(inflight(c.Key())) / float64(max(c.Weight, 1))
		if j == 0 || load[j] < lowest {
			lowest = load[j]
		}
	}
	total, best := 0, -1
	for j, h := range healthy {
		if load[j] != lowest {
			continue
		}
		c := chain[h]
		w := max(c.Weight, 1)
		total += w
		b.current[c.Key()] += w
		if best < 0 || b.current[c.Key()] > b.current[chain[healthy[best]].Key()] {
			best = j
		}
	}
	b.current[chain[healthy[best]].Key()] -= total
	return best
}

// put sets (*m)[k] = v, making the map on first use.
func put[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[k] = v
}
