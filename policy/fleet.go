package policy

import (
	"context"
	"time"

	"github.com/spillway/spillway/classify"
)

// Fleet is what an engine shares with the other spillway processes of a
// fleet (package internal/fleet implements it, on Redis, in process, or on
// the queue's database): the capacity
// evidence its breakers and pacer learn from, the probe token of a
// half-open breaker, and, while a lane is paced, the start rate and the
// concurrency slots of that lane.
//
// The engine asks the fleet only when something changes: under pressure
// (a paced lane), at a breaker's probe, after an answer worth telling. The
// request path of a healthy model makes no call at all. Every call must be
// bounded by the implementation (a few milliseconds); an error means "the
// fleet cannot say now", and the engine goes on with its own state.
type Fleet interface {
	// Tell shares one thing an attempt of this process met (asynchronously:
	// it never waits on the network).
	Tell(ev FleetEvent)
	// Listen sets the one function told what other processes met (a later
	// call replaces it: a reloaded engine takes over).
	Listen(f func(FleetEvent))
	// Turn asks for the fleet's next start on lane, spaced gap after the
	// previous start to lane anywhere in the fleet: 0 to start now, or how
	// long to wait before asking again.
	Turn(ctx context.Context, lane string, gap time.Duration) (wait time.Duration, err error)
	// Slot leases one of limit concurrency slots on lane, fleet-wide, until
	// release is called (a lease of a process that died expires). A lease
	// the store would grant after ctx's deadline (a stalled store) must
	// not be granted, nor held by nobody afterwards.
	Slot(ctx context.Context, lane string, limit int) (release func(), ok bool, err error)
	// Probe takes lane's probe token: one probe at a time across the fleet.
	// The token is held until release, or for lease at most.
	Probe(ctx context.Context, lane string, lease time.Duration) (release func(), ok bool, err error)
}

// FleetEvent is one verdict shared with the fleet.
type FleetEvent struct {
	From    string         `json:"from,omitempty"` // the process that saw it (set by the fleet)
	Lane    string         `json:"lane"`           // the candidate (breaker and pacer lane)
	PaceKey string         `json:"pace,omitempty"` // the model and credentials a rate limit slows
	Class   classify.Class `json:"class"`
	Probe   bool           `json:"probe,omitempty"` // the verdict of a half-open breaker's probe
}

// told reports whether a verdict is worth telling the fleet: what opens a
// breaker or presses the pacer (capacity, a silent model, a rate limit),
// and a probe's answer (which closes the others' breakers).
func told(v classify.Verdict, probe bool) bool {
	switch v.Class {
	case classify.Capacity, classify.Timeout, classify.RateLimit:
		return true
	}
	return probe && v.Class == classify.OK
}

// WithFleet shares the engine's evidence, probes and, under pressure, its
// pace and concurrency with the other processes of f's fleet.
func WithFleet(f Fleet) Option { return func(e *Engine) { e.fleet = f } }

// heard takes in what another process of the fleet met, as if seen here:
// the breaker counts it (a probe's answer closes it, or opens it again for
// the lengthened hold), and the pacer is pressed by it.
func (e *Engine) heard(ev FleetEvent) {
	v := classify.Verdict{Class: ev.Class}
	switch {
	case ev.Probe:
		e.breakers.Probed(ev.Lane, v)
		if ev.Class == classify.Capacity {
			e.pacer.full(ev.Lane)
		}
	case ev.Class == classify.RateLimit:
		if ev.PaceKey != "" {
			e.pacer.slowDown(ev.PaceKey)
		}
	default:
		e.breakers.Observe(ev.Lane, v)
		if ev.Class == classify.Capacity {
			e.pacer.full(ev.Lane)
		}
	}
}

// tell shares an attempt's verdict with the fleet, when there is one.
func (e *Engine) tell(lane, rateKey string, v classify.Verdict, probe bool) {
	if e.fleet != nil && told(v, probe) {
		e.fleet.Tell(FleetEvent{Lane: lane, PaceKey: rateKey, Class: v.Class, Probe: probe})
	}
}

// fleetProbeLease bounds how long a probe holds the fleet's token when its
// process dies before releasing it.
const fleetProbeLease = 30 * time.Second

// fleetCallTimeout bounds one call to the fleet on the request path.
const fleetCallTimeout = 50 * time.Millisecond

// fleetPoll is how often a paced start waiting for a fleet-wide slot asks
// again.
const fleetPoll = 20 * time.Millisecond
