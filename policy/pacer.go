package policy

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/spillway/spillway/config"
)

// errPaced is the pacer's answer when a slot and a turn cannot be had
// before the deadline the driver gave (what is left of the request's wait
// budget).
var errPaced = errors.New("no free slot and turn within the wait budget")

// pacer spaces request starts to each model by a minimum gap plus random
// jitter, and limits how many are in flight at once. A rate-limit answer
// slows one key's pace (the gap doubles, up to 16×) and successes bring it
// back. Written here rather than with golang.org/x/time/rate because the
// pace wanted is a jittered gap between starts per model and key, coupled
// with a concurrency limit, not a token bucket; and it must run on the
// injected Clock.
//
// The concurrency limit adapts to the room a model's pool has left (AIMD,
// as TCP's congestion window or Netflix's concurrency-limits): each capacity
// answer halves it, down to one; each answer from the model raises it by a
// quarter, up to pacing.max_concurrency. A pool with one free slot is then
// sent one request at a time instead of three that collide, and the plan
// sends what can go elsewhere to the next model instead of queueing.
//
// Pacing costs nothing while healthy: unless it paces always (batch work),
// a lane is spaced and limited only under pressure, from a capacity answer
// of its model or a rate limit of its pace key until pacing.relax passes
// without another; meanwhile requests start at once, as many as come.
//
// In a fleet (Fleet), a paced start also needs one of the lane's slots
// fleet-wide (the same adaptive limit, counted over every process) and the
// fleet's turn (the same jittered gap, after the last start anywhere): the
// processes together keep the pace one would. When the fleet cannot say,
// the process paces on its own. A request with another model to go to
// waits for a fleet-wide slot one fleet call timeout at most
// (acquireWithin): a fleet full of leases, held or (after a stalled store)
// held by nobody, sends it on rather than holding it.
type pacer struct {
	cfg    config.Pacing
	always bool
	clock  Clock
	rnd    func() float64
	fleet  Fleet // nil: this process alone

	mu      sync.Mutex
	lanes   map[string]*lane
	next    map[string]time.Time // earliest next start per lane (a candidate)
	slow    map[string]float64   // gap multiplier per pace key (a model and a credential)
	pressed map[string]time.Time // the last capacity answer (by lane) or rate limit (by pace key)
}

// lane is one model's requests in flight and their current limit.
type lane struct {
	inflight int
	limit    float64
	wake     chan struct{} // closed and replaced when a slot frees
	reserved time.Time     // until then, requests that can only use this model are waiting for it
	needy    int           // requests under way that can use no other model (see need)
}

func newPacer(cfg config.Pacing, always bool, clock Clock, rnd func() float64, fleet Fleet) *pacer {
	return &pacer{cfg: cfg, always: always, clock: clock, rnd: rnd, fleet: fleet, lanes: map[string]*lane{}, next: map[string]time.Time{},
		slow: map[string]float64{}, pressed: map[string]time.Time{}}
}

// press marks key (a lane or a pace key) as under pressure from now; p.mu
// must be held.
func (p *pacer) press(key string) { p.pressed[key] = p.clock.Now() }

// underPressure reports whether key was pressed within pacing.relax; p.mu
// must be held.
func (p *pacer) underPressure(key string) bool {
	t, ok := p.pressed[key]
	if !ok {
		return false
	}
	relax := p.cfg.Relax.D()
	if relax <= 0 {
		relax = time.Minute // a Pacing written in code without it
	}
	if p.clock.Now().Sub(t) >= relax {
		delete(p.pressed, key)
		return false
	}
	return true
}

// paced reports whether a start in lane with rateKey is spaced and limited;
// p.mu must be held.
func (p *pacer) paced(lane, rateKey string) bool {
	return p.always || p.underPressure(lane) || p.underPressure(rateKey)
}

// pressured reports whether the lane or the pace key is under pressure now
// (for status pages and tests).
func (p *pacer) pressured(lane, rateKey string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.underPressure(lane) || p.underPressure(rateKey)
}

func (p *pacer) max() float64 { return float64(max(p.cfg.MaxConcurrency, 1)) }

// lane returns the lane's; p.mu must be held.
func (p *pacer) lane(laneKey string) *lane {
	l := p.lanes[laneKey]
	if l == nil {
		l = &lane{limit: p.max(), wake: make(chan struct{})}
		p.lanes[laneKey] = l
	}
	return l
}

// wakeLocked lets waiters for l look again; p.mu must be held.
func (l *lane) wakeLocked() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// crowded reports whether model's pool has shown less room than the
// configured concurrency (its limit is down) and that room is taken now, or
// promised to requests that can use no other model (see need and reserve):
// a request that may go to another model should, rather than queue here.
func (p *pacer) crowded(laneKey string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lanes[laneKey]
	return l != nil && l.limit < p.max() && p.paced(laneKey, "") && (l.inflight >= int(l.limit) || l.needy > 0 || p.clock.Now().Before(l.reserved))
}

// need counts a request under way that can use no other model than
// laneKey's (its minimum tier leaves only this one) while it runs: call the
// returned func when it ends. Meanwhile a full pool's scarce room is its:
// requests with somewhere else to go move on (crowded) instead of taking
// the slot and the paced turn it waits for, and colliding with it. Counted
// in this process only: a fleet shares the breaker's one probe, not this.
func (p *pacer) need(laneKey string) (done func()) {
	p.mu.Lock()
	p.lane(laneKey).needy++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.lanes[laneKey].needy--
		p.mu.Unlock()
	}
}

// reserve marks model's scarce room as wanted until `until` by a request
// that can use no other model (its minimum tier allows only this one) and
// is waiting to try again: requests with somewhere else to go leave it the
// room meanwhile, instead of taking the one slot a found gap in a full pool
// offers.
func (p *pacer) reserve(laneKey string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.lane(laneKey); until.After(l.reserved) {
		l.reserved = until
	}
}

// inflight is how many requests to model are in flight.
func (p *pacer) inflight(laneKey string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.lanes[laneKey]; l != nil {
		return l.inflight
	}
	return 0
}

// limit is model's current concurrency limit.
func (p *pacer) limit(laneKey string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.lane(laneKey).limit)
}

// full halves model's limit after a capacity answer (not below one).
func (p *pacer) full(laneKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lane(laneKey)
	l.limit = math.Max(1, l.limit/2)
	p.press(laneKey)
}

// served raises model's limit after an answer from it, up to the maximum.
func (p *pacer) served(laneKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lane(laneKey)
	grew := math.Min(p.max(), l.limit+0.25)
	if int(grew) > int(l.limit) {
		l.wakeLocked() // a slot more: let a waiter in
	}
	l.limit = grew
}

// acquire waits for a slot in the lane's and for its turn to start, then
// returns release (to call when the request is over), the start it waited
// for and the time waited. rateKey names the model and credentials whose
// rate limits slow the gap (see rateKey). When deadline is not zero,
// the whole wait (slot and turn) must end by then: past it, or when the
// turn would come later, acquire returns errPaced without waiting further.
func (p *pacer) acquire(ctx context.Context, laneKey, rateKey string, deadline time.Time) (release func(), start time.Time, waited time.Duration, err error) {
	return p.acquireWithin(ctx, laneKey, rateKey, deadline, 0)
}

// acquireWithin is acquire for a request that waits at most fleetWait in
// all for its slots (0: until deadline) once it has this process's, asking
// the fleet for one at least once, then gives up (errPaced): one with
// another model to go to, which does not wait on a fleet full of leases,
// held or (after a stalled store) held by nobody.
func (p *pacer) acquireWithin(ctx context.Context, laneKey, rateKey string, deadline time.Time, fleetWait time.Duration) (release func(), start time.Time, waited time.Duration, err error) {
	t0 := p.clock.Now()
	var expired chan struct{} // made only when a wait is needed: the common case arms no timer
	paced := true
	for {
		p.mu.Lock()
		l := p.lane(laneKey)
		if paced = p.paced(laneKey, rateKey); !paced || l.inflight < int(l.limit) {
			l.inflight++
			p.mu.Unlock()
			break
		}
		wake := l.wake
		p.mu.Unlock()
		if expired == nil && !deadline.IsZero() {
			expired = make(chan struct{})
			stop := p.clock.AfterFunc(deadline.Sub(t0), func() { close(expired) })
			defer stop()
		}
		select {
		case <-wake:
		case <-expired:
			return nil, time.Time{}, p.clock.Now().Sub(t0), errPaced
		case <-ctx.Done():
			return nil, time.Time{}, p.clock.Now().Sub(t0), ctx.Err()
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			p.mu.Lock()
			l := p.lanes[laneKey]
			l.inflight--
			l.wakeLocked()
			p.mu.Unlock()
		})
	}
	if !paced {
		return release, t0, 0, nil
	}
	if p.fleet != nil {
		return p.acquireInFleet(ctx, laneKey, rateKey, deadline, t0, fleetWait, release)
	}

	start, now, ok := p.turn(laneKey, deadline, func() time.Duration { return p.gap(rateKey) })
	if !ok {
		release()
		return nil, time.Time{}, now.Sub(t0), errPaced
	}
	if err := p.clock.Sleep(ctx, start.Sub(now)); err != nil {
		release()
		return nil, time.Time{}, p.clock.Now().Sub(t0), err
	}
	return release, start, start.Sub(t0), nil
}

// turn takes model's next start in this process: the lane's next, or now,
// and moves the lane's next on by gap() (called with p.mu held). A start
// after deadline is refused (ok false, nothing taken); a start that needs
// no wait never is.
func (p *pacer) turn(laneKey string, deadline time.Time, gap func() time.Duration) (start, now time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now = p.clock.Now()
	start = p.next[laneKey]
	if start.Before(now) {
		start = now
	}
	if !deadline.IsZero() && start.After(now) && start.After(deadline) {
		return start, now, false
	}
	p.next[laneKey] = start.Add(gap())
	return start, now, true
}

// gap is the next start's distance from the last: pacing.min_gap plus a
// random part of pacing.jitter, times rateKey's slowness; p.mu must be
// held.
// unslowed is the longest gap between starts that no rate limit has
// slowed: the configured minimum plus all of the jitter.
func (p *pacer) unslowed() time.Duration { return p.cfg.MinGap.D() + p.cfg.Jitter.D() }

// slowed reports whether rate limits have slowed rateKey's pace.
func (p *pacer) slowed(rateKey string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slow[rateKey] > 1
}

func (p *pacer) gap(rateKey string) time.Duration {
	gap := float64(p.cfg.MinGap.D()) + p.rnd()*float64(p.cfg.Jitter.D())
	if m := p.slow[rateKey]; m > 1 {
		gap *= m
	}
	return time.Duration(gap)
}

// acquireInFleet is acquire's paced part in a fleet: with this process's
// slot taken (local), it takes one of the lane's slots fleet-wide and waits
// for the fleet's turn, asking again every fleetPoll while every slot is
// out (until fleetWait after t0 at most, when it is not 0). Whatever the
// fleet cannot answer (Redis slow or down) is left to this process's own
// pace; a fleet that did not answer for the slot is not asked for the
// turn: a stalled store costs a start one call timeout, not two.
func (p *pacer) acquireInFleet(ctx context.Context, laneKey, rateKey string, deadline, t0 time.Time, fleetWait time.Duration, local func()) (release func(), start time.Time, waited time.Duration, err error) {
	// waited is the time waited for this process's slot and then slept
	// for the fleet's slots and turns, not the fleet's round trips
	w := &fleetWaiter{p: p, ctx: ctx, lane: laneKey, slept: p.clock.Now().Sub(t0)}
	slotBy := deadline // when the wait for slots (this process's and the fleet's) ends
	if by := t0.Add(fleetWait); fleetWait > 0 && (slotBy.IsZero() || by.Before(slotBy)) {
		slotBy = by
	}
	release, answered, err := w.slot(slotBy, local)
	if err != nil {
		local()
		return nil, time.Time{}, w.slept, err
	}
	p.mu.Lock()
	gap := p.gap(rateKey)
	p.mu.Unlock()
	if start, err = w.turn(deadline, gap, answered); err != nil {
		release()
		return nil, time.Time{}, w.slept, err
	}
	return release, start, w.slept, nil
}

// fleetWaiter is one paced start's asks to the fleet, and what it slept
// between them.
type fleetWaiter struct {
	p     *pacer
	ctx   context.Context
	lane  string
	slept time.Duration
}

func (w *fleetWaiter) sleep(d time.Duration) error {
	w.slept += d
	return w.p.clock.Sleep(w.ctx, d)
}

// slot takes one of the lane's slots fleet-wide by `by` (zero: no limit),
// asking every fleetPoll: release is local and the fleet's slot, or local
// alone when the fleet did not answer (answered false).
func (w *fleetWaiter) slot(by time.Time, local func()) (release func(), answered bool, err error) {
	for {
		w.p.mu.Lock()
		limit := int(w.p.lane(w.lane).limit)
		w.p.mu.Unlock()
		c, cancel := context.WithTimeout(w.ctx, fleetCallTimeout)
		free, ok, err := w.p.fleet.Slot(c, w.lane, limit)
		cancel()
		switch {
		case err != nil:
			return local, false, nil // no fleet-wide count now: this process's slot stands
		case ok:
			return func() { free(); local() }, true, nil
		case !by.IsZero() && w.p.clock.Now().Add(fleetPoll).After(by):
			return nil, true, errPaced
		}
		if err := w.sleep(fleetPoll); err != nil {
			return nil, true, err
		}
	}
}

// turn waits for the fleet's turn, gap after the last start anywhere, by
// deadline (zero: no limit); with a fleet that does not answer (or did not
// for the slot: asked false), this process's own turn.
func (w *fleetWaiter) turn(deadline time.Time, gap time.Duration, ask bool) (time.Time, error) {
	p := w.p
	for {
		wait, err := time.Duration(0), errFleetSilent
		if ask {
			c, cancel := context.WithTimeout(w.ctx, fleetCallTimeout)
			wait, err = p.fleet.Turn(c, w.lane, gap)
			cancel()
		}
		if err != nil { // no fleet-wide turn now: keep this process's own pace
			start, now, ok := p.turn(w.lane, deadline, func() time.Duration { return gap })
			if !ok {
				return time.Time{}, errPaced
			}
			return start, w.sleep(start.Sub(now))
		}
		if wait <= 0 {
			return p.clock.Now(), nil
		}
		if !deadline.IsZero() && p.clock.Now().Add(wait).After(deadline) {
			return time.Time{}, errPaced
		}
		if err := w.sleep(wait); err != nil {
			return time.Time{}, err
		}
	}
}

// errFleetSilent: the fleet is not asked (it did not answer just before).
var errFleetSilent = errors.New("the fleet did not answer")

// slowDown doubles the gap for rateKey after a rate-limit answer.
func (p *pacer) slowDown(rateKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slow[rateKey] = min(max(p.slow[rateKey]*2, 2), 16)
	p.press(rateKey)
}

// ease eases rateKey's pace back after a success.
func (p *pacer) ease(k string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.slow[k]; m > 1 {
		if m /= 2; m <= 1 {
			delete(p.slow, k)
		} else {
			p.slow[k] = m
		}
	}
}

// slowness is rateKey's current gap multiplier (1 when normal).
func (p *pacer) slowness(rateKey string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.slow[rateKey]; m > 1 {
		return m
	}
	return 1
}
