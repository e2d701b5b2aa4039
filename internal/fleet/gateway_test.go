package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/redistest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/sim"
)

// startRedis runs a redis-server of the test's own (redistest.Start).
func startRedis(t *testing.T) (addr string, stop, start func()) { return redistest.Start(t) }

// gw is one gateway of the fleet.
type gw struct {
	url  string
	node *fleet.Node
	eng  *policy.Engine
	logs func() string // what the gateway logged so far
}

func newGateway(t *testing.T, ctx context.Context, simURL, redisAddr, id string, mut func(*config.Config)) gw {
	t.Helper()
	cfg := simtest.Config(simURL)
	cfg.Breaker = config.Breaker{Failures: 2, Window: config.Duration(time.Minute), Cooldown: config.Duration(10 * time.Minute), MaxCooldown: config.Duration(10 * time.Minute)}
	if mut != nil {
		mut(cfg)
	}
	rdb, err := fleet.Dial("redis://" + redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }), nil))
	node := fleet.NewNode(ctx, fleet.NewRedisStore(rdb), id, policy.RealClock{}, log)
	eng := policy.New(cfg, policy.WithFleet(node))
	g, err := gateway.New(gateway.Options{Config: cfg, Engine: eng, Logger: log, Fleet: node})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(g.Handler())
	t.Cleanup(hs.Close)
	return gw{url: hs.URL, node: node, eng: eng, logs: func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func ask(t *testing.T, url, model string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := behaviour.Chat(model, "hi", false).Request(ctx, url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func until(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		runtime.Gosched()
	}
}

// Two gateways share a Redis: capacity answers through gateway A open the
// breaker in B too, and B then skips the model without trying it. With
// Redis stopped both keep serving on their own evidence, with no failed
// request.
func TestFleetBreakers(t *testing.T) {
	addr, stopRedis, startRedis := startRedis(t)
	srv, simURL := simtest.Start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newGateway(t, ctx, simURL, addr, "gw-a", nil)
	b := newGateway(t, ctx, simURL, addr, "gw-b", nil)
	// let both subscriptions settle: a message published before B
	// subscribed would be lost
	subscribed := func() {
		until(t, "both subscribed", func() bool {
			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			n, _ := c.PubSubNumSub(ctx, fleet.Channel).Result()
			return n[fleet.Channel] >= 2
		})
	}
	subscribed()
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 2})
	for i := 0; i < 2; i++ {
		if resp := ask(t, a.url, "gpt-6-astra"); resp.StatusCode != 200 {
			t.Fatalf("A: %d", resp.StatusCode)
		}
	}
	key := "openai/gpt-6-astra"
	until(t, "B's breaker opens from A's evidence", func() bool { return b.eng.BreakerStates()[key] == "open" })
	before := srv.Snapshot().Models["gpt-6-astra"].Received
	resp := ask(t, b.url, "gpt-6-astra")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("X-Spillway-Route"), "gpt-6-astra:breaker_open") {
		t.Fatalf("B: %d, route %q: want astra skipped", resp.StatusCode, resp.Header.Get("X-Spillway-Route"))
	}
	if after := srv.Snapshot().Models["gpt-6-astra"].Received; after != before {
		t.Fatalf("B sent astra %d requests while its breaker was open", after-before)
	}
	if b.node.Received() < 2 {
		t.Fatalf("B received %d pieces of evidence", b.node.Received())
	}
	// B's status page says which instance saw what
	var st struct {
		Fleet struct {
			Instance string                           `json:"instance"`
			Seen     map[string]map[string]fleet.Seen `json:"seen"`
		} `json:"fleet"`
	}
	getJSON(t, b.url+"/spillway/status", &st)
	if seen := st.Fleet.Seen[key]["gw-a"]; st.Fleet.Instance != "gw-b" || seen.Count != 2 || seen.Class != "capacity" {
		t.Fatalf("B's status: %+v", st.Fleet)
	}
	// Redis stops: both go on serving, with no failed request
	stopRedis()
	srv.AddFault(sim.Fault{Model: "gpt-6.1-sol", Kind: "capacity", Count: 2})
	for _, g := range []gw{a, b, a, b} {
		if resp := ask(t, g.url, "gpt-6.1-sol"); resp.StatusCode != 200 {
			t.Fatalf("with Redis down: %d", resp.StatusCode)
		}
	}
	until(t, "the degradation is noticed", func() bool { return a.node.Degraded() || b.node.Degraded() })
	degraded := a
	if !a.node.Degraded() {
		degraded = b
	}
	if m := getText(t, degraded.url+"/metrics"); !strings.Contains(m, "spillway_fleet_degraded 1") {
		t.Fatalf("/metrics does not show the degradation:\n%s", m)
	}
	// Redis is back: the gateways resubscribe, and sharing resumes
	startRedis()
	subscribed()
	srv.AddFault(sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: 2})
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req, _ := behaviour.Messages("claude-opus-5-5", "hi", false).Request(ctx, a.url)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
			t.Fatalf("A, opus: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		cancel()
	}
	until(t, "A's evidence reaches B again", func() bool { return b.eng.BreakerStates()["anthropic/claude-opus-5-5"] == "open" })
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(getText(t, url)), v); err != nil {
		t.Fatal(err)
	}
}

func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Two paced gateways on one Redis keep one pace together: the starts the
// simulator admits to a model, from both, are pacing.min_gap apart at
// least (less a little for the loopback's delivery); with Redis stopped
// each paces on its own and every request still succeeds.
func TestFleetPaceAcrossGateways(t *testing.T) {
	addr, stopRedis, _ := startRedis(t)
	srv, simURL := simtest.Start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gap := 150 * time.Millisecond
	paced := func(c *config.Config) {
		c.Pacing = config.Pacing{MinGap: config.Duration(gap), Jitter: config.Duration(50 * time.Millisecond), MaxConcurrency: 2, When: config.PaceAlways}
	}
	gws := []gw{newGateway(t, ctx, simURL, addr, "gw-a", paced), newGateway(t, ctx, simURL, addr, "gw-b", paced)}
	burst := func(n int) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if resp := ask(t, gws[i%2].url, "gpt-6-luna"); resp.StatusCode != 200 {
					t.Errorf("request %d: %d", i, resp.StatusCode)
				}
			})
		}
		wg.Wait()
	}
	burst(10)
	starts := srv.Snapshot().Models["gpt-6-luna"].Starts
	if len(starts) != 10 {
		t.Fatalf("%d starts, want 10", len(starts))
	}
	// The pacer grants a start every gap across the fleet; the simulator
	// sees each request a little later, by as much as a loaded machine
	// delays it, so one interval can look short (and the next long). Paced
	// per gateway only, the ten would span about 4 gaps (five each, side by
	// side); paced across the fleet, 9. So the span must pass 8 gaps, and
	// most intervals a gap.
	slices.Sort(starts)
	gaps := make([]time.Duration, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, time.Duration(starts[i]-starts[i-1])*time.Millisecond)
	}
	if span := time.Duration(starts[len(starts)-1]-starts[0]) * time.Millisecond; span < 8*gap {
		t.Fatalf("ten starts across the fleet span %v, want at least %v (paced %v apart fleet-wide): %v", span, 8*gap, gap, starts)
	}
	slices.Sort(gaps)
	if median := gaps[len(gaps)/2]; median < gap-20*time.Millisecond {
		t.Fatalf("the starts are a median %v apart across the fleet, want about %v at least: %v", median, gap, starts)
	}
	stopRedis()
	burst(4)
	if n := len(srv.Snapshot().Models["gpt-6-luna"].Starts); n != 14 {
		t.Fatalf("%d starts after Redis stopped, want 14", n)
	}
}
