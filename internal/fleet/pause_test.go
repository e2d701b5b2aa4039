package fleet_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/redistest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/sim"
)

// callTimeout is the store's call timeout on the request path (the
// engine's and the node's: 50 ms).
const callTimeout = 50 * time.Millisecond

// answered is one request of the load, as its client saw it.
type answered struct {
	phase  string
	status int
	route  string
}

// load sends gpt-6-astra requests to each gateway, one at a time per
// gateway, until stopped, and records each answer with the phase it was
// sent in.
type load struct {
	mu    sync.Mutex
	phase string
	got   []answered
	count map[string]int // answers per phase
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

func startLoad(t *testing.T, gws []gw) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{phase: "before", count: map[string]int{}, stop: cancel}
	for _, g := range gws {
		l.wg.Go(func() {
			for ctx.Err() == nil {
				l.mu.Lock()
				phase := l.phase
				l.mu.Unlock()
				rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
				req, _ := behaviour.Chat("gpt-6-astra", "hi", false).Request(rctx, g.url)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					rcancel()
					t.Errorf("%s: %v", phase, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				rcancel()
				l.mu.Lock()
				if l.phase != phase { // sent in one phase, answered in the next: neither's
					phase = "between"
				}
				l.got = append(l.got, answered{phase, resp.StatusCode, resp.Header.Get("X-Spillway-Route")})
				l.count[phase]++
				l.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() { cancel(); l.wg.Wait() })
	return l
}

// next moves the load to phase.
func (l *load) next(phase string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = phase
}

// answers is how many requests sent in phase were answered.
func (l *load) answers(phase string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[phase]
}

func (l *load) end() []answered {
	l.stop()
	l.wg.Wait()
	return l.got
}

var waitedMS = regexp.MustCompile(`msg=request .*waited_ms=(\d+)`)

// A fleet of three gateways on one Redis, with gpt-6-astra under pressure
// (one slot fleet-wide) and gpt-6.1-sol next in its chain. Requests flow
// while another process holds astra's slot, while Redis is paused
// (SIGSTOP) for longer than the store's call timeout, and after it
// resumes: no request waits longer than the call timeout for a slot (the
// wait each request records), a request astra cannot take is answered by
// sol, and after the pause astra answers again: no lease asked for during
// the pause outlives it.
func TestFleetPausedRedis(t *testing.T) {
	rs := redistest.Run(t)
	srv, simURL := simtest.Start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pressured := func(c *config.Config) {
		c.Pacing = config.Pacing{MaxConcurrency: 1, When: config.PacePressure, Relax: config.Duration(time.Hour)}
		c.Breaker.Failures = 100 // astra's capacity answers press its pace, and never open its breaker
	}
	var gws []gw
	for _, id := range []string{"gw-a", "gw-b", "gw-c"} {
		gws = append(gws, newGateway(t, ctx, simURL, rs.Addr, id, pressured))
	}
	// each gateway meets astra full once: its lane is paced from then on
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 3})
	for _, g := range gws {
		if resp := ask(t, g.url, "gpt-6-astra"); resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:capacity > gpt-6.1-sol:ok" {
			t.Fatalf("pressing astra: %d %q", resp.StatusCode, resp.Header.Get("X-Spillway-Route"))
		}
	}
	l := startLoad(t, gws)
	eventually(t, "requests flow", func() bool { return l.answers("before") >= 9 })

	// another process holds astra's one slot: every request goes to sol
	// after at most the call timeout
	holder, holderNode := holdSlot(t, ctx, rs.Addr, "openai/gpt-6-astra")
	l.next("held")
	eventually(t, "requests flow while astra's slot is held", func() bool { return l.answers("held") >= 9 })
	l.next("released")
	holder()
	eventually(t, "requests flow after the holder let go", func() bool { return l.answers("released") >= 9 })

	// Redis paused for longer than the call timeout: every gateway notices,
	// and requests go on
	failedBefore := 0 // store calls that failed before the pause (a loaded machine): then the process paced on its own
	for _, g := range gws {
		failedBefore += strings.Count(g.logs(), "is unreachable")
	}
	l.next("paused")
	rs.Pause()
	eventually(t, "every gateway degraded while requests flow", func() bool {
		return l.answers("paused") >= 9 && gws[0].node.Degraded() && gws[1].node.Degraded() && gws[2].node.Degraded()
	})
	rs.Resume()
	eventually(t, "every gateway shares again", func() bool {
		return !gws[0].node.Degraded() && !gws[1].node.Degraded() && !gws[2].node.Degraded()
	})
	l.next("after")
	eventually(t, "requests flow after the pause", func() bool { return l.answers("after") >= 30 })
	got := l.end()

	byPhase := map[string]map[string]int{} // phase → route → count
	for _, a := range got {
		if a.status != 200 {
			t.Errorf("%s: a request answered %d (%s)", a.phase, a.status, a.route)
		}
		if byPhase[a.phase] == nil {
			byPhase[a.phase] = map[string]int{}
		}
		byPhase[a.phase][a.route]++
	}
	t.Logf("routes by phase: %v", byPhase)

	for route, n := range byPhase["held"] {
		if route != "gpt-6-astra:no_slot > gpt-6.1-sol:ok" && (route != "gpt-6-astra:ok" || failedBefore == 0) {
			t.Errorf("while astra's slot was held, %d requests went %s", n, route)
		}
	}
	if byPhase["held"]["gpt-6-astra:no_slot > gpt-6.1-sol:ok"] == 0 {
		t.Errorf("while astra's slot was held, no request went on to sol: %v", byPhase["held"])
	}
	if byPhase["after"]["gpt-6-astra:ok"] == 0 {
		t.Errorf("after the pause astra answered nothing: a lease asked for during the pause holds its slot: %v", byPhase["after"])
	}
	for _, g := range gws {
		for _, m := range waitedMS.FindAllStringSubmatch(g.logs(), -1) {
			if ms, _ := strconv.Atoi(m[1]); time.Duration(ms)*time.Millisecond > callTimeout {
				t.Errorf("a request waited %d ms for a slot, more than the store's call timeout (%v)", ms, callTimeout)
			}
		}
	}
	// once every gateway has let go of what it held, Redis holds no lease
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	eventually(t, "every process let go of its slots", func() bool {
		for _, n := range []*fleet.Node{gws[0].node, gws[1].node, gws[2].node, holderNode} {
			if st := n.Status(); st["slots_held"] != 0 || st["slots_releasing"] != 0 {
				return false
			}
		}
		return true
	})
	if left := rdb.ZRangeWithScores(ctx, "spillway:slots:openai/gpt-6-astra", 0, -1).Val(); len(left) != 0 {
		t.Fatalf("leases no gateway holds: %v", left)
	}
}

// holdSlot takes lane's one slot as another process of the fleet would,
// until the returned release.
func holdSlot(t *testing.T, ctx context.Context, addr, lane string) (release func(), node *fleet.Node) {
	t.Helper()
	rdb, err := fleet.Dial("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	node = fleet.NewNode(ctx, fleet.NewRedisStore(rdb), "holder", policy.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var free func()
	eventually(t, "the holder takes the slot", func() bool {
		f, ok, _ := node.Slot(ctx, lane, 1)
		free = f
		return ok
	})
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			free()
		}
	}, node
}
