package fleet_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/pgtest"
	"github.com/spillway/spillway/internal/queue"
	"github.com/spillway/spillway/policy/policytest"
)

// storeUnderTest is one Store and a way to let time pass on its clock: the
// memory store's is a fake clock, Redis's is the Redis server's own (a
// separate process, which the test can only wait for; it asserts no upper
// bound on how long that takes), and so are the databases'.
type storeUnderTest struct {
	store fleet.Store
	pass  func(time.Duration)
}

func stores(t *testing.T) map[string]func(t *testing.T) storeUnderTest {
	return map[string]func(t *testing.T) storeUnderTest{
		"memory": func(t *testing.T) storeUnderTest {
			clk := policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			return storeUnderTest{fleet.NewMemoryStore(clk), clk.Advance}
		},
		"redis": func(t *testing.T) storeUnderTest {
			addr, _, _ := startRedis(t)
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { rdb.Close() })
			return storeUnderTest{fleet.NewRedisStore(rdb), time.Sleep}
		},
		// the queue's database, which the runners sharing it use as their
		// fleet store
		"sqlite": func(t *testing.T) storeUnderTest {
			s, err := queue.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "q.db"), "", queue.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return storeUnderTest{s.Fleet(), time.Sleep}
		},
		"postgres": func(t *testing.T) storeUnderTest {
			url, schema, _ := pgtest.Schema(t)
			s, err := queue.Open(context.Background(), url, "", queue.OpenOptions{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return storeUnderTest{s.Fleet(), time.Sleep}
		},
	}
}

// TestStoreConformance holds every Store to the same behaviour.
func TestStoreConformance(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			t.Run("publish reaches every subscriber", func(t *testing.T) {
				s := mk(t).store
				sctx, cancel := context.WithCancel(ctx)
				defer cancel()
				a, readyA := s.Subscribe(sctx)
				b, readyB := s.Subscribe(sctx)
				<-readyA
				<-readyB
				if err := s.Publish(ctx, []byte("full")); err != nil {
					t.Fatal(err)
				}
				for i, ch := range []<-chan []byte{a, b} {
					select {
					case m := <-ch:
						if string(m) != "full" {
							t.Fatalf("subscriber %d got %q", i, m)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("subscriber %d got nothing", i)
					}
				}
			})
			t.Run("turns are spaced by the gap", func(t *testing.T) {
				u := mk(t)
				gap := 300 * time.Millisecond
				if w, err := u.store.Turn(ctx, "m", gap); err != nil || w != 0 {
					t.Fatalf("first turn: wait %v, %v", w, err)
				}
				w, err := u.store.Turn(ctx, "m", gap)
				if err != nil || w <= 0 || w > gap {
					t.Fatalf("second turn at once: wait %v (want within (0, %v]), %v", w, gap, err)
				}
				if w, _ := u.store.Turn(ctx, "other", gap); w != 0 {
					t.Fatalf("another key waited %v", w)
				}
				u.pass(w)
				if w, err := u.store.Turn(ctx, "m", gap); err != nil || w != 0 {
					t.Fatalf("after the wait it said: wait %v, %v", w, err)
				}
			})
			t.Run("leases are limited, ended and expire", func(t *testing.T) {
				u := mk(t)
				ttl := 400 * time.Millisecond
				for i, want := range []bool{true, true, false} {
					if ok, err := u.store.Lease(ctx, "m", fmt.Sprint("p", i), 2, ttl); err != nil || ok != want {
						t.Fatalf("lease %d: %v %v, want %v", i, ok, err, want)
					}
				}
				if ok, _ := u.store.Lease(ctx, "m", "p0", 2, ttl); !ok {
					t.Fatal("a holder could not renew its lease by taking it again")
				}
				if err := u.store.Unlease(ctx, "m", "p1"); err != nil {
					t.Fatal(err)
				}
				if ok, _ := u.store.Lease(ctx, "m", "p2", 2, ttl); !ok {
					t.Fatal("an ended lease was not given to the next")
				}
				u.pass(ttl / 2)
				if err := u.store.Renew(ctx, "m", "p2", ttl); err != nil {
					t.Fatal(err)
				}
				u.pass(ttl/2 + 50*time.Millisecond) // p0 expired, p2 renewed
				if ok, _ := u.store.Lease(ctx, "m", "p3", 2, ttl); !ok {
					t.Fatal("an expired lease still counted")
				}
				if ok, _ := u.store.Lease(ctx, "m", "p4", 2, ttl); ok {
					t.Fatal("a renewed lease expired")
				}
			})
			t.Run("concurrent leases never pass the limit", func(t *testing.T) {
				u := mk(t)
				var got atomic.Int32
				var wg sync.WaitGroup
				for i := range 16 {
					wg.Go(func() {
						if ok, err := u.store.Lease(ctx, "m", fmt.Sprint("c", i), 3, time.Minute); err != nil {
							t.Error(err)
						} else if ok {
							got.Add(1)
						}
					})
				}
				wg.Wait()
				if got.Load() != 3 {
					t.Fatalf("%d of 16 concurrent leases granted with a limit of 3", got.Load())
				}
			})
			t.Run("the token has one holder", func(t *testing.T) {
				u := mk(t)
				lease := 300 * time.Millisecond
				if ok, err := u.store.Take(ctx, "m", "a", lease); err != nil || !ok {
					t.Fatalf("take: %v %v", ok, err)
				}
				if ok, _ := u.store.Take(ctx, "m", "b", lease); ok {
					t.Fatal("a held token was taken")
				}
				u.store.Give(ctx, "m", "b") // not b's to give
				if ok, _ := u.store.Take(ctx, "m", "b", lease); ok {
					t.Fatal("a token was given back by one that did not hold it")
				}
				if err := u.store.Give(ctx, "m", "a"); err != nil {
					t.Fatal(err)
				}
				if ok, _ := u.store.Take(ctx, "m", "b", lease); !ok {
					t.Fatal("a given-back token could not be taken")
				}
				u.pass(lease + 50*time.Millisecond)
				if ok, _ := u.store.Take(ctx, "m", "c", lease); !ok {
					t.Fatal("an expired token could not be taken")
				}
			})
		})
	}
}
