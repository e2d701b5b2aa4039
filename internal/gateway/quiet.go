package gateway

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/policy"
)

// quietAfter is how long the gateway must have nothing in flight before it
// gives its free memory back to the system (Options.GiveBackAfter, serve's
// --give-back-after).
const quietAfter = 30 * time.Second

// quiet gives memory back after a burst. The gateway runs its collector
// at a high target (serve.GatewayGC) and the runtime returns freed pages
// slowly, so after a burst of large bodies (admitted under
// gateway.max_inflight_mb) the process keeps its high-water mark for
// minutes. Once nothing has been in flight for after, giveBack
// (debug.FreeOSMemory) runs once: not again until a request has come and
// gone, so an idle gateway costs nothing, and never during a burst, where
// a soft memory limit would make the collector spin.
type quiet struct {
	clock    func() policy.Clock
	giveBack func()
	after    time.Duration

	mu   sync.Mutex
	open int         // requests in flight
	gen  uint64      // moved on by every request: a timer of an older one does nothing
	stop func() bool // the pending timer's

	given atomic.Int64 // times memory was given back (/metrics)
}

// begin counts a request in flight, and cancels a pending give-back.
func (q *quiet) begin() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.open++
	q.gen++
	if q.stop != nil {
		q.stop()
		q.stop = nil
	}
}

// end counts a request out; the last one out arms the give-back.
func (q *quiet) end() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.open--
	if q.open > 0 {
		return
	}
	gen := q.gen
	q.stop = q.clock().AfterFunc(q.after, func() { q.fire(gen) })
}

// fire gives memory back if nothing came since the timer was armed.
func (q *quiet) fire(gen uint64) {
	q.mu.Lock()
	if gen != q.gen || q.open > 0 {
		q.mu.Unlock()
		return
	}
	q.stop = nil
	q.mu.Unlock()
	q.giveBack()
	q.given.Add(1)
}
