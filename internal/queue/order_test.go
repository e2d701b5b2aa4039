package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/pgtest"
	"github.com/spillway/spillway/policy"
)

// heldUpstream is an upstream whose every request waits, announced on
// arrivals with its prompt, until the test releases it (or its caller
// goes): the test decides when each task's step ends.
type heldUpstream struct {
	arrivals chan arrival
}

type arrival struct {
	prompt  string
	release chan struct{}
}

func newHeldUpstream(t *testing.T, r *runRig) *heldUpstream {
	h := &heldUpstream{arrivals: make(chan arrival, 64)}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		b, _ := io.ReadAll(req.Body)
		json.Unmarshal(b, &body)
		a := arrival{release: make(chan struct{})}
		if n := len(body.Messages); n > 0 {
			a.prompt = body.Messages[n-1].Content
		}
		h.arrivals <- a
		select {
		case <-a.release:
		case <-req.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-6-luna","choices":[{"index":0,"message":{"role":"assistant","content":"did %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, a.prompt)
	}))
	t.Cleanup(up.Close)
	p := r.cfg.Providers["openai"]
	p.BaseURL = up.URL + "/v1"
	r.cfg.Providers["openai"] = p
	return h
}

// next is the next request to arrive; the test fails when none comes
// within a deadline far beyond River's polling.
func (h *heldUpstream) next(t *testing.T, want string) arrival {
	t.Helper()
	select {
	case a := <-h.arrivals:
		if a.prompt != want {
			close(a.release)
			t.Fatalf("the upstream was sent %s's step, want %s's", a.prompt, want)
		}
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("no step was sent within 30 s, want %s's", want)
	}
	return arrival{}
}

// Within a priority, tasks start in the order they were added, across two
// runners on one Postgres queue with a global limit: a task handed back
// (its runner stopped mid-step) starts again before every task added after
// it, not behind them; and when the one free slot could go to either of
// two tasks a runner fetched together, the earlier takes it. Each step is
// held at the upstream until the test lets it end, so the order in which
// the steps arrive there is the queue's, nothing else's.
func TestOrderKeptAcrossRunnersAndHandBacks(t *testing.T) {
	t.Parallel()
	url, schema, _ := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := func() *Store { // one per runner, as each process has its own
		s, err := Open(ctx, url, "", OpenOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	r := newRunRig(t, "calm")
	up := newHeldUpstream(t, r)
	first := store()
	for i := 1; i <= 5; i++ {
		if _, err := first.Add(ctx, Task{Name: fmt.Sprintf("t%d", i), Steps: []Step{{Name: "ask", Model: "gpt-6-luna", Prompt: fmt.Sprintf("t%d", i)}}}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// a runner works the queue with a global limit of two tasks, its
	// slots on the database, until stopped
	start := func(s *Store, name string, conc int) (stop func()) {
		rctx, rcancel := context.WithCancel(ctx)
		o := r.opts(conc)
		o.UntilEmpty = false
		o.Slots = fleet.NewNode(rctx, s.Fleet(), name, policy.RealClock{}, slog.New(slog.DiscardHandler))
		o.GlobalConcurrency = 2
		done := make(chan error, 1)
		go func() { done <- s.Run(rctx, o) }()
		return func() {
			rcancel()
			if err := <-done; err != nil {
				t.Errorf("runner %s: %v", name, err)
			}
		}
	}
	stopA := start(first, "a", 1)
	t1 := up.next(t, "t1")
	stopB := start(store(), "b", 1)
	t2 := up.next(t, "t2") // held to the end: one of the two slots stays taken
	// runner a stops mid-step: t1 is handed back, and a runner started
	// now, fetching two at once for the one free slot, starts t1 first
	stopA()
	_ = t1
	stopC := start(store(), "c", 2)
	for _, want := range []string{"t1", "t3", "t4", "t5"} {
		close(up.next(t, want).release)
	}
	close(t2.release)
	for { // every task finishes, each sent once more only for t1
		list, _ := first.List(ctx)
		if !slices.ContainsFunc(list, func(in Info) bool { return in.Status != "succeeded" }) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("unfinished: %+v", list)
		}
		time.Sleep(20 * time.Millisecond) // River works on real time: polling, not timing
	}
	stopB()
	stopC()
	select {
	case a := <-up.arrivals:
		t.Fatalf("%s's step was sent again", a.prompt)
	default:
	}
}

// A task handed back after its runner died (the rescue) starts again
// before the tasks added after it, on either database.
func TestRescuedTaskKeepsItsPlace(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var ids []int64
			for i := 1; i <= 3; i++ {
				id, err := s.Add(ctx, Task{Name: fmt.Sprintf("t%d", i), Steps: []Step{{Name: "ask", Model: "gpt-6-luna", Prompt: fmt.Sprintf("t%d", i)}}}, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			// t1 was running on a runner that died; another runner's
			// rescue finds it silent past its limit and hands t1 back
			now := time.Now()
			dead, self := newRunner(30*time.Second), newRunner(30*time.Second)
			if err := s.register(ctx, dead, now); err != nil {
				t.Fatal(err)
			}
			if err := s.be.exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1 WHERE id = ?`, ids[0]); err != nil {
				t.Fatal(err)
			}
			if err := s.stepStarted(ctx, dead, ids[0], 1, 0); err != nil {
				t.Fatal(err)
			}
			seen := watcher{}
			s.rescue(ctx, self, seen, now)
			if got, err := s.rescue(ctx, self, seen, now.Add(31*time.Second)); err != nil || len(got) != 1 || got[0] != ids[0] {
				t.Fatalf("rescued %v (%v), want t1", got, err)
			}
			if err := s.Run(ctx, r.opts(1)); err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, l := range r.lines {
				if m := regexp.MustCompile(`\((t\d)\): step 1/1`).FindStringSubmatch(l); m != nil {
					order = append(order, m[1])
				}
			}
			if got := strings.Join(order, " "); got != "t1 t2 t3" {
				t.Fatalf("ran in order %s, want t1 t2 t3", got)
			}
		})
	}
}
