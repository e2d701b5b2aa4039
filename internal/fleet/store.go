package fleet

import (
	"context"
	"sync"
	"time"

	"github.com/spillway/spillway/policy"
)

// Store is where a fleet keeps what its processes share. Redis serves a
// real fleet (RedisStore); MemoryStore serves several engines in one
// process (tests) and is the reference the conformance suite holds Redis
// to. Every method is one short call; the Node bounds each with a timeout.
type Store interface {
	// Publish sends msg to every subscriber (the sender's own included).
	Publish(ctx context.Context, msg []byte) error
	// Subscribe delivers what is published from now on until ctx ends,
	// reconnecting by itself; ready is closed once the subscription holds.
	Subscribe(ctx context.Context) (msgs <-chan []byte, ready <-chan struct{})
	// Turn is a start on key spaced gap after the previous one (a GCRA with
	// a burst of one, whose interval is each start's own gap): 0 when the
	// start may go now (and is counted), or how long until it may.
	Turn(ctx context.Context, key string, gap time.Duration) (time.Duration, error)
	// Lease adds member to key's leases when fewer than limit are alive;
	// a lease lives ttl unless renewed. An ask the store carries out after
	// ctx's deadline (it stalled meanwhile) takes nothing and answers
	// ErrLate: the caller has given up on it.
	Lease(ctx context.Context, key, member string, limit int, ttl time.Duration) (bool, error)
	// Renew keeps member's lease on key alive for another ttl.
	Renew(ctx context.Context, key, member string, ttl time.Duration) error
	// Unlease ends member's lease on key.
	Unlease(ctx context.Context, key, member string) error
	// Take makes owner the holder of key's token unless it is held (by
	// anyone), for lease at most; ErrLate as Lease.
	Take(ctx context.Context, key, owner string, lease time.Duration) (bool, error)
	// Give hands key's token back, if owner holds it.
	Give(ctx context.Context, key, owner string) error
}

// MemoryStore is a Store in this process, on an injected clock.
type MemoryStore struct {
	clock policy.Clock

	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	tat    map[string]time.Time
	starts map[string][]time.Time          // the turns granted, when
	leases map[string]map[string]time.Time // key → member → expiry
	tokens map[string]token
}

type token struct {
	owner string
	until time.Time
}

// NewMemoryStore returns an empty store on clock.
func NewMemoryStore(clock policy.Clock) *MemoryStore {
	return &MemoryStore{clock: clock, subs: map[chan []byte]struct{}{}, tat: map[string]time.Time{}, starts: map[string][]time.Time{},
		leases: map[string]map[string]time.Time{}, tokens: map[string]token{}}
}

// Publish implements Store; a subscriber that does not keep up loses the
// message (as a Redis subscriber whose connection broke would).
func (m *MemoryStore) Publish(ctx context.Context, msg []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ch := range m.subs {
		select {
		case ch <- msg:
		default:
		}
	}
	return ctx.Err()
}

// Subscribe implements Store.
func (m *MemoryStore) Subscribe(ctx context.Context) (<-chan []byte, <-chan struct{}) {
	ch := make(chan []byte, 1024)
	m.mu.Lock()
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	go func() {
		<-ctx.Done()
		m.mu.Lock()
		delete(m.subs, ch)
		m.mu.Unlock()
	}()
	ready := make(chan struct{})
	close(ready)
	return ch, ready
}

// Turn implements Store.
func (m *MemoryStore) Turn(ctx context.Context, key string, gap time.Duration) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if tat := m.tat[key]; tat.After(now) {
		return tat.Sub(now), ctx.Err()
	}
	m.tat[key] = now.Add(gap)
	m.starts[key] = append(m.starts[key], now)
	return 0, ctx.Err()
}

// Starts lists when the turns on key were granted, in order, on the
// store's clock (what tests check a fleet's pace with).
func (m *MemoryStore) Starts(key string) []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Time(nil), m.starts[key]...)
}

// Lease implements Store.
func (m *MemoryStore) Lease(ctx context.Context, key, member string, limit int, ttl time.Duration) (bool, error) {
	if ctx.Err() != nil {
		return false, ErrLate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	ls := m.leases[key]
	if ls == nil {
		ls = map[string]time.Time{}
		m.leases[key] = ls
	}
	for mem, until := range ls {
		if !until.After(now) {
			delete(ls, mem)
		}
	}
	if _, held := ls[member]; !held && len(ls) >= limit {
		return false, ctx.Err()
	}
	ls[member] = now.Add(ttl)
	return true, ctx.Err()
}

// Renew implements Store.
func (m *MemoryStore) Renew(ctx context.Context, key, member string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.leases[key][member]; ok {
		m.leases[key][member] = m.clock.Now().Add(ttl)
	}
	return ctx.Err()
}

// Unlease implements Store.
func (m *MemoryStore) Unlease(ctx context.Context, key, member string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.leases[key], member)
	return ctx.Err()
}

// Take implements Store.
func (m *MemoryStore) Take(ctx context.Context, key, owner string, lease time.Duration) (bool, error) {
	if ctx.Err() != nil {
		return false, ErrLate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if t, ok := m.tokens[key]; ok && t.until.After(now) {
		return false, ctx.Err()
	}
	m.tokens[key] = token{owner, now.Add(lease)}
	return true, ctx.Err()
}

// Give implements Store.
func (m *MemoryStore) Give(ctx context.Context, key, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens[key].owner == owner {
		delete(m.tokens, key)
	}
	return ctx.Err()
}
