package fleet_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/redistest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy/policytest"
)

// markTTL is the liveness marks' TTL in these tests (the fleet's is 3 s):
// long beside a poll's round trip on a loaded machine, short beside a
// lease's 15 s.
const markTTL = time.Second

const liveLane = "openai/gpt-6-astra"

// liveFleet is processes of one fleet on a Redis of the test's own, on one
// fake clock (their renewals), with marks of markTTL.
type liveFleet struct {
	rs  *redistest.Server
	rdb *redis.Client // the test's own look at Redis
	clk *policytest.Clock
}

func newLiveFleet(t *testing.T) *liveFleet {
	rs := redistest.Run(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { rdb.Close() })
	return &liveFleet{rs: rs, rdb: rdb, clk: policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
}

func (f *liveFleet) node(t *testing.T, ctx context.Context, id string) *fleet.Node {
	c, err := fleet.Dial("redis://" + f.rs.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return fleet.NewNode(ctx, fleet.NewRedisStore(c).WithMarkTTL(markTTL), id, f.clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// now is Redis's own time.
func (f *liveFleet) now(t *testing.T) time.Time {
	now, err := f.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// marks counts the processes marked live whose id starts with id.
func (f *liveFleet) marks(t *testing.T, id string) int {
	keys, err := f.rdb.Keys(context.Background(), "spillway:node:"+id+"#*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// asks has b ask for the lane's one slot, the fleet's renewals going on
// (the clock moved a third of a mark's TTL each time), until got or
// Redis's time reaches until: whether b was granted it, and Redis's time
// then.
func (f *liveFleet) asks(t *testing.T, b *fleet.Node, until time.Time) (bool, time.Time) {
	t.Helper()
	for {
		f.clk.Advance(markTTL / 3)
		_, ok, err := b.Slot(context.Background(), liveLane, 1)
		now := f.now(t)
		if err == nil && ok || !now.Before(until) {
			return ok, now
		}
		time.Sleep(time.Millisecond) // other processes renew meanwhile: polling, not timing
	}
}

// A process that is gone leaves its lease on a one-slot lane: another
// process's ask for that slot is granted once the gone one's mark is, well
// within the lease's own 15 s. A crashed process (its context ends, no
// Close) renews its mark no more and it lapses; one that ends cleanly
// deletes it at once. While the holder lives, its lease holds.
func TestFleetDropsLeasesOfGoneProcesses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clean bool
	}{{"crash", false}, {"clean end", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLiveFleet(t)
			ctxA, crash := context.WithCancel(context.Background())
			defer crash()
			ctxB, cancel := context.WithCancel(context.Background())
			defer cancel()
			a, b := f.node(t, ctxA, "gw-a"), f.node(t, ctxB, "gw-b")
			if _, ok, err := a.Slot(context.Background(), liveLane, 1); err != nil || !ok {
				t.Fatalf("a's slot: %v %v", ok, err)
			}
			// while a lives, twice its mark's TTL: b is refused throughout
			if ok, _ := f.asks(t, b, f.now(t).Add(2*markTTL)); ok {
				t.Fatal("b was granted the slot a live process holds")
			}
			if f.marks(t, "gw-a") != 1 {
				t.Fatal("a live process has no mark")
			}
			if tc.clean {
				if err := a.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				if n := f.marks(t, "gw-a"); n != 0 {
					t.Fatalf("a process that ended cleanly left its mark (%d)", n)
				}
			}
			crash()
			left, err := f.rdb.ZRangeWithScores(context.Background(), "spillway:slots:"+liveLane, 0, -1).Result()
			if err != nil || len(left) != 1 {
				t.Fatalf("a's lease: %v %v", left, err)
			}
			expiry := time.UnixMilli(int64(left[0].Score))
			ok, at := f.asks(t, b, expiry)
			if !ok || !at.Before(expiry) {
				t.Fatalf("b was granted the slot: %v, %v before the gone process's lease expired (want granted before)", ok, expiry.Sub(at))
			}
		})
	}
}

// A Redis paused for longer than a mark's TTL wakes with every mark
// lapsed, the processes alive: a live process's lease (a request in
// flight) is not dropped when Redis resumes, while the processes mark
// themselves again, nor after.
func TestFleetPauseKeepsLiveLeases(t *testing.T) {
	f := newLiveFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := f.node(t, ctx, "gw-a"), f.node(t, ctx, "gw-b")
	if _, ok, err := a.Slot(ctx, liveLane, 1); err != nil || !ok {
		t.Fatalf("a's slot: %v %v", ok, err)
	}
	if ok, _ := f.asks(t, b, f.now(t).Add(2*markTTL)); ok { // the marks' renewals flow for a whole TTL
		t.Fatal("b was granted the slot a live process holds")
	}
	f.rs.Pause()
	paused := time.Now()
	// Redis's clock (this machine's) runs past every mark's TTL while it is
	// paused; the processes' renewals fail meanwhile
	eventually(t, "the pause outlasts a mark's TTL", func() bool {
		f.clk.Advance(markTTL / 3)
		return time.Since(paused) > 2*markTTL && a.Degraded() && b.Degraded()
	})
	f.rs.Resume()
	// b asks at once, before any process renews its mark (the clock still):
	// every mark has lapsed
	eventually(t, "b's first answer after the pause", func() bool {
		_, ok, err := b.Slot(ctx, liveLane, 1)
		if ok {
			t.Fatal("as Redis woke, b was granted the slot a live process holds: its lease was dropped for a mark the pause let lapse")
		}
		return err == nil
	})
	if n := f.marks(t, "gw-"); n != 0 {
		t.Fatalf("%d marks outlived the pause: the test did not pause long enough", n)
	}
	if ok, _ := f.asks(t, b, f.now(t).Add(3*markTTL)); ok {
		t.Fatal("after the pause, b was granted the slot a live process holds: its lease was dropped for a mark the pause let lapse")
	}
	if f.marks(t, "gw-a") != 1 || f.marks(t, "gw-b") != 1 {
		t.Fatal("the processes did not mark themselves again after the pause")
	}
}

// End to end, with the fleet's own mark TTL (3 s): a process killed while
// it held a model's one slot (its context ends, nothing cleaned up) leaves
// its lease; a request to a gateway that can use that model only is
// answered by it once the killed process's mark is gone, before the
// lease's own 15 s ran out.
func TestFleetGatewayAfterACrash(t *testing.T) {
	rs := redistest.Run(t)
	_, simURL := simtest.Start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newGateway(t, ctx, simURL, rs.Addr, "gw-b", func(c *config.Config) {
		c.Pacing = config.Pacing{MaxConcurrency: 1, When: config.PaceAlways}
		c.Chains["codex"] = []string{"gpt-6-astra"} // astra alone: a request for it can use no other model
	})
	hctx, crash := context.WithCancel(ctx)
	holdSlot(t, hctx, rs.Addr, liveLane)
	crash()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	left, err := rdb.ZRangeWithScores(ctx, "spillway:slots:"+liveLane, 0, -1).Result()
	if err != nil || len(left) != 1 {
		t.Fatalf("the killed process's lease: %v %v", left, err)
	}
	expiry := time.UnixMilli(int64(left[0].Score))
	resp := ask(t, b.url, "gpt-6-astra")
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:ok" || !now.Before(expiry) {
		t.Fatalf("answered %d (%s) %v before the killed process's lease expired: want astra's answer, before", resp.StatusCode, resp.Header.Get("X-Spillway-Route"), expiry.Sub(now))
	}
}
