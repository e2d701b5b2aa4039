// Package policytest has test doubles for package policy: a fake clock on
// which the driver's waits, the pacer, the breakers and the watchdogs run
// without sleeping for real.
package policytest

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// Clock is a fake policy.Clock (it does not import policy, so that policy's
// own tests can use it). Time moves only when code sleeps on it (a
// Sleep of d moves it d forward at once and returns) or when a test calls
// Advance; timers whose time has come then fire, each in its own goroutine,
// as time.AfterFunc's do.
//
// Written here rather than taken from a clock library (clockwork,
// benbjohnson/clock) because those block a Sleep until the test advances
// the clock: a request that backs off five times would need the test to
// know and advance each wait. Here a sleeper moves time itself, and only a
// request blocked on something other than the clock (a silent upstream
// that a watchdog must end) needs the test to Advance, after BlockUntil
// says the watchdog is armed.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	slept  []time.Duration
	armed  chan struct{} // closed and replaced when a timer is added
}

// New returns a clock that reads t.
func New(t time.Time) *Clock { return &Clock{now: t, armed: make(chan struct{})} }

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock d forward (firing the timers that come due) and
// returns at once; ctx's error when ctx is already done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		c.mu.Lock()
		c.slept = append(c.slept, d)
		c.mu.Unlock()
		c.Advance(d)
	}
	return ctx.Err()
}

// Slept lists every Sleep's duration so far, in order.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// Advance moves the clock d forward and fires the timers that come due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	clear(c.timers[len(kept):]) // the fired timers' slots: no func kept alive
	c.timers = kept
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		go t.f()
	}
}

// AfterFunc calls f once the clock has moved d forward.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		go f()
		return func() bool { return false }
	}
	c.timers = append(c.timers, t)
	close(c.armed)
	c.armed = make(chan struct{})
	return t.stop
}

// Timers is how many AfterFunc calls are pending.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// BlockUntil waits (in real time) until at least n timers are pending, or
// ctx ends. A test uses it to know that a watchdog or a bounded wait is
// armed before it advances the clock past it.
func (c *Clock) BlockUntil(ctx context.Context, n int) error {
	return c.waitFor(ctx, func() bool { return len(c.timers) >= n })
}

// BlockUntilDue waits (in real time) until a pending timer is due exactly
// d from now, or ctx ends: a test that must fire one watchdog of several
// (the idle one, not the header one) knows from it that this one is armed.
func (c *Clock) BlockUntilDue(ctx context.Context, d time.Duration) error {
	return c.waitFor(ctx, func() bool {
		for _, t := range c.timers {
			if t.at.Sub(c.now) == d {
				return true
			}
		}
		return false
	})
}

// waitFor waits until ok (called with c.mu held) holds, looking again each
// time a timer is armed.
func (c *Clock) waitFor(ctx context.Context, ok func() bool) error {
	for {
		c.mu.Lock()
		done, armed := ok(), c.armed
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-armed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type timer struct {
	c  *Clock
	at time.Time
	f  func()
}

// stop removes the timer; it reports whether it was pending.
func (t *timer) stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			// removed, and its slot cleared: a stopped timer's func (and
			// what it holds: a request's attempt) is not kept alive
			t.c.timers = slices.Delete(t.c.timers, i, i+1)
			return true
		}
	}
	return false
}
