// Package fleet shares what one spillway process learns about capacity
// with the others of a fleet (state: redis://…): a Node is the
// policy.Fleet of one process, on a Store (Redis for a fleet, memory for
// tests and as the reference).
//
// The engine decides with its own breakers and pacer, so the request path
// never waits on Redis while nothing changes. What changes travels:
//   - every capacity answer, silent model, rate limit and probe answer an
//     attempt of this process meets is published (pub/sub), and every one
//     another process publishes is fed into this engine as if seen here: a
//     model that fills up through gateway A trips B's breaker within the
//     delivery time (milliseconds), and B skips it without trying;
//   - a half-open breaker's probe takes the fleet's probe token (one probe
//     at a time across the fleet), and its success closes every process's
//     breaker;
//   - while a lane is paced (under pressure, or always for batch work),
//     each start takes one of the lane's slots fleet-wide (leases with a
//     TTL, renewed while held) and the fleet's turn (redis_rate's GCRA):
//     the processes together keep the pace and the concurrency one would.
//
// When Redis is slow or down every call gives up after its timeout
// (publishing is dropped, never queued without bound), each process goes
// on with its own state, the degradation is logged once and shows in
// Degraded (and the gateway's /metrics and /spillway/status); go-redis
// reconnects and resubscribes by itself, and sharing resumes.
//
// A store that stalls costs at most its call timeout. A Redis that is
// paused (SIGSTOP, a swapped-out host) carries out, when it wakes, what
// was sent to it meanwhile: a slot or a probe token asked for then carries
// its deadline in Redis's own time and is refused by the script when it
// runs late (ErrLate); a lease this process gave up on, or could not hand
// back, is remembered and handed back (swept) as soon as the store answers
// again. A lease or token names the process that asked for it and when
// ("gw-a/<ms>/<random>"); the engine waits for a fleet-wide slot one call
// timeout at most when the request has another model to go to, so no
// request waits out a lease nobody holds while another model has room.
//
// Written here rather than with a distributed-breaker library: none of the
// maintained ones keeps the decision local with shared evidence, which the
// request path needs. The start rate is a maintained limiter (redis_rate).
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/policy"
)

// callTimeout bounds one store call made off the request path
// (publishing, renewing leases).
const callTimeout = 50 * time.Millisecond

// slotTTL is how long a slot of a process that died stays taken; a live
// process renews its slots every slotTTL/3.
const slotTTL = 15 * time.Second

// Node is one process's membership of a fleet: it implements policy.Fleet.
type Node struct {
	store Store
	id    string
	live  string // the name its leases carry: id and this run's own part
	clock policy.Clock
	log   *slog.Logger
	out   chan policy.FleetEvent

	listen   atomic.Pointer[func(policy.FleetEvent)]
	closed   atomic.Bool
	marking  sync.Mutex // a renewal of the mark, or Close's deletion
	degraded atomic.Bool
	sent     atomic.Int64
	received atomic.Int64

	mu    sync.Mutex
	held  map[[2]string]struct{} // slots held: lane, member
	stray map[stray]struct{}     // leases and tokens given up on or let go, not yet handed back
	seen  map[string]map[string]*Seen
	busy  map[string]time.Time // lanes whose probe token another process held, until
	sweep chan struct{}        // a sweep of the strays is due
}

// stray is a lease (token false) or a probe token this process let go of
// or gave up on, until the store confirms it is handed back.
type stray struct {
	lane, member string
	token        bool
}

// maxStray bounds the strays remembered: past it, one more is left to
// expire (its lease or token's own limit).
const maxStray = 4096

// maxSeen bounds the instances remembered per lane (the least recent go).
const maxSeen = 64

// probeBusy is how long a lane whose probe token another process holds
// is not asked again: the requests meanwhile skip the model without a
// round trip each.
const probeBusy = time.Second

// Seen is what one instance met on one lane, as this node heard it.
type Seen struct {
	Class string    `json:"class"` // the last
	Count int       `json:"count"`
	Last  time.Time `json:"last"`
}

// marker is a Store that tells a live process's leases from those of a
// process that is gone (RedisStore): a process marks itself live every
// MarkTTL/3, and a lease whose process has no mark is dropped by the next
// lease that finds its lane full, instead of being waited out.
type marker interface {
	MarkTTL() time.Duration
	Mark(ctx context.Context, process string) error
	Unmark(ctx context.Context, process string) error
}

// NewNode joins the fleet of store as process id (unique per process)
// until ctx ends (a crash, as the fleet sees it: its mark lapses) or Close
// (a clean end: its mark is deleted).
func NewNode(ctx context.Context, store Store, id string, clock policy.Clock, log *slog.Logger) *Node {
	n := &Node{store: store, id: id, live: id + "#" + newToken(), clock: clock, log: log, out: make(chan policy.FleetEvent, 1024),
		held: map[[2]string]struct{}{}, stray: map[stray]struct{}{}, seen: map[string]map[string]*Seen{}, busy: map[string]time.Time{},
		sweep: make(chan struct{}, 1)}
	msgs, _ := store.Subscribe(ctx)
	go n.publish(ctx)
	go n.receive(ctx, msgs)
	go n.sweeper(ctx)
	n.renewLater(ctx)
	if m, ok := store.(marker); ok && m.MarkTTL() > 0 {
		go n.markLive(ctx, m)
	}
	return n
}

// markLive marks this process live now and every MarkTTL/3 until ctx ends
// or Close. A renewal runs late (ErrLate) or fails while the store stalls;
// the next one after it answers marks the process again, and a lease this
// process is granted meanwhile marks it too (the lease script), so no new
// lease of a live process is judged by a lapsed mark.
//
// Why a pause does not make live leases vanish under requests in flight:
// a Redis paused longer than a mark's TTL wakes with every mark lapsed
// (its clock ran on). The lease script drops a lease for its missing mark
// only once the fleet's renewals have flowed for a whole mark TTL since
// the last gap longer than one (spillway:nodes' since and last), and every
// live process renews three times in that time: so a process that lives
// and reaches Redis again has its mark back before its leases can be
// judged by it. What the rule gives up: a process that alone cannot reach
// Redis for longer than a mark's TTL, while the others can, is taken for
// gone; its requests in flight stop counting against their lanes' slots,
// each putting its lane one over the limit at most until it ends (that
// process paces on its own meanwhile anyway: it is degraded).
func (n *Node) markLive(ctx context.Context, m marker) {
	n.marking.Lock()
	if ctx.Err() != nil || n.closed.Load() {
		n.marking.Unlock()
		return
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	err := m.Mark(cctx, n.live)
	cancel()
	n.marking.Unlock()
	if !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		n.health(err)
	}
	n.clock.AfterFunc(m.MarkTTL()/3, func() { n.markLive(ctx, m) })
}

// Close ends this process's membership cleanly: its mark is deleted (the
// leases it leaves behind are dropped by the next lease that finds their
// lane full) and no longer renewed. The caller ends ctx after it.
func (n *Node) Close(ctx context.Context) error {
	n.marking.Lock() // a renewal under way ends first: none marks the process again after
	defer n.marking.Unlock()
	n.closed.Store(true)
	m, ok := n.store.(marker)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return m.Unmark(ctx, n.live)
}

// ID is this process's name in the fleet.
func (n *Node) ID() string { return n.id }

// Listen implements policy.Fleet.
func (n *Node) Listen(f func(policy.FleetEvent)) { n.listen.Store(&f) }

// Tell implements policy.Fleet.
func (n *Node) Tell(ev policy.FleetEvent) {
	ev.From = n.id
	n.note(ev)
	select {
	case n.out <- ev:
	default: // the store cannot keep up: this process keeps its own evidence
	}
}

func (n *Node) publish(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-n.out:
			msg, _ := json.Marshal(ev)
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			err := n.store.Publish(cctx, msg)
			cancel()
			if n.health(err) {
				n.sent.Add(1)
			}
		}
	}
}

func (n *Node) receive(ctx context.Context, msgs <-chan []byte) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
			var ev policy.FleetEvent
			if json.Unmarshal(m, &ev) != nil || ev.From == n.id || ev.Lane == "" {
				continue
			}
			n.received.Add(1)
			n.note(ev)
			if f := n.listen.Load(); f != nil {
				(*f)(ev)
			}
		}
	}
}

// note records what ev's instance met, for Status.
func (n *Node) note(ev policy.FleetEvent) {
	n.mu.Lock()
	defer n.mu.Unlock()
	byInstance := n.seen[ev.Lane]
	if byInstance == nil {
		byInstance = map[string]*Seen{}
		n.seen[ev.Lane] = byInstance
	}
	s := byInstance[ev.From]
	if s == nil {
		if len(byInstance) >= maxSeen { // many short-lived processes (exec runs): forget the least recent
			var oldest string
			for id, o := range byInstance {
				if oldest == "" || o.Last.Before(byInstance[oldest].Last) {
					oldest = id
				}
			}
			delete(byInstance, oldest)
		}
		s = &Seen{}
		byInstance[ev.From] = s
	}
	s.Class, s.Last = string(ev.Class), n.clock.Now().UTC()
	if ev.Probe {
		s.Class += " (probe)"
	}
	s.Count++
}

// health records whether the store answered, logging a change between
// sharing and not once each way; it reports whether it answered. A call
// cancelled by its caller (a client that went away) says nothing of the
// store, nor does an ask it ran late (ErrLate: it answered, slowly; the
// ask took nothing, and the node is no more degraded than before).
func (n *Node) health(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, ErrLate):
	case err != nil && !n.degraded.Swap(true):
		n.log.Warn("fleet: the shared state (Redis, or the queue database) is unreachable; this process goes on with its own breakers and pace until it is back", "error", err.Error())
	case err == nil && n.degraded.Swap(false):
		n.log.Info("fleet: the shared state is back; capacity evidence, probes and pace are shared again")
		n.kick()
	}
	return err == nil
}

// Report records whether the store answered a check of the caller's (a
// ping at start): unreachable, the node is degraded and says so at once,
// before its first capacity answer would.
func (n *Node) Report(err error) { n.health(err) }

// Turn implements policy.Fleet. A turn without a gap asks the store
// nothing, and so says nothing of it: a degraded node stays degraded
// until the store answers again.
func (n *Node) Turn(ctx context.Context, lane string, gap time.Duration) (time.Duration, error) {
	if gap <= 0 {
		return 0, nil
	}
	w, err := n.store.Turn(ctx, lane, gap)
	n.health(err)
	return w, err
}

// Slot implements policy.Fleet.
func (n *Node) Slot(ctx context.Context, lane string, limit int) (func(), bool, error) {
	member := n.member()
	ok, err := n.store.Lease(ctx, lane, member, limit, slotTTL)
	if err != nil && !errors.Is(err, ErrLate) { // the lease may have been made before the call gave up, or be made later
		n.letGo(stray{lane: lane, member: member}, [2]string{})
	}
	if !n.health(err) || !ok {
		return nil, false, err
	}
	k := [2]string{lane, member}
	n.mu.Lock()
	n.held[k] = struct{}{}
	n.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() { n.letGo(stray{lane: lane, member: member}, k) })
	}, true, nil
}

// member names a new lease or token: this process (its id and this run's
// own part, as its liveness mark names it: a process restarted under the
// same id, as pid 1 of a container is, does not vouch for the leases its
// crashed predecessor left), when it was asked for (ms on this process's
// clock) and a random part.
func (n *Node) member() string {
	return n.live + "/" + strconv.FormatInt(n.clock.Now().UnixMilli(), 10) + "/" + newToken()
}

// Probe implements policy.Fleet.
func (n *Node) Probe(ctx context.Context, lane string, lease time.Duration) (func(), bool, error) {
	n.mu.Lock()
	busy := n.clock.Now().Before(n.busy[lane])
	n.mu.Unlock()
	if busy {
		return nil, false, nil
	}
	owner := n.member()
	ok, err := n.store.Take(ctx, lane, owner, lease)
	if err != nil && !errors.Is(err, ErrLate) { // the token may have been taken before the call gave up, or be taken later
		n.letGo(stray{lane: lane, member: owner, token: true}, [2]string{})
	}
	if !n.health(err) || !ok {
		if err == nil {
			n.mu.Lock()
			n.busy[lane] = n.clock.Now().Add(probeBusy)
			n.mu.Unlock()
		}
		return nil, false, err
	}
	var once sync.Once
	return func() {
		once.Do(func() { n.letGo(stray{lane: lane, member: owner, token: true}, [2]string{}) })
	}, true, nil
}

// letGo hands s back off the request path, bounded by callTimeout; until
// the store confirms it, s is a stray, handed back again at the next sweep.
// held, when not zero, is the slot s was held as: it stops being held as
// s becomes a stray, at once (Status never shows it as neither).
func (n *Node) letGo(s stray, held [2]string) {
	n.mu.Lock()
	delete(n.held, held)
	full := len(n.stray) >= maxStray
	if !full {
		n.stray[s] = struct{}{}
	}
	n.mu.Unlock()
	if !full { // else left to expire
		go n.handBack(context.Background(), s)
	}
}

// handBack asks the store once to end s, and forgets s when it did.
func (n *Node) handBack(ctx context.Context, s stray) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var err error
	if s.token {
		err = n.store.Give(ctx, s.lane, s.member)
	} else {
		err = n.store.Unlease(ctx, s.lane, s.member)
	}
	if n.health(err) {
		n.mu.Lock()
		delete(n.stray, s)
		n.mu.Unlock()
	}
}

// kick asks for a sweep of the strays (the store answers again).
func (n *Node) kick() {
	select {
	case n.sweep <- struct{}{}:
	default:
	}
}

// sweeper hands the strays back whenever kicked, one at a time.
func (n *Node) sweeper(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.sweep:
		}
		n.mu.Lock()
		strays := slices.Collect(maps.Keys(n.stray))
		n.mu.Unlock()
		for _, s := range strays {
			if ctx.Err() != nil {
				return
			}
			n.handBack(ctx, s)
		}
	}
}

// renewLater keeps the slots this process holds alive, every slotTTL/3.
func (n *Node) renewLater(ctx context.Context) {
	n.clock.AfterFunc(slotTTL/3, func() {
		if ctx.Err() != nil {
			return
		}
		n.mu.Lock()
		held := slices.Collect(maps.Keys(n.held))
		n.mu.Unlock()
		for _, k := range held {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			n.health(n.store.Renew(cctx, k[0], k[1], slotTTL))
			cancel()
		}
		n.kick() // and whatever could not be handed back yet
		n.renewLater(ctx)
	})
}

// Degraded reports whether the store failed at the last call.
func (n *Node) Degraded() bool { return n.degraded.Load() }

// Sent is how much evidence this process published.
func (n *Node) Sent() int64 { return n.sent.Load() }

// Received is how much evidence came from other processes.
func (n *Node) Received() int64 { return n.received.Load() }

// Status is the fleet as this process sees it: per lane, what each
// instance (this one included) met, how often and when last.
func (n *Node) Status() map[string]any {
	n.mu.Lock()
	seen := make(map[string]map[string]Seen, len(n.seen))
	for lane, byInstance := range n.seen {
		m := make(map[string]Seen, len(byInstance))
		for id, s := range byInstance {
			m[id] = *s
		}
		seen[lane] = m
	}
	slots, strays := len(n.held), len(n.stray)
	n.mu.Unlock()
	return map[string]any{"instance": n.id, "degraded": n.Degraded(), "evidence_sent": n.Sent(),
		"evidence_received": n.Received(), "slots_held": slots, "slots_releasing": strays, "seen": seen}
}

func newToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ensure the Node is what the engine consumes.
var _ policy.Fleet = (*Node)(nil)
