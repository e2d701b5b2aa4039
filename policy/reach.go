package policy

import (
	"slices"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
)

// recently is how long an answer from a provider vouches for its network:
// a model whose connections fail while its provider answered something
// else within it is the model's problem, not the network's.
const recently = time.Minute

// reach is what the engine knows of each provider's network: when it last
// answered anything, and whether it is down. A provider is down once
// enough connection failures came in a row (as many as one request's
// network retries) with no answer from it within `recently`: requests to
// it are then refused at once, as network failures, for a hold (the
// breakers' cooldown), after which one request goes through as a probe.
// A down provider never makes a request step down a tier: that would mask
// a network problem as capacity.
//
// Written here rather than with a breaker library (or breakerSet): its
// trip condition is the provider's silence across every model, which no
// breaker keyed by one model sees.
type reach struct {
	clock Clock
	after int           // failures in a row that can make a provider down
	hold  time.Duration // how long a down provider is refused before a probe

	mu sync.Mutex
	m  map[string]*provider
}

// provider is one provider's reachability.
type provider struct {
	answered time.Time // the last answer of any kind
	fails    int       // connection failures since that answer
	down     time.Time // while down: refused until then
	probing  time.Time // down, past the hold: when the probe went out (zero: none is out)
}

func newReach(clock Clock, after int, hold time.Duration) *reach {
	return &reach{clock: clock, after: max(after, 1), hold: hold, m: map[string]*provider{}}
}

func (r *reach) get(name string) *provider {
	p := r.m[name]
	if p == nil {
		p = &provider{}
		r.m[name] = p
	}
	return p
}

// allow asks to send to the provider: false while it is down (and its
// probe is out). probe says this request is the probe. A probe that is out
// longer than a hold (a whole answer that takes minutes, an agent's run)
// does not keep the provider shut: another request may probe.
func (r *reach) allow(name string) (ok, probe bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.get(name)
	now := r.clock.Now()
	switch {
	case p.down.IsZero():
		return true, false
	case now.Before(p.down) || !p.probing.IsZero() && now.Sub(p.probing) < r.hold:
		return false, false
	}
	p.probing = now
	return true, true
}

// observe takes an attempt's outcome at the provider: an answer of any kind
// (any HTTP response, or a class only an answer gives) clears it, a
// connection failure counts, and a timeout says nothing of the network.
func (r *reach) observe(name string, v classify.Verdict, status int, probe bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.get(name)
	now := r.clock.Now()
	switch {
	case status > 0 || answered(v.Class):
		*p = provider{answered: now}
	case v.Class == classify.Network:
		p.fails++
		// a failure of a request sent before the provider went down does
		// not decide for the probe that is out
		if p.fails >= r.after && now.Sub(p.answered) >= recently && (probe || p.probing.IsZero()) {
			p.down, p.probing = now.Add(r.hold), time.Time{}
		}
	case probe:
		p.probing = time.Time{} // no word on the network: let another probe go
	}
}

// answered reports a class that only an answer from the provider gives.
func answered(c classify.Class) bool {
	switch c {
	case classify.Network, classify.Timeout, classify.Unknown, "":
		return false
	}
	return true
}

// answeredWithin reports whether the provider answered anything within d.
func (r *reach) answeredWithin(name string, d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.m[name]
	return p != nil && !p.answered.IsZero() && r.clock.Now().Sub(p.answered) < d
}

// downs lists the providers that are down now, by name.
func (r *reach) downs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, p := range r.m {
		if !p.down.IsZero() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
