package sim

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Clock is the simulator's notion of time. Pool load and rate-limit windows
// follow it; token streaming and the waits clients are told (retry-after)
// are in real time, converted with Factor.
type Clock interface {
	Now() time.Time
	// Factor is how many simulated seconds pass per real second.
	Factor() float64
}

// RealClock is wall-clock time.
type RealClock struct{}

// Now returns time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// Factor is 1.
func (RealClock) Factor() float64 { return 1 }

// FastClock runs Speed simulated seconds per real second from Start.
type FastClock struct {
	Start     time.Time // simulated time at RealStart
	RealStart time.Time
	Speed     float64
	Real      func() time.Time // wall clock; time.Now when nil
}

// Now is the simulated time.
func (c *FastClock) Now() time.Time {
	real := time.Now
	if c.Real != nil {
		real = c.Real
	}
	el := real().Sub(c.RealStart)
	return c.Start.Add(time.Duration(float64(el) * c.Speed))
}

// Factor is Speed.
func (c *FastClock) Factor() float64 { return c.Speed }

// StepClock is simulated time that moves Step with each request the
// simulator takes, and not with the wall clock: what the simulator decides
// (each pool's load, its noise, its rate-limit windows) then depends on
// its seed and the order of the requests it sees, never on how fast they
// came (spillway demo, --clock step:D).
type StepClock struct {
	Start time.Time
	Step  time.Duration
	n     atomic.Int64
}

// Now is Start plus a Step for each request taken so far.
func (c *StepClock) Now() time.Time { return c.Start.Add(time.Duration(c.n.Load()) * c.Step) }

// Factor is 1: a wait the simulator asks for (retry-after) is in its own
// seconds.
func (c *StepClock) Factor() float64 { return 1 }

// tick moves the clock a step: the simulator takes a request.
func (c *StepClock) tick() { c.n.Add(1) }

// ManualClock is set by hand; tests use it to walk through a day.
type ManualClock struct {
	T time.Time
}

// Now returns T.
func (c *ManualClock) Now() time.Time { return c.T }

// Factor is 1.
func (c *ManualClock) Factor() float64 { return 1 }

// ParseClock reads "real", "fast:X" (X simulated seconds per real second)
// or "step:D" (D simulated with each request: StepClock).
// start, when not zero, is the simulated time the clock starts at.
func ParseClock(spec string, start time.Time) (Clock, error) {
	switch {
	case spec == "" || spec == "real":
		if !start.IsZero() {
			return &FastClock{Start: start, RealStart: time.Now(), Speed: 1}, nil
		}
		return RealClock{}, nil
	case strings.HasPrefix(spec, "step:"):
		d, err := time.ParseDuration(strings.TrimPrefix(spec, "step:"))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("sim: --clock %q: write step:D with D a duration, e.g. step:5s (simulated time moves 5s with each request)", spec)
		}
		if start.IsZero() {
			start = time.Now()
		}
		return &StepClock{Start: start, Step: d}, nil
	case strings.HasPrefix(spec, "fast:"):
		x, err := strconv.ParseFloat(strings.TrimPrefix(spec, "fast:"), 64)
		if err != nil || x <= 0 || x > 1e6 {
			return nil, fmt.Errorf("sim: --clock %q: write fast:X with X a speed-up from 0 to 1000000, e.g. fast:60 (an hour per minute)", spec)
		}
		if start.IsZero() {
			start = time.Now()
		}
		return &FastClock{Start: start, RealStart: time.Now(), Speed: x}, nil
	}
	return nil, fmt.Errorf("sim: --clock %q: allowed: real, fast:X, step:D", spec)
}
