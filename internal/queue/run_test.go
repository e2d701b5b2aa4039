package queue

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/sim"
)

// The queue's tests run on real time: River's own loops (the 5 s
// scheduler that makes snoozed tasks available, the rescuer, fetch polling)
// read the wall clock, and the tasks' waits are River snoozes. The rig keeps
// every wait short (ladders of a few hundred ms, 60–120 ms gaps).
type runRig struct {
	sim   *sim.Server
	cfg   *config.Config
	mu    sync.Mutex
	lines []string
	recs  []events.Record
}

func newRunRig(t *testing.T, scenario string) *runRig {
	scn, _ := sim.Builtin(scenario)
	start, _ := time.Parse(time.RFC3339, "2026-11-25T11:00:00Z")
	clock, _ := sim.ParseClock("fast:60", start)
	srv, err := sim.New(sim.Options{Scenario: scn, Seed: 3, Clock: clock, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	cfg := config.Default()
	for name, suffix := range map[string]string{"openai": "/v1", "anthropic": ""} {
		p := cfg.Providers[name]
		p.BaseURL, p.Auth, p.APIKey = hs.URL+suffix, "key", config.Secret{Ref: "env:X", Value: "sk-queue-test"}
		cfg.Providers[name] = p
	}
	cfg.Pacing = config.Pacing{MaxConcurrency: 8}
	cfg.Retry.BackoffBase = config.Duration(20 * time.Millisecond)
	cfg.Retry.BackoffMax = config.Duration(100 * time.Millisecond)
	cfg.Retry.Budget = config.Duration(2 * time.Second)
	cfg.Retry.NetworkGap = config.Duration(20 * time.Millisecond)
	cfg.Breaker = config.Breaker{Failures: 5, Window: config.Duration(10 * time.Second), Cooldown: config.Duration(300 * time.Millisecond)}
	cfg.Queue.GapMin, cfg.Queue.GapMax = config.Duration(60*time.Millisecond), config.Duration(120*time.Millisecond)
	return &runRig{sim: srv, cfg: cfg}
}

// opts runs the queue with its own engine, made from the rig's
// configuration as it is when the run starts.
func (r *runRig) opts(conc int) RunOptions {
	return RunOptions{Config: r.cfg, Concurrency: conc,
		Ladder: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, UntilEmpty: true,
		Events: events.SinkFunc(func(rec events.Record) {
			r.mu.Lock()
			r.recs = append(r.recs, rec)
			r.mu.Unlock()
		}),
		Log: func(f string, a ...any) {
			r.mu.Lock()
			r.lines = append(r.lines, fmt.Sprintf(f, a...))
			r.mu.Unlock()
		}}
}

func TestRunThirtyTasksAtPeak(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "peak")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var ids []int64
			for i := 0; i < 30; i++ {
				id, err := s.Add(ctx, Task{Name: fmt.Sprintf("t%02d", i), Chain: "codex", MinTier: "medium",
					Steps: []Step{{Name: "ask", Model: "gpt-6-astra", Prompt: fmt.Sprintf("task %d", i)}}}, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if err := s.Run(ctx, r.opts(2)); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				in, _ := s.Get(context.Background(), id)
				out, ok, _ := s.Result(context.Background(), id)
				if in.Status != "succeeded" || !ok || out == "" {
					t.Fatalf("task %d: %+v result %q", id, in, out)
				}
				if in.Attempt != 1 {
					t.Fatalf("task %d used %d attempts: capacity waits must snooze without using one", id, in.Attempt)
				}
				if in.FinishedAt.IsZero() || in.FinishedAt.After(time.Now()) {
					t.Fatalf("task %d: finished at %v", id, in.FinishedAt)
				}
			}
			st := r.sim.Snapshot()
			for m, ms := range st.Models {
				if ms.PeakConcurrency > 2 {
					t.Errorf("%s saw %d requests at once; the queue runs 2", m, ms.PeakConcurrency)
				}
				if m == "gpt-6-luna" && ms.Received > 0 {
					t.Errorf("a task with min tier medium reached %s", m)
				}
			}
			// attempts to each model start at least gap_min apart (the
			// driver's pacer, on the queue's gaps)
			r.mu.Lock()
			defer r.mu.Unlock()
			starts := map[string][]time.Time{}
			for _, rec := range r.recs {
				if rec.Source != events.SourceQueue {
					t.Fatalf("record from %q", rec.Source)
				}
				starts[rec.Model] = append(starts[rec.Model], rec.TS)
			}
			for m, ts := range starts {
				slices.SortFunc(ts, time.Time.Compare)
				for i := 1; i < len(ts); i++ {
					if gap := ts[i].Sub(ts[i-1]); gap < 60*time.Millisecond {
						t.Fatalf("attempts to %s started %v apart (gap_min 60ms)", m, gap)
					}
				}
			}
		})
	}
}

func TestMultiStepResumesAtTheFailedStep(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// the second step's model drops the connection through all of
			// the first attempt's network retries: a transient failure, so
			// the task is retried, from that step
			r.sim.AddFault(sim.Fault{Model: "claude-sonnet-5-5", Kind: "reset", Count: 4})
			id, err := s.Add(ctx, Task{Name: "two", Steps: []Step{
				{Name: "outline", Model: "gpt-6.1-sol", Prompt: "outline"},
				{Name: "draft", Model: "claude-sonnet-5-5", Prompt: "draft from {{prev}}"},
			}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Run(ctx, r.opts(1)); err != nil {
				t.Fatal(err)
			}
			in, _ := s.Get(ctx, id)
			out, _, _ := s.Result(ctx, id)
			if in.Status != "succeeded" || in.Attempt != 2 {
				t.Fatalf("%+v", in)
			}
			st := r.sim.Snapshot().Models
			if st["gpt-6.1-sol"].Received != 1 || st["claude-sonnet-5-5"].Received != 5 {
				t.Fatalf("step 1 ran %d times, step 2 %d", st["gpt-6.1-sol"].Received, st["claude-sonnet-5-5"].Received)
			}
			if want := sim.Answer("claude-sonnet-5-5", "draft from "+sim.Answer("gpt-6.1-sol", "outline", 16), 16); out != want {
				t.Fatalf("result %q, want %q", out, want)
			}
		})
	}
}

func TestPrioritiesAndWindows(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// the queue's own decisions run on its clock: a fake one, at
			// 09:15 local time, and a window from 11:00 to 12:00
			clk := policytest.New(time.Date(2026, 11, 30, 9, 15, 0, 0, time.Local))
			now := clk.Now()
			held, _ := s.Add(ctx, Task{Name: "held", Window: "11:00-12:00", Steps: []Step{{Model: "gpt-6-luna", Prompt: "later"}}}, now)
			for _, p := range []int{4, 1, 3, 2} {
				s.Add(ctx, Task{Name: "p" + strconv.Itoa(p), Priority: p, Steps: []Step{{Model: "gpt-6-luna", Prompt: "p"}}}, now)
			}
			o := r.opts(1)
			o.Clock = clk
			var next time.Time
			o.OnTask = func(ev TaskEvent) {
				if ev.ID == held && ev.Status == "scheduled" {
					next = ev.Next
				}
			}
			if err := s.Run(ctx, o); err != nil {
				t.Fatal(err)
			}
			if want := time.Date(2026, 11, 30, 11, 0, 0, 0, time.Local); !next.Equal(want) {
				t.Fatalf("the held task waits until %v, want its window's start on the queue's clock, %v", next, want)
			}
			var order []string
			for _, l := range r.lines {
				if m := regexp.MustCompile(`\((p\d)\): step`).FindStringSubmatch(l); m != nil {
					order = append(order, m[1])
				}
			}
			if fmt.Sprint(order) != "[p1 p2 p3 p4]" {
				t.Fatalf("ran in order %v", order)
			}
			if in, _ := s.Get(ctx, held); in.Status != "scheduled" {
				t.Fatalf("the task outside its window: %+v", in)
			}
		})
	}
}

// While the chain's top model is open in the breaker, every task starts one
// tier down together: the full model is not asked again until the cooldown.
func TestOpenBreakerMovesTheQueueDownATier(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			r.cfg.Breaker = config.Breaker{Failures: 2, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute)}
			r.sim.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for i := 0; i < 10; i++ {
				s.Add(ctx, Task{Name: fmt.Sprint(i), Steps: []Step{{Model: "gpt-6-astra", Prompt: fmt.Sprint("t", i)}}}, time.Now())
			}
			if err := s.Run(ctx, r.opts(2)); err != nil {
				t.Fatal(err)
			}
			st := r.sim.Snapshot().Models
			if st["gpt-6-astra"].Received != 2 || st["gpt-6.1-sol"].Served != 10 {
				t.Fatalf("heavy asked %d times (breaker opens after 2), medium served %d of 10", st["gpt-6-astra"].Received, st["gpt-6.1-sol"].Served)
			}
		})
	}
}

// A task waiting for capacity on a rung of a minute comes back as soon as
// room is known to be back: when another task's answer shows its model has
// room, or when its model's breaker lets a probe through.
func TestWaitingTasksComeBackWhenRoomReturns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		breaker config.Breaker
		other   bool   // another task, answered by the same model, wakes the first
		logged  string // a regexp
	}{
		{"woken by another task's answer", config.Breaker{Failures: 1000, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute)}, true, `has room again; woken`},
		{"back at the breaker's probe", config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(400 * time.Millisecond), MaxCooldown: config.Duration(400 * time.Millisecond)}, false, `every model at capacity; waiting for capacity \(next check \d\d:\d\d:\d\d, in \d+(\.\d+)?ms; no attempt used\)`},
	}
	for name, open := range stores(t) {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				s := open(t)
				r := newRunRig(t, "calm")
				r.cfg.Breaker = c.breaker
				r.cfg.Retry.Budget = config.Duration(300 * time.Millisecond)
				r.sim.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				heavy := func(name string) int64 {
					id, err := s.Add(ctx, Task{Name: name, MinTier: "heavy", Steps: []Step{{Model: "gpt-6-astra", Prompt: name}}}, time.Now())
					if err != nil {
						t.Fatal(err)
					}
					return id
				}
				first := heavy("first")
				o := r.opts(2)
				o.Ladder, o.UntilEmpty = []time.Duration{time.Minute}, false
				done := make(chan error, 1)
				go func() { done <- s.Run(ctx, o) }()
				// waitStatus fails the test unless the task reaches want
				// within the given time (polling: River works on real time)
				waitStatus := func(id int64, want string, within time.Duration) Info {
					t.Helper()
					t0 := time.Now()
					for time.Since(t0) < within {
						if in, _ := s.Get(ctx, id); in.Status == want {
							return in
						}
						time.Sleep(20 * time.Millisecond)
					}
					in, _ := s.Get(ctx, id)
					t.Fatalf("task %d is %q after %v, want %q; log: %q", id, in.Status, within, want, r.log())
					return in
				}
				waitStatus(first, "waiting for capacity", 15*time.Second)
				r.sim.ClearFaults("")
				if c.other {
					heavy("second")
				}
				// far sooner than the minute's rung (waitStatus fails the
				// test after 20 s), woken, not retried: the wait for
				// capacity used no attempt
				if in := waitStatus(first, "succeeded", 20*time.Second); in.Attempt != 1 {
					t.Fatalf("the woken task used %d attempts, want 1: %+v", in.Attempt, in)
				}
				if log := r.log(); !regexp.MustCompile(c.logged).MatchString(log) {
					t.Fatalf("log lacks %q: %s", c.logged, log)
				}
				cancel()
				<-done
			})
		}
	}
}

func (r *runRig) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.lines)
}

// A task that fails with a class no retry can fix ends at once, after
// exactly one upstream attempt, with that class: no River retry, on either
// database.
// askOnce adds one prompt task for gpt-6-astra, runs the queue until it is
// empty and returns the task.
func (r *runRig) askOnce(t *testing.T, s *Store) Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := s.Add(ctx, Task{Name: "once", Steps: []Step{{Name: "ask", Model: "gpt-6-astra", Prompt: "hi"}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx, r.opts(1)); err != nil {
		t.Fatal(err)
	}
	in, _ := s.Get(ctx, id)
	return in
}

func TestFailFastClassesEndATaskAtOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		class classify.Class
		fault string // a simulator fault, or
		body  string // an upstream's 400 answer
	}{
		{classify.Auth, "auth", ""},
		{classify.Quota, "quota", ""},
		{classify.BadRequest, "", `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`},
		{classify.ContentFilter, "", `{"error":{"message":"Rejected by our safety system.","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`},
	}
	for name, open := range stores(t) {
		for _, c := range cases {
			t.Run(name+"/"+string(c.class), func(t *testing.T) {
				t.Parallel()
				s := open(t)
				r := newRunRig(t, "calm")
				var hits atomic.Int32
				if c.fault != "" {
					r.sim.AddFault(sim.Fault{Model: "*", Kind: c.fault, Count: -1})
				} else {
					up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
						hits.Add(1)
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(400)
						io.WriteString(w, c.body)
					}))
					t.Cleanup(up.Close)
					p := r.cfg.Providers["openai"]
					p.BaseURL = up.URL + "/v1"
					r.cfg.Providers["openai"] = p
				}
				in := r.askOnce(t, s)
				if in.Status != "failed" || in.Class != string(c.class) || in.Attempt != 1 || len(in.Errors) != 1 || !strings.Contains(in.Errors[0], "step ask: spillway: "+string(c.class)) {
					t.Fatalf("%+v", in)
				}
				sent := int(hits.Load())
				if c.fault != "" {
					sent = r.sim.Snapshot().Models["gpt-6-astra"].Received
				}
				r.mu.Lock()
				defer r.mu.Unlock()
				if sent != 1 || len(r.recs) != 1 || r.recs[0].Class != string(c.class) {
					t.Fatalf("%d upstream attempts, records %+v", sent, r.recs)
				}
			})
		}
	}
}

// A prompt whose provider has no key in the runner's environment is not
// sent (it could only come back as auth): the task fails at once, saying
// which variable to set.
func TestAPromptWithNoKeyFailsNamingIt(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			p := r.cfg.Providers["openai"]
			p.Auth, p.APIKey = "passthrough", config.Secret{Ref: "env:OPENAI_API_KEY"}
			r.cfg.Providers["openai"] = p
			in := r.askOnce(t, s)
			if in.Status != "failed" || in.Class != "auth" || in.Attempt != 1 || len(in.Errors) != 1 || !strings.Contains(in.Errors[0], "gpt-6-astra's provider openai has no key: OPENAI_API_KEY is not set") {
				t.Fatalf("%+v", in)
			}
			if m := r.sim.Snapshot().Models["gpt-6-astra"]; m != nil && m.Received != 0 {
				t.Fatalf("the simulator received %d requests", m.Received)
			}
		})
	}
}

// An answer spillway cannot classify (unknown) may be a glitch: the task is
// retried by River, not ended at once.
func TestUnknownFailuresAreRetried(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			var hits atomic.Int32
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				hits.Add(1)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					io.WriteString(conn, "SPDY/9 what is this\r\n\r\n") // not HTTP: a malformed response
					conn.Close()
				}
			}))
			t.Cleanup(up.Close)
			p := r.cfg.Providers["openai"]
			p.BaseURL = up.URL + "/v1"
			r.cfg.Providers["openai"] = p
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			id, err := s.Add(ctx, Task{Name: "glitch", MaxAttempts: 2, Steps: []Step{{Name: "ask", Model: "gpt-6-luna", Prompt: "hi"}}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Run(ctx, r.opts(1)); err != nil {
				t.Fatal(err)
			}
			in, _ := s.Get(ctx, id)
			if in.Status != "failed" || in.Attempt != 2 || in.Class != "" || hits.Load() != 2 {
				t.Fatalf("%+v after %d upstream attempts", in, hits.Load())
			}
		})
	}
}

// A task that meets its plan's usage limit parks until the reset, no
// attempt used, and finishes after it; a deadline before the reset cancels
// it at once, saying why.
func TestUsageLimitParksToItsReset(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		for _, late := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deadline before the reset=%v", name, late), func(t *testing.T) {
				t.Parallel()
				s := open(t)
				r := newRunRig(t, "calm")
				// a simulator on the wall clock: its reset times are the queue's
				srv, err := sim.New(sim.Options{Seed: 3, TokenRate: 0})
				if err != nil {
					t.Fatal(err)
				}
				hs := httptest.NewServer(srv.Handler())
				t.Cleanup(func() { srv.Close(); hs.Close() })
				p := r.cfg.Providers["openai"]
				p.BaseURL = hs.URL + "/v1"
				r.cfg.Providers["openai"] = p
				resets := 2.5
				task := Task{Name: "limited", MinTier: "heavy", Steps: []Step{{Name: "ask", Model: "gpt-6-astra", Prompt: "hi"}}}
				if late {
					resets, task.Deadline = 3600, time.Now().Add(30*time.Second)
				}
				srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "usage_limit", Count: 1, ResetsIn: resets})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				id, err := s.Add(ctx, task, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				t0 := time.Now()
				if err := s.Run(ctx, r.opts(1)); err != nil {
					t.Fatal(err)
				}
				in, _ := s.Get(ctx, id)
				if late {
					if in.Status != "cancelled" || !strings.Contains(strings.Join(in.Errors, " "), "after the task's deadline") {
						t.Fatalf("the task due before the reset: %+v", in)
					}
					return
				}
				if in.Status != "succeeded" || in.Attempt != 1 {
					t.Fatalf("the limited task: %+v; log %s", in, r.log())
				}
				if !strings.Contains(r.log(), "met its plan's usage limit; parked until the usage limit resets at ") {
					t.Fatalf("log %s", r.log())
				}
				// the answer came after the reset (its second, as resets_at says it)
				st := srv.Snapshot().Models["gpt-6-astra"]
				if st.Rejected["usage_limit"] != 1 || st.Served != 1 || len(st.Starts) != 1 || st.Starts[0] < t0.Add(time.Second).UnixMilli() {
					t.Fatalf("the model's stats %+v (run from %d): want the limited answer, then one after the reset", st, t0.UnixMilli())
				}
			})
		}
	}
}
