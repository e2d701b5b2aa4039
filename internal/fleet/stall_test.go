package fleet_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/redistest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// While another process holds a paced model's every slot, a request with
// another model to go to waits one store call timeout for a fleet-wide
// slot and is answered by the next model; a request that can use no other
// model waits for the slot.
func TestFleetSlotWaitBounded(t *testing.T) {
	_, b, na, _, clk, _ := pair(t, func(c *config.Config) {
		c.Pacing = config.Pacing{MaxConcurrency: 1, When: config.PaceAlways}
	})
	release, ok, err := na.Slot(context.Background(), "openai/gpt-6-astra", 1) // A's request in flight
	if err != nil || !ok {
		t.Fatalf("A's slot: %v %v", ok, err)
	}
	out := b.Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: answer(classify.OK)})
	if !out.Committed || out.Route != "gpt-6-astra:no_slot > gpt-6.1-sol:ok" || out.Waited > callTimeout {
		t.Fatalf("with astra's slot held elsewhere: route %s, waited %v (want sol, after %v at most)", out.Route, out.Waited, callTimeout)
	}
	clk.AfterFunc(time.Second, release) // A's request ends a second on
	out = b.Run(context.Background(), &policy.Call{Request: policy.Request{Models: []string{"gpt-6-astra"}}, Send: answer(classify.OK)})
	if !out.Committed || out.Route != "gpt-6-astra:ok" || out.Waited < time.Second {
		t.Fatalf("astra only: route %s, waited %v (want astra, after A's request ended)", out.Route, out.Waited)
	}
}

// flaky is a store that fails every call while down, the leases it is
// asked for while down made all the same (as a store that ran the call
// after the caller gave up).
type flaky struct {
	*fleet.MemoryStore
	down  atomic.Bool
	late  atomic.Bool  // leases are run past their deadline (ErrLate)
	turns atomic.Int32 // turns asked for
}

var errDown = errors.New("store down")

func (f *flaky) Lease(ctx context.Context, key, member string, limit int, ttl time.Duration) (bool, error) {
	ok, err := f.MemoryStore.Lease(ctx, key, member, limit, ttl)
	if f.down.Load() {
		return false, errDown
	}
	if f.late.Load() {
		f.MemoryStore.Unlease(ctx, key, member)
		return false, fleet.ErrLate
	}
	return ok, err
}

func (f *flaky) Unlease(ctx context.Context, key, member string) error {
	if f.down.Load() {
		return errDown
	}
	return f.MemoryStore.Unlease(ctx, key, member)
}

func (f *flaky) Turn(ctx context.Context, key string, gap time.Duration) (time.Duration, error) {
	f.turns.Add(1)
	if f.down.Load() {
		return 0, errDown
	}
	return f.MemoryStore.Turn(ctx, key, gap)
}

// flakyNode is node "a" on a flaky store, on a fake clock, logging to log;
// its ctx ends with the test.
func flakyNode(t *testing.T, log io.Writer) (*policytest.Clock, *flaky, context.Context, *fleet.Node) {
	clk := policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	store := &flaky{MemoryStore: fleet.NewMemoryStore(clk)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return clk, store, ctx, fleet.NewNode(ctx, store, "a", clk, slog.New(slog.NewTextHandler(log, nil)))
}

// A node hands back, as soon as the store answers again, the slots it let
// go of and the asks it gave up on while the store failed: none is left
// for the fleet to wait out.
func TestNodeSweepsWhatItGaveUpOn(t *testing.T) {
	_, store, ctx, n := flakyNode(t, io.Discard)
	release, ok, err := n.Slot(ctx, "held", 1)
	if err != nil || !ok {
		t.Fatalf("slot: %v %v", ok, err)
	}
	store.down.Store(true)
	release() // its hand-back fails
	if _, _, err := n.Slot(ctx, "asked", 1); err == nil {
		t.Fatal("a slot asked for while the store failed was granted")
	}
	eventually(t, "the node notices", n.Degraded)
	if st := n.Status(); st["slots_held"] != 0 || st["slots_releasing"] != 2 {
		t.Fatalf("while the store fails: %v held, %v to hand back; want 0, 2", st["slots_held"], st["slots_releasing"])
	}
	if w, err := n.Turn(ctx, "held", 0); err != nil || w != 0 || !n.Degraded() {
		t.Fatal("a turn without a gap, which asks the store nothing, cleared the degradation")
	}
	store.down.Store(false)
	if _, err := n.Turn(ctx, "other", time.Second); err != nil { // the store answers again
		t.Fatal(err)
	}
	eventually(t, "the node hands back what it let go of", func() bool { return n.Status()["slots_releasing"] == 0 })
	for _, lane := range []string{"held", "asked"} {
		if ok, _ := store.MemoryStore.Lease(ctx, lane, "another", 1, time.Minute); !ok {
			t.Errorf("%s's one slot is still taken by a lease the node let go of", lane)
		}
	}
}

// A store that ran an ask late answered: the node is not degraded by it,
// says nothing of it, and has nothing to hand back (the ask took nothing).
func TestALateAskIsNoOutage(t *testing.T) {
	var logs bytes.Buffer
	_, store, ctx, n := flakyNode(t, &logs)
	store.late.Store(true)
	if _, ok, err := n.Slot(ctx, "m", 1); ok || !errors.Is(err, fleet.ErrLate) {
		t.Fatalf("a late ask: granted %v, %v", ok, err)
	}
	if n.Degraded() || n.Status()["slots_releasing"] != 0 || strings.Contains(logs.String(), "unreachable") {
		t.Fatalf("a late ask: degraded %v, %v to hand back, log %q", n.Degraded(), n.Status()["slots_releasing"], logs.String())
	}
}

// A slot or a probe token asked for while Redis is paused, which Redis
// carries out when it resumes, after the caller gave up, takes nothing:
// the script refuses an ask run past its deadline.
func TestRedisLateAskTakesNothing(t *testing.T) {
	rs := redistest.Run(t)
	seen := redistest.Monitor(t, rs.Addr)
	ctx := context.Background()
	lease := func(s *fleet.RedisStore, member string, d time.Duration) (bool, error) {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return s.Lease(c, "m", member, 5, time.Minute)
	}
	take := func(s *fleet.RedisStore, owner string, d time.Duration) (bool, error) {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return s.Take(c, "m", owner, time.Minute)
	}
	// two stores, each with a connection open (and Redis's time known)
	var stores [2]*fleet.RedisStore
	for i := range stores {
		rdb, err := fleet.Dial("redis://" + rs.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		stores[i] = fleet.NewRedisStore(rdb)
		if ok, err := lease(stores[i], "warm", 10*time.Second); err != nil || !ok {
			t.Fatalf("lease before the pause: %v %v", ok, err)
		}
	}
	rs.Pause()
	if _, err := lease(stores[0], "late-lease", callTimeout); err == nil {
		t.Fatal("a lease was answered by a paused Redis")
	}
	if _, err := take(stores[1], "late-token", callTimeout); err == nil {
		t.Fatal("a token was answered by a paused Redis")
	}
	rs.Resume()
	eventually(t, "Redis runs the asks sent while it was paused", func() bool {
		return strings.Contains(seen(), "late-lease") && strings.Contains(seen(), "late-token")
	})
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	if err := rdb.ZScore(ctx, "spillway:slots:m", "late-lease").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("a lease asked for while Redis was paused was made when it resumed (%v)", err)
	}
	if owner, err := rdb.Get(ctx, "spillway:probe:m").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("the probe token asked for while Redis was paused is held by %q", owner)
	}
	// and an ask in time is granted
	if ok, err := lease(stores[0], "in-time", 10*time.Second); err != nil || !ok {
		t.Fatalf("a lease after the pause: %v %v", ok, err)
	}
	if ok, err := take(stores[1], "in-time", 10*time.Second); err != nil || !ok {
		t.Fatalf("a token after the pause: %v %v", ok, err)
	}
}

// A paced start whose fleet did not answer for the slot does not ask it
// for the turn as well: a store that fails costs a start one call, and the
// start keeps this process's own pace.
func TestFleetStallCostsOneCall(t *testing.T) {
	clk, store, ctx, n := flakyNode(t, io.Discard)
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MinGap: config.Duration(time.Second), MaxConcurrency: 1, When: config.PaceAlways}
	e := policy.New(cfg, policy.WithClock(clk), policy.WithFleet(n))
	run := func() policy.Outcome {
		return e.Run(ctx, &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Send: answer(classify.OK)})
	}
	if out := run(); out.Route != "gpt-6-astra:ok" || store.turns.Load() != 1 {
		t.Fatalf("with the store up: route %s, %d turns asked for, want astra and 1", out.Route, store.turns.Load())
	}
	store.down.Store(true)
	for i := range 2 {
		if out := run(); out.Route != "gpt-6-astra:ok" {
			t.Fatalf("request %d with the store down: route %s", i, out.Route)
		}
	}
	if got := store.turns.Load(); got != 1 {
		t.Fatalf("the store was asked for %d turns more after it failed to answer for the slot", got-1)
	}
	if slept := clk.Slept(); len(slept) != 1 || slept[0] != time.Second {
		t.Fatalf("with the store down, two starts slept %v: want this process's own gap (1s) once, between them", slept)
	}
}

// A store's first ask costs no round trip for the server's time (on a
// slow store that spent the call's timeout, and a gateway went on its own
// pace at its first request); after Ping, which tells the time and loads
// the scripts at start, the first ask is one call.
func TestTheFirstAskIsOneCall(t *testing.T) {
	for _, ping := range []bool{false, true} {
		rs := redistest.Run(t)
		seen := redistest.Monitor(t, rs.Addr)
		rdb, err := fleet.Dial("redis://" + rs.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		store := fleet.NewRedisStore(rdb)
		if ping {
			if err := store.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.Set(ctx, "before", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := store.Lease(ctx, "first", "gw-a#1/1/ab", 1, time.Minute); err != nil || !ok {
			t.Fatalf("lease: %v %v", ok, err)
		}
		if err := rdb.Set(ctx, "after", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		sent := sentBetween(ctx, seen, `"before"`, `"after"`)
		if strings.Contains(strings.ToLower(strings.Join(sent, "\n")), `"time"`) || ping && len(sent) != 1 {
			t.Fatalf("ping %v: the first lease sent:\n%s", ping, strings.Join(sent, "\n"))
		}
	}
}

// sentBetween is what clients sent (not scripts) between the commands
// that name from and to, as MONITOR saw it.
func sentBetween(ctx context.Context, seen func() string, from, to string) []string {
	for ctx.Err() == nil {
		log := seen()
		i, j := strings.Index(log, from), strings.Index(log, to)
		if i < 0 || j < i {
			runtime.Gosched()
			continue
		}
		var sent []string
		lines := strings.Split(log[i:j], "\n")
		for _, line := range lines[1 : len(lines)-1] {
			if !strings.Contains(line, "[0 lua]") && strings.TrimSpace(line) != "" {
				sent = append(sent, line)
			}
		}
		return sent
	}
	return nil
}
