package behaviour_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// failureRows: the fault shapes a user meets, on the default policy
// (retries, breakers, budget and probe schedule as shipped), each through
// every front end on the fake clock.
func failureRows() []row {
	defaults := func(c *config.Config) {
		d := config.Default()
		c.Retry, c.Breaker, c.Timeouts = d.Retry, d.Breaker, d.Timeouts
	}
	return []row{
		{
			name:   "a model down for a minute is back in use within 10s of healing (a request every 4s)",
			cfg:    defaults,
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1, Seconds: 61}},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				healed := w.clk.Now().Add(61 * time.Second)
				var back time.Time
				for i := 0; i < 25 && back.IsZero(); i++ {
					res := do(context.Background(), send, chat("gpt-6-astra", fmt.Sprint("turn ", i), false))
					if res.err != nil || res.resp.StatusCode != 200 {
						t.Fatalf("turn %d: %v %v", i, res.err, res.resp)
					}
					if res.resp.Header.Get("X-Spillway-Model") == "gpt-6-astra" && !w.clk.Now().Before(healed) {
						back = w.clk.Now()
					}
					w.clk.Advance(4 * time.Second)
				}
				if back.IsZero() || back.Sub(healed) > 10*time.Second {
					t.Fatalf("healed at +61s; back in use %v after (zero: never)", back.Sub(healed))
				}
				// while it was down, requests went to the next model and the
				// probes into the full pool were few
				if n := w.sim.Snapshot().Models["gpt-6-astra"].Rejected["capacity"]; n > 61/5+3 {
					t.Fatalf("%d requests hit the full model in its minute down", n)
				}
			},
		},
		{
			name:   "rate limit without Retry-After: two retries, then the next model, within the budget",
			cfg:    defaults,
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "rate_limit", Count: -1, RetryAfter: -1}},
			call:   chat("gpt-6-astra", "hi", false),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:rate_limit > gpt-6-astra:rate_limit > gpt-6-astra:rate_limit > gpt-6.1-sol:ok",
				check: func(t *testing.T, w *world, _ result) {
					if el := w.clk.Now().Sub(t0); el > 45*time.Second {
						t.Fatalf("the request took %v of a 45s budget", el)
					}
				}},
		},
		{
			name:   "every model rate-limited without Retry-After: the 45s budget is never passed",
			cfg:    defaults,
			faults: []sim.Fault{{Model: "*", Kind: "rate_limit", Count: -1, RetryAfter: -1}},
			call:   chat("gpt-6-astra", "hi", false),
			want: want{status: 429, class: classify.RateLimit, body: []string{"rate limited 3 times (retry.rate_limit_retries: 2)"},
				check: func(t *testing.T, w *world, _ result) {
					if el := w.clk.Now().Sub(t0); el > 45*time.Second {
						t.Fatalf("the request took %v of a 45s budget", el)
					}
					if n := len(w.records()); n != 9 {
						t.Fatalf("%d attempts, want three per model", n)
					}
				}},
		},
		{
			name:   "a silent model is left at once and the fallback answers (no headers within timeouts.header)",
			cfg:    defaults,
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "stall", Count: -1}},
			call:   chat("gpt-6-astra", "hi", true),
			tick:   advanceWhenReceived("gpt-6-astra", 30*time.Second),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:timeout > gpt-6.1-sol:ok", text: sim.Answer("gpt-6.1-sol", "hi", 16),
				check: func(t *testing.T, w *world, _ result) {
					if w.received("gpt-6-astra") != 1 {
						t.Fatalf("the silent model was waited on %d times", w.received("gpt-6-astra"))
					}
				}},
		},
		{
			name:   "network: a model whose connections fail while its provider answers others goes to the next model",
			cfg:    defaults,
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "reset", Count: -1}},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				if res := do(context.Background(), send, chat("gpt-6-luna", "first", false)); res.err != nil || res.resp.StatusCode != 200 {
					t.Fatalf("%v %v", res.err, res.resp)
				}
				w.clk.Advance(20 * time.Second)
				res := do(context.Background(), send, chat("gpt-6-astra", "hi", false))
				if res.err != nil || res.resp.StatusCode != 200 ||
					res.resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network > gpt-6.1-sol:ok" {
					t.Fatalf("%v %v", res.err, res.resp)
				}
			},
		},
		{
			name:   "network: a provider that answers nothing is down: the next request fails at once as network, never capacity",
			cfg:    defaults,
			faults: []sim.Fault{{Model: "*", Kind: "reset", Count: -1}},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				res := do(context.Background(), send, chat("gpt-6-astra", "hi", false))
				if res.err != nil || res.resp.StatusCode != 502 || classify.HTTP(502, nil, res.body).Class != classify.Network ||
					res.resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network" {
					t.Fatalf("%v %v %s", res.err, res.resp, res.body)
				}
				before := w.clk.Now()
				res = do(context.Background(), send, chat("gpt-6.1-sol", "hi", false))
				if res.err != nil || res.resp.StatusCode != 502 || res.resp.Header.Get("X-Spillway-Route") != "gpt-6.1-sol:network" ||
					res.resp.Header.Get("X-Spillway-Attempts") != "0" || !w.clk.Now().Equal(before) || !strings.Contains(string(res.body), "openai is unreachable") {
					t.Fatalf("%v %v %s", res.err, res.resp, res.body)
				}
				if w.received("gpt-6.1-sol") != 0 || len(w.records()) != 4 {
					t.Fatalf("a refused request reached the upstream or the log: %d, %d records", w.received("gpt-6.1-sol"), len(w.records()))
				}
				// the network comes back: after the hold one probe goes, and
				// gets through
				w.sim.ClearFaults("")
				w.clk.Advance(w.cfg.Breaker.Cooldown.D())
				if res := do(context.Background(), send, chat("gpt-6.1-sol", "hi", false)); res.err != nil || res.resp.StatusCode != 200 {
					t.Fatalf("after the hold: %v %v", res.err, res.resp)
				}
			},
		},
		{
			name: "pacing under pressure: healthy requests wait 0ms; a capacity answer spaces the next starts",
			cfg: func(c *config.Config) {
				c.Pacing = config.Default().Pacing
				c.Pacing.When = config.PacePressure
			},
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				for i := range 10 {
					if res := do(context.Background(), send, chat("gpt-6-luna", fmt.Sprint(i), false)); res.err != nil || res.resp.StatusCode != 200 {
						t.Fatalf("%v %v", res.err, res.resp)
					}
				}
				for _, r := range w.records() {
					if r.WaitMS != 0 {
						t.Fatalf("a healthy request waited %dms", r.WaitMS)
					}
				}
				if !w.clk.Now().Equal(t0) {
					t.Fatalf("ten healthy requests moved the clock %v", w.clk.Now().Sub(t0))
				}
				if err := w.sim.AddFault(sim.Fault{Model: "gpt-6-luna", Kind: "capacity", Count: 1}); err != nil {
					t.Fatal(err)
				}
				do(context.Background(), send, chat("gpt-6-luna", "full", false))
				do(context.Background(), send, chat("gpt-6-luna", "after", false))
				recs := w.records()
				if last := recs[len(recs)-1]; last.WaitMS < 500 {
					t.Fatalf("under pressure the next start waited %dms, want at least min_gap", last.WaitMS)
				}
			},
		},
		{
			name: "a request cancelled while it waits for a pacing slot is not an attempt",
			cfg: func(c *config.Config) {
				c.Pacing = config.Pacing{MaxConcurrency: 1, When: config.PaceAlways}
				c.Retry.Budget = config.Duration(time.Hour)
			},
			upstream: holdsAStream,
			run: func(t *testing.T, w *world, send func(context.Context, call) (*http.Response, error)) {
				open(t, send, responses("gpt-6-luna", "hold", true)) // holds luna's only slot
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					// the first stream's idle watchdog and the second's slot wait
					if w.clk.BlockUntil(ctx, 2) == nil {
						cancel()
					}
				}()
				res := do(ctx, send, chat("gpt-6-luna", "wait", false).With("X-Spillway-No-Fallback", "1"))
				if res.err == nil && res.resp.StatusCode == 200 {
					t.Fatalf("the cancelled request was answered")
				}
				// the gateway is done with it once only the held stream is left
				wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer wcancel()
				if err := w.servingAtMost(wctx, 1); err != nil {
					t.Fatal("the gateway never finished with the cancelled request")
				}
				if n := len(w.records()); n != 0 {
					t.Fatalf("%d records for a request that never left the pacer: %+v", n, w.records())
				}
			},
		},
		{
			name:   "a broken stream's record counts the output the client received",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &five}},
			call:   responses("gpt-6-luna", "hi", true),
			want: want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:network",
				check: func(t *testing.T, w *world, _ result) {
					if recs := w.records(); len(recs) != 1 || recs[0].OutputTokens != 5 {
						t.Fatalf("records %+v, want 5 output tokens", recs)
					}
				}},
		},
		{
			name: "catalog: none: a model the file does not name is refused before anything is sent",
			cfg: func(c *config.Config) {
				c.Catalog = config.CatalogNone
			},
			call: chat("gpt-6-astar", "hi", false),
			want: want{status: 404, class: classify.ModelNotFound, body: []string{`model \"gpt-6-astar\" is not in the configuration`, "passthrough_unknown: true"},
				check: func(t *testing.T, w *world, _ result) {
					if len(w.records()) != 0 {
						t.Fatal("an unknown model reached the upstream")
					}
				}},
		},
	}
}

var five = 5
