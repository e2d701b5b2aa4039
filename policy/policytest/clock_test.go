package policytest

import (
	"runtime"
	"testing"
	"time"
)

// A timer that was stopped or has fired keeps nothing alive: its func (and
// what the func holds, a request's attempt) can be collected while other
// timers stay pending.
func TestEndedTimersAreReleased(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(c *Clock, stop func() bool)
	}{
		{"stopped", func(_ *Clock, stop func() bool) { stop() }},
		{"fired", func(c *Clock, _ func() bool) { c.Advance(time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
			defer c.AfterFunc(time.Hour, func() {})() // pending before it and after: the timers' array stays
			released := make(chan struct{})
			func() {
				held := new([1 << 10]byte)
				runtime.AddCleanup(held, func(ch chan struct{}) { close(ch) }, released)
				stop := c.AfterFunc(time.Second, func() { held[0]++ })
				tc.end(c, stop)
			}()
			deadline := time.Now().Add(10 * time.Second)
			for {
				runtime.GC()
				select {
				case <-released:
					return
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("the %s timer's func is still reachable (%d timers pending)", tc.name, c.Timers())
				}
			}
		})
	}
}
