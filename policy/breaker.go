package policy

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// Breakers are the per-(provider, model) circuit breakers. The in-memory
// set serves one process; a fleet shares state through another
// implementation.
type Breakers interface {
	// Allow asks to send one request to key. When the breaker is open (or
	// half-open with its probe already out) it returns ok=false. Otherwise
	// done must be called with the attempt's verdict.
	Allow(key string) (done func(classify.Verdict), ok bool)
	// Open reports whether key's breaker is open now.
	Open(key string) bool
	// States lists every breaker's state: closed, open, half-open.
	States() map[string]string
	// Wait is how long until key's breaker lets a probe through (a short
	// while when its probe is out); 0 when it is closed.
	Wait(key string) time.Duration
}

// MemoryBreakers keeps breakers in process, one gobreaker two-step breaker
// per key: it opens after `failures` capacity errors within `window` (or
// `consecutive` in a row), stays
// open for `cooldown`, then lets a single probe through and closes on its
// success. Only capacity counts as failure; network and timeout are neither
// success nor failure (they say nothing about the pool).
//
// A probe that finds the pool still full opens the breaker again for twice
// the last cooldown, up to `max_cooldown` (as Envoy's outlier detection
// lengthens each ejection): a pool that stays full through a long peak is
// probed a few times an hour, not twice a minute. gobreaker's own timeout is
// fixed, so the longer hold is kept here, in front of it.
type MemoryBreakers struct {
	cfg config.Breaker
	mu  sync.Mutex
	m   map[string]*gobreaker.TwoStepCircuitBreaker[struct{}]
	// holds are the lengthened cooldowns, by key
	holdMu sync.Mutex
	holds  map[string]*hold
	// OnChange, when set, is told about state changes (metrics, status).
	OnChange func(key, from, to string)
}

var _ Breakers = (*MemoryBreakers)(nil)

// NewMemoryBreakers returns an empty set.
func NewMemoryBreakers(cfg config.Breaker) *MemoryBreakers {
	return &MemoryBreakers{cfg: cfg, m: map[string]*gobreaker.TwoStepCircuitBreaker[struct{}]{}, holds: map[string]*hold{}}
}

// hold is one breaker's lengthened cooldown.
type hold struct {
	cooldown time.Duration // of the current (or last) open period
	until    time.Time     // no probe before this
}

// opened records a trip: a first one waits the configured cooldown, one
// after a failed probe twice the last, capped.
func (b *MemoryBreakers) opened(key string, afterProbe bool) {
	b.holdMu.Lock()
	defer b.holdMu.Unlock()
	h := b.holds[key]
	if h == nil {
		h = &hold{}
		b.holds[key] = h
	}
	base := b.cfg.Cooldown.D()
	if afterProbe && h.cooldown > 0 {
		h.cooldown = min(2*h.cooldown, max(b.cfg.MaxCooldown.D(), base))
	} else {
		h.cooldown = base
	}
	h.until = time.Now().Add(h.cooldown)
}

// Wait implements Breakers. A breaker that is not closed never says 0:
// with its probe out (half-open) or just due, the answer is a quarter of the
// cooldown, so a caller sleeping on it looks again soon, not never.
func (b *MemoryBreakers) Wait(key string) time.Duration {
	b.holdMu.Lock()
	var left time.Duration
	if h := b.holds[key]; h != nil {
		left = time.Until(h.until)
	}
	b.holdMu.Unlock()
	if left > 0 {
		return left
	}
	b.mu.Lock()
	cb := b.m[key]
	b.mu.Unlock()
	if cb == nil || cb.State() == gobreaker.StateClosed {
		return 0
	}
	return max(b.cfg.Cooldown.D()/4, time.Millisecond)
}

// held reports whether key is inside a lengthened cooldown.
func (b *MemoryBreakers) held(key string) bool {
	b.holdMu.Lock()
	defer b.holdMu.Unlock()
	h := b.holds[key]
	return h != nil && time.Now().Before(h.until)
}

func (b *MemoryBreakers) get(key string) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	b.mu.Lock()
	defer b.mu.Unlock()
	cb := b.m[key]
	if cb == nil {
		failures := uint32(max(b.cfg.Failures, 1))
		consecutive := uint32(b.cfg.Consecutive)
		window := b.cfg.Window.D()
		cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
			Name:         key,
			MaxRequests:  1, // one probe when half-open
			Interval:     window,
			BucketPeriod: bucket(window),
			Timeout:      b.cfg.Cooldown.D(),
			// N capacity answers within the window, or a few in a row with
			// no answer between (the pool is full now, not busy)
			ReadyToTrip: func(c gobreaker.Counts) bool {
				return c.TotalFailures >= failures || consecutive > 0 && c.ConsecutiveFailures >= consecutive
			},
			IsSuccessful: func(err error) bool { return verdictOf(err) != classify.Capacity },
			// Only an answer from the model counts as success; failures that
			// say nothing about its pool (transport, server errors, rate
			// limits, local refusals) neither open nor close the breaker.
			IsExcluded: func(err error) bool {
				switch verdictOf(err) {
				case classify.Network, classify.Timeout, classify.Unknown, classify.ServerError, classify.RateLimit, classify.BadRequest:
					return true
				}
				return false
			},
			OnStateChange: func(name string, from, to gobreaker.State) {
				if to == gobreaker.StateOpen {
					b.opened(name, from == gobreaker.StateHalfOpen)
				}
				if b.OnChange != nil {
					b.OnChange(name, from.String(), to.String())
				}
			},
		})
		b.m[key] = cb
	}
	return cb
}

// bucket makes the window roll in tenths rather than reset all at once.
func bucket(window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	return window / 10
}

func verdictOf(err error) classify.Class {
	if err == nil {
		return classify.OK
	}
	var f *classify.Failure
	if errors.As(err, &f) {
		return f.Verdict.Class
	}
	return classify.Unknown
}

// Allow implements Breakers.
func (b *MemoryBreakers) Allow(key string) (func(classify.Verdict), bool) {
	cb := b.get(key)
	if b.held(key) {
		return nil, false
	}
	done, err := cb.Allow()
	if err != nil {
		return nil, false
	}
	return func(v classify.Verdict) {
		if v.Class == classify.OK {
			done(nil)
			return
		}
		done(&classify.Failure{Verdict: v})
	}, true
}

// Open implements Breakers.
func (b *MemoryBreakers) Open(key string) bool {
	b.mu.Lock()
	cb := b.m[key]
	b.mu.Unlock()
	if cb == nil {
		return false
	}
	// ask gobreaker only past the hold: asking moves it to half-open
	return b.held(key) || cb.State() == gobreaker.StateOpen
}

// States implements Breakers.
func (b *MemoryBreakers) States() map[string]string {
	b.mu.Lock()
	keys := make([]string, 0, len(b.m))
	for k := range b.m {
		keys = append(keys, k)
	}
	b.mu.Unlock()
	sort.Strings(keys)
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		if b.held(k) {
			out[k] = gobreaker.StateOpen.String()
		} else {
			out[k] = b.get(k).State().String()
		}
	}
	return out
}
