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
}

// MemoryBreakers keeps breakers in process, one gobreaker two-step breaker
// per key: it opens after `failures` capacity errors within `window`, stays
// open for `cooldown`, then lets a single probe through and closes on its
// success. Only capacity counts as failure; network and timeout are neither
// success nor failure (they say nothing about the pool).
type MemoryBreakers struct {
	cfg config.Breaker
	mu  sync.Mutex
	m   map[string]*gobreaker.TwoStepCircuitBreaker[struct{}]
	// OnChange, when set, is told about state changes (metrics, status).
	OnChange func(key, from, to string)
}

var _ Breakers = (*MemoryBreakers)(nil)

// NewMemoryBreakers returns an empty set.
func NewMemoryBreakers(cfg config.Breaker) *MemoryBreakers {
	return &MemoryBreakers{cfg: cfg, m: map[string]*gobreaker.TwoStepCircuitBreaker[struct{}]{}}
}

func (b *MemoryBreakers) get(key string) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	b.mu.Lock()
	defer b.mu.Unlock()
	cb := b.m[key]
	if cb == nil {
		failures := uint32(max(b.cfg.Failures, 1))
		window := b.cfg.Window.D()
		cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
			Name:         key,
			MaxRequests:  1, // one probe when half-open
			Interval:     window,
			BucketPeriod: bucket(window),
			Timeout:      b.cfg.Cooldown.D(),
			ReadyToTrip:  func(c gobreaker.Counts) bool { return c.TotalFailures >= failures },
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
	done, err := b.get(key).Allow()
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
	return cb != nil && cb.State() == gobreaker.StateOpen
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
		out[k] = b.get(k).State().String()
	}
	return out
}
