package policy

import (
	"container/list"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// BreakerState is a breaker's state.
type BreakerState string

// The breaker states.
const (
	StateClosed   BreakerState = "closed"
	StateHalfOpen BreakerState = "half-open"
	StateOpen     BreakerState = "open"
)

// breakerSet keeps each candidate's circuit breaker, in process (a fleet
// shares what they learn through the engine: fleet.go). A breaker opens after
// `failures` capacity answers or timeouts within `window` (or `consecutive`
// in a row with no answer between), stays open for `cooldown`, then lets a
// single probe through and closes on its success. Capacity and timeouts (a
// model that accepts requests and says nothing) count as failures; network
// failures (the provider's, tracked apart), server errors, rate limits and
// bad requests are neither success nor failure (they say nothing about the
// pool).
//
// A probe that finds the pool still full opens the breaker again for twice
// the last cooldown, up to `max_cooldown` (as Envoy's outlier detection
// lengthens each ejection). The defaults keep every hold at 5 s (no
// doubling): a failed probe into a full pool costs one quick refusal, while a
// healed model left unused costs every request meanwhile a worse model, so
// a healed model is back in use within about ten seconds while requests
// flow (BENCHMARKS.md measures the trade-off).
//
// Written here rather than with a breaker library: the ones that read the
// wall clock (sony/gobreaker) keep tests sleeping, and none has the
// lengthening hold, the probe wait the queue schedules by, or state simple
// enough to share across a fleet later. It runs on the engine's Clock.
type breakerSet struct {
	cfg   config.Breaker
	clock Clock

	mu        sync.Mutex
	m         map[string]*breaker
	listeners []func(key string, from, to BreakerState)
	// known tells the keys of configured models (nil: every key). The
	// others (names clients make up) are kept for the maxOther used last,
	// so that clients cannot grow the set without end.
	known   func(key string) bool
	other   *list.List // of unknown keys, the one used last in front
	otherAt map[string]*list.Element
}

// maxOther is how many breakers of models outside the configuration are
// kept: the ones used last.
const maxOther = 256

// newBreakerSet returns an empty set on clock.
func newBreakerSet(cfg config.Breaker, clock Clock) *breakerSet {
	return &breakerSet{cfg: cfg, clock: clock, m: map[string]*breaker{}}
}

type breakerState int

const (
	closed breakerState = iota
	open
	halfOpen
)

func (s breakerState) state() BreakerState {
	switch s {
	case open:
		return StateOpen
	case halfOpen:
		return StateHalfOpen
	}
	return StateClosed
}

// breaker is one key's state.
type breaker struct {
	state    breakerState
	gen      int         // bumped at every state change: evidence from an older state is ignored
	fails    []time.Time // the latest capacity answers while closed, at most `failures`
	inARow   int         // capacity answers with no other answer between
	until    time.Time   // open: no probe before
	cooldown time.Duration
	probing  bool // half-open: the probe is out
}

// change is a state change to report once the lock is released.
type change struct {
	key      string
	from, to BreakerState
}

// OnChange registers f to be told about every state change (metrics, logs).
func (b *breakerSet) OnChange(f func(key string, from, to BreakerState)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.listeners = append(b.listeners, f)
}

func (b *breakerSet) notify(cs []change) {
	if len(cs) == 0 {
		return
	}
	b.mu.Lock()
	ls := append([]func(key string, from, to BreakerState){}, b.listeners...)
	b.mu.Unlock()
	for _, c := range cs {
		for _, f := range ls {
			f(c.key, c.from, c.to)
		}
	}
}

// SetKnown tells the set which keys are of configured models (nil: all):
// the others are kept for the 256 used last.
func (b *breakerSet) SetKnown(known func(key string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known = known
}

// Others is how many breakers of models outside the configuration the set
// keeps (at most 256).
func (b *breakerSet) Others() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.other == nil {
		return 0
	}
	return b.other.Len()
}

// get returns key's breaker, moved from open to half-open when its hold is
// over; b.mu must be held.
func (b *breakerSet) get(key string, now time.Time, cs *[]change) *breaker {
	br := b.m[key]
	if br == nil {
		br = &breaker{}
		b.m[key] = br
	}
	if b.known != nil && !b.known(key) {
		b.used(key)
	}
	b.advance(key, br, now, cs)
	return br
}

// advance moves br from open to half-open when its hold is over.
func (b *breakerSet) advance(key string, br *breaker, now time.Time, cs *[]change) {
	if br.state == open && !now.Before(br.until) {
		b.set(key, br, halfOpen, cs)
	}
}

// used marks key, of a model outside the configuration, as used last,
// and lets the one used longest ago go past maxOther; b.mu must be held.
func (b *breakerSet) used(key string) {
	if b.other == nil {
		b.other, b.otherAt = list.New(), map[string]*list.Element{}
	}
	if el, ok := b.otherAt[key]; ok {
		b.other.MoveToFront(el)
		return
	}
	b.otherAt[key] = b.other.PushFront(key)
	for b.other.Len() > maxOther {
		old := b.other.Remove(b.other.Back()).(string)
		delete(b.otherAt, old)
		delete(b.m, old)
	}
}

func (b *breakerSet) set(key string, br *breaker, to breakerState, cs *[]change) {
	*cs = append(*cs, change{key, br.state.state(), to.state()})
	br.state, br.gen, br.probing = to, br.gen+1, false
}

// trip opens br: for the configured cooldown the first time, for twice the
// last after a failed probe (capped).
func (b *breakerSet) trip(key string, br *breaker, now time.Time, afterProbe bool, cs *[]change) {
	base := b.cfg.Cooldown.D()
	if afterProbe && br.cooldown > 0 {
		br.cooldown = min(2*br.cooldown, max(b.cfg.MaxCooldown.D(), base))
	} else {
		br.cooldown = base
	}
	br.until = now.Add(br.cooldown)
	br.fails, br.inARow = br.fails[:0], 0
	b.set(key, br, open, cs)
}

// counts reports whether a verdict is evidence for the breaker, and which.
func counts(v classify.Verdict) (failure, evidence bool) {
	switch v.Class {
	case classify.Capacity, classify.Timeout:
		return true, true
	case classify.Network, classify.Unknown, classify.ServerError, classify.RateLimit, classify.BadRequest, classify.UsageLimit:
		// (a usage limit is the account's window, not the model's)
		return false, false
	}
	return false, true // an answer from the model that says nothing of a full pool
}

// failed records a capacity answer while closed; it reports a trip.
func (b *breakerSet) failed(br *breaker, now time.Time) bool {
	window := b.cfg.Window.D()
	kept := br.fails[:0]
	for _, t := range br.fails {
		if window <= 0 || now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	br.fails = append(kept, now)
	if n := max(b.cfg.Failures, 1); len(br.fails) > n {
		br.fails = br.fails[len(br.fails)-n:]
	}
	br.inARow++
	return len(br.fails) >= max(b.cfg.Failures, 1) || b.cfg.Consecutive > 0 && br.inARow >= b.cfg.Consecutive
}

// at runs f on key's breaker under the lock, with the clock's time; the
// state changes f makes are reported once the lock is released.
func (b *breakerSet) at(key string, f func(br *breaker, now time.Time, cs *[]change)) {
	var cs []change
	b.mu.Lock()
	now := b.clock.Now()
	f(b.get(key, now, &cs), now, &cs)
	b.mu.Unlock()
	b.notify(cs)
}

// Allow asks to send one request to key. When the breaker is open (or
// half-open with its probe already out) it returns ok=false. Otherwise
// done must be called once with what the model answered; probe says
// the request is the half-open breaker's probe.
func (b *breakerSet) Allow(key string) (done func(classify.Verdict), probe, ok bool) {
	var gen int
	b.at(key, func(br *breaker, _ time.Time, _ *[]change) {
		switch {
		case br.state == open, br.state == halfOpen && br.probing:
			return
		case br.state == halfOpen:
			br.probing = true
		}
		ok, gen, probe = true, br.gen, br.state == halfOpen
	})
	if !ok {
		return nil, false, false
	}
	var once sync.Once
	return func(v classify.Verdict) {
		once.Do(func() {
			b.at(key, func(br *breaker, now time.Time, cs *[]change) { b.evidence(key, br, now, gen, probe, v, cs) })
		})
	}, probe, true
}

// Probed takes in the answer to a probe sent elsewhere in the fleet: a
// success closes key's breaker; a failure (capacity, timeout) opens a
// breaker that is not closed again, for the lengthened hold, as the
// prober's own did.
func (b *breakerSet) Probed(key string, v classify.Verdict) {
	b.at(key, func(br *breaker, now time.Time, cs *[]change) {
		failure, evidence := counts(v)
		switch {
		case br.state == closed, !evidence:
		case failure:
			b.trip(key, br, now, true, cs)
		default:
			br.cooldown = 0
			b.set(key, br, closed, cs)
		}
	})
}

func (b *breakerSet) evidence(key string, br *breaker, now time.Time, gen int, probe bool, v classify.Verdict, cs *[]change) {
	if br.gen != gen {
		return // the breaker changed state since: this answer is old news
	}
	failure, evidence := counts(v)
	switch {
	case probe && !evidence:
		br.probing = false // no word on the pool: let another probe go
	case probe && failure:
		b.trip(key, br, now, true, cs)
	case probe:
		br.cooldown = 0
		b.set(key, br, closed, cs)
	case failure:
		if b.failed(br, now) {
			b.trip(key, br, now, false, cs)
		}
	case evidence:
		br.inARow = 0
	}
}

// Observe takes in evidence that came after an attempt's done (a stream
// whose success was recorded at its first output and that broke later): a
// capacity answer that came after the
// attempt's success was recorded counts like any other while the breaker is
// closed.
func (b *breakerSet) Observe(key string, v classify.Verdict) {
	b.at(key, func(br *breaker, now time.Time, cs *[]change) {
		if failure, _ := counts(v); failure && br.state == closed && b.failed(br, now) {
			b.trip(key, br, now, false, cs)
		}
	})
}

// Open reports whether key's breaker is open now.
func (b *breakerSet) Open(key string) (isOpen bool) {
	b.at(key, func(br *breaker, _ time.Time, _ *[]change) { isOpen = br.state == open })
	return isOpen
}

// Refuses reports whether Allow would refuse key now: its breaker is open,
// or half-open with its probe out.
func (b *breakerSet) Refuses(key string) (refuses bool) {
	b.at(key, func(br *breaker, _ time.Time, _ *[]change) {
		refuses = br.state == open || br.state == halfOpen && br.probing
	})
	return refuses
}

// Wait is how long until key's breaker lets a probe through (a short
// while when its probe is out); 0 when it is closed. A breaker that is not closed never says 0:
// with its probe out (half-open) the answer is a quarter of the cooldown,
// so a caller sleeping on it looks again soon, not never.
func (b *breakerSet) Wait(key string) (wait time.Duration) {
	b.at(key, func(br *breaker, now time.Time, _ *[]change) {
		switch br.state {
		case open:
			wait = br.until.Sub(now)
		case halfOpen:
			wait = max(b.cfg.Cooldown.D()/4, time.Millisecond)
		}
	})
	return wait
}

// States is every breaker's state, by key.
func (b *breakerSet) States() map[string]BreakerState {
	var cs []change
	b.mu.Lock()
	now := b.clock.Now()
	out := make(map[string]BreakerState, len(b.m))
	for k, br := range b.m {
		b.advance(k, br, now, &cs)
		out[k] = br.state.state()
	}
	b.mu.Unlock()
	b.notify(cs)
	return out
}
