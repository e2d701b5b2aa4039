package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

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
	breakers *breakerSet
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
	known := e.known
	e.breakers.SetKnown(func(key string) bool { return known[key] })
}

// KnownKey reports whether key (Candidate.Key) is a configured model's.
func (e *Engine) KnownKey(key string) bool { return e.known[key] }

// OtherBreakers is how many breakers of models outside the configuration
// the engine keeps (the 256 used last).
func (e *Engine) OtherBreakers() int { return e.breakers.Others() }

// prefills reports whether c may be sent a continuation: its wire format
// takes a partial assistant turn (Anthropic Messages), its configuration
// does not say prefill: false, and it has not refused one.
func (e *Engine) prefills(c Candidate) bool {
	if !c.Format.Prefills() || !e.cfg.Prefills(c.Model) {
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
// It gives the classifier the engine's time (Input.Now), for a Retry-After
// or a reset given as a date.
func (e *Engine) Classify(in classify.Input) classify.Verdict {
	if in.Now.IsZero() {
		in.Now = e.clock.Now()
	}
	return e.classify(in)
}

// New returns an engine for cfg.
func New(cfg *config.Config, opts ...Option) *Engine {
	e := &Engine{cfg: cfg, clock: RealClock{}, classify: classify.Classify, rndMu: &sync.Mutex{}}
	src := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5b111))
	e.rnd = src.Float64
	for _, o := range opts {
		o(e)
	}
	e.breakers = newBreakerSet(cfg.Breaker, e.clock)
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
	if reflect.DeepEqual(e.cfg.Breaker, cfg.Breaker) {
		ne.breakers = e.breakers
		kept = append(kept, "breakers")
	} else {
		ne.breakers = newBreakerSet(cfg.Breaker, e.clock)
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
func (e *Engine) BreakerStates() map[string]BreakerState {
	states := e.breakers.States()
	for k := range states {
		if !e.known[k] {
			delete(states, k)
		}
	}
	return states
}

// OnBreakerChange registers f to be told of every breaker state change.
func (e *Engine) OnBreakerChange(f func(key string, from, to BreakerState)) { e.breakers.OnChange(f) }

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

// keyID is the id of the key provider sends of its own, "" when the
// caller's credentials go through.
func (e *Engine) keyID(provider string) string {
	p, ok := e.cfg.Providers[provider]
	if !ok || p.Auth != config.AuthKey {
		return ""
	}
	return e.ownKeyID(provider)
}

// idFor is the KeyID of a candidate of format f on provider for request
// r: keyID, but another vendor's step, and any step of a keyless request
// (Request.Keyless), always goes with its provider's own key (whatever
// its auth).
func (e *Engine) idFor(provider string, f config.Format, r Request) string {
	if t := r.Type; r.Keyless || t != "" && f != t {
		return e.ownKeyID(provider)
	}
	return e.keyID(provider)
}

// ownKeyID is the id of provider's own credentials, "" when it has none:
// its key's hash, or for a cloud without a key, the cloud's credentials
// the provider resolves (its region is a provider of its own: limits are
// per account and region).
func (e *Engine) ownKeyID(provider string) string {
	p := e.cfg.Providers[provider]
	if p.APIKey.Value == "" {
		if p.Cloud() != "" {
			return "cloud:" + provider
		}
		return ""
	}
	sum := sha256.Sum256([]byte(p.APIKey.Value))
	return "key:" + hex.EncodeToString(sum[:6])
}

// cloudOf names the cloud whose error shapes provider's answers come in
// (Candidate.Cloud): Bedrock, Vertex AI, or Azure OpenAI (a type openai
// provider at an Azure host); "" for a vendor's own API.
func (e *Engine) cloudOf(provider string) string {
	p := e.cfg.Providers[provider]
	if c := p.Cloud(); c != "" {
		return c
	}
	if u, err := url.Parse(p.BaseURL); err == nil && p.Type == string(config.OpenAI) {
		host := strings.ToLower(u.Hostname())
		if strings.HasSuffix(host, ".openai.azure.com") || strings.HasSuffix(host, ".cognitiveservices.azure.com") {
			return string(classify.Azure)
		}
	}
	return ""
}

// allow asks key's breaker for one attempt. done must be called with the
// model's answer: it goes to the breaker, to the pacer's adaptive
// concurrency limit and, in a fleet, to the other processes. In a fleet a
// half-open breaker's probe also needs the fleet's probe token: while
// another process probes, this one does not.
func (e *Engine) allow(ctx context.Context, key, rateKey string) (done func(classify.Verdict), ok bool) {
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
		e.tell(key, rateKey, v, probe) // before the token goes back: the others hear the probe's answer first
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

// Slowness is how many times pacing.min_gap and jitter attempts to c now
// wait between starts, for a caller with callerKey (Call.Key): 1 until a
// rate limit slowed the key, back to 1 as answers come. For status pages.
func (e *Engine) Slowness(c Candidate, callerKey string) float64 {
	return e.pacer.slowness(rateKey(c, callerKey))
}
