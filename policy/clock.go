package policy

import (
	"context"
	"time"
)

// Clock is time as the engine sees it: the driver's waits, the pacer's gaps
// and slot deadlines, the breakers' cooldowns and the attempt watchdogs all
// read it, so that tests run them on a fake clock (package policytest) and
// never sleep for real.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends (returning ctx's error).
	Sleep(ctx context.Context, d time.Duration) error
	// AfterFunc calls f in its own goroutine once d has passed, unless stop
	// is called first; stop reports whether the call was still pending.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx is done.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}
