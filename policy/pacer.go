package policy

import (
	"context"
	"sync"
	"time"

	"github.com/spillway/spillway/config"
)

// Pacer spaces request starts to each model by a minimum gap plus random
// jitter, and limits how many are in flight at once. A rate-limit answer
// slows one key's pace (the gap doubles, up to 16×) and successes bring it
// back. Written here rather than with golang.org/x/time/rate because the
// pace wanted is a jittered gap between starts per model and key, coupled
// with a concurrency limit, not a token bucket.
type Pacer struct {
	cfg   config.Pacing
	clock Clock
	rnd   func() float64

	mu    sync.Mutex
	slots map[string]chan struct{}
	next  map[string]time.Time // earliest next start per model
	slow  map[string]float64   // gap multiplier per key
}

// NewPacer returns a pacer with cfg's gap, jitter and concurrency.
func NewPacer(cfg config.Pacing, clock Clock, rnd func() float64) *Pacer {
	return &Pacer{cfg: cfg, clock: clock, rnd: rnd, slots: map[string]chan struct{}{}, next: map[string]time.Time{}, slow: map[string]float64{}}
}

// Acquire waits for a slot for model and for its turn to start, then
// returns release (to call when the request is over) and the time waited.
// key identifies the caller's credentials (a hash, never the key itself).
func (p *Pacer) Acquire(ctx context.Context, model, key string) (release func(), waited time.Duration, err error) {
	t0 := p.clock.Now()
	p.mu.Lock()
	slots := p.slots[model]
	if slots == nil {
		slots = make(chan struct{}, max(p.cfg.MaxConcurrency, 1))
		p.slots[model] = slots
	}
	p.mu.Unlock()
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, p.clock.Now().Sub(t0), ctx.Err()
	}
	release = func() { <-slots }

	p.mu.Lock()
	now := p.clock.Now()
	start := p.next[model]
	if start.Before(now) {
		start = now
	}
	gap := float64(p.cfg.MinGap.D()) + p.rnd()*float64(p.cfg.Jitter.D())
	if m := p.slow[model+"\x00"+key]; m > 1 {
		gap *= m
	}
	p.next[model] = start.Add(time.Duration(gap))
	p.mu.Unlock()

	if err := p.clock.Sleep(ctx, start.Sub(now)); err != nil {
		release()
		return nil, p.clock.Now().Sub(t0), err
	}
	return release, p.clock.Now().Sub(t0), nil
}

// SlowDown doubles the gap for key on model after a rate-limit answer.
func (p *Pacer) SlowDown(model, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := model + "\x00" + key
	p.slow[k] = min(max(p.slow[k]*2, 2), 16)
}

// Recover eases key's pace on model back after a success.
func (p *Pacer) Recover(model, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := model + "\x00" + key
	if m := p.slow[k]; m > 1 {
		if m /= 2; m <= 1 {
			delete(p.slow, k)
		} else {
			p.slow[k] = m
		}
	}
}

// Slowness is key's current gap multiplier on model (1 when normal).
func (p *Pacer) Slowness(model, key string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.slow[model+"\x00"+key]; m > 1 {
		return m
	}
	return 1
}
