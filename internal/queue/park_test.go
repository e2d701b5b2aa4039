package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// A task parked for a plan's usage limit waits for the reset on the queue's
// own clock, whoever hands it back earlier: River (its time is the wall
// clock's, not the queue's), or the queue's own wake when another task's
// answer shows the model has room (a usage limit is the account's, not the
// pool's: it was woken 4 to 7 s before its reset). Handed back early, it is
// parked again for what is left, silently, and its step is sent at the
// reset (plus the driver's second) or after, never before. It says so in
// spillway's words, once: no River error name, no "every model at
// capacity".
func TestUsageLimitParkWakesAtItsReset(t *testing.T) {
	t.Parallel()
	for _, other := range []bool{false, true} {
		for name, open := range stores(t) {
			t.Run(fmt.Sprintf("%s/another task answered meanwhile=%v", name, other), func(t *testing.T) {
				t.Parallel()
				usageLimitPark(t, open(t), other)
			})
		}
	}
}

func usageLimitPark(t *testing.T, s *Store, other bool) {
	r := newRunRig(t, "calm")
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := policytest.New(t0)
	reset := t0.Add(time.Second)
	// the upstream: a ChatGPT plan's usage limit that resets at reset,
	// then answers; each request's prompt and time on the queue's clock
	type request struct {
		prompt string
		at     time.Time
	}
	var mu sync.Mutex
	var sent []request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(req.Body).Decode(&body)
		mu.Lock()
		sent = append(sent, request{body.Messages[len(body.Messages)-1].Content, clk.Now()})
		n := len(sent)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":%d}}`, reset.Unix())
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-6-astra","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	p := r.cfg.Providers["openai"]
	p.BaseURL = up.URL + "/v1"
	r.cfg.Providers["openai"] = p
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	task := func(name string) Task {
		return Task{Name: name, MinTier: "heavy", Steps: []Step{{Name: "ask", Model: "gpt-6-astra", Prompt: name}}}
	}
	id, err := s.Add(ctx, task("limited"), t0)
	if err != nil {
		t.Fatal(err)
	}
	o := r.opts(2)
	o.UntilEmpty = false
	o.Clock = clk
	o.Engine = policy.New(Paced(r.cfg), policy.ForBatchWork(), policy.WithClock(clk))
	var evMu sync.Mutex
	var evs []TaskEvent
	o.OnTask = func(ev TaskEvent) {
		if ev.ID == id {
			evMu.Lock()
			evs = append(evs, ev)
			evMu.Unlock()
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, o) }()
	// the driver parks it until the reset and a second: handed back
	// earlier (by River, or woken by the other task's answer from its
	// model), it must park again, not send
	wake := reset.Add(time.Second)
	var second int64
	for advanced := false; ; {
		in, _ := s.Get(ctx, id)
		if in.Status == "succeeded" {
			break
		}
		if other && second == 0 && in.Status == "waiting for the usage limit's reset" {
			if second, err = s.Add(ctx, task("other"), clk.Now()); err != nil {
				t.Fatal(err)
			}
		}
		otherDone := !other
		if second != 0 {
			in2, _ := s.Get(ctx, second)
			otherDone = in2.Status == "succeeded"
		}
		if !advanced && otherDone && in.Status == "waiting for the usage limit's reset" && snoozes(t, s, id) >= 2 {
			clk.Advance(wake.Sub(clk.Now()))
			advanced = true
		}
		if ctx.Err() != nil {
			t.Fatalf("the task is %q; log:\n%s", in.Status, r.log())
		}
		time.Sleep(20 * time.Millisecond) // River works on real time: polling, not timing
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	var limited []time.Time
	for _, q := range sent {
		if q.prompt == "limited" {
			limited = append(limited, q.at)
		}
	}
	if len(limited) != 2 || limited[1].Before(wake) {
		t.Fatalf("the limited task's requests at %v; the second must come at %v or later (the reset at %v and the driver's second)", limited, wake, reset)
	}
	var lines []string
	r.mu.Lock()
	for _, l := range r.lines {
		if strings.HasPrefix(l, fmt.Sprintf("task %d", id)) {
			lines = append(lines, l)
		}
	}
	r.mu.Unlock()
	want := []string{
		fmt.Sprintf("task %d (limited): started", id),
		fmt.Sprintf("task %d (limited): step 1/1 ask", id),
		fmt.Sprintf("task %d (limited): step ask met its plan's usage limit; parked until the usage limit resets at 2026-11-30T12:00:01Z (no attempt used)", id),
		fmt.Sprintf("task %d (limited): started", id),
		fmt.Sprintf("task %d (limited): step 1/1 ask", id),
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	evMu.Lock()
	defer evMu.Unlock()
	wantEvs := []TaskEvent{
		{ID: id, Name: "limited", Status: "running", Attempt: 1, MaxAttempts: 5},
		{ID: id, Name: "limited", Status: "waiting for the usage limit's reset", Attempt: 1, MaxAttempts: 5, Next: wake},
		{ID: id, Name: "limited", Status: "running", Attempt: 1, MaxAttempts: 5},
		{ID: id, Name: "limited", Status: "succeeded", Attempt: 1, MaxAttempts: 5},
	}
	same := func(a, b TaskEvent) bool {
		return a.Next.Equal(b.Next) && a.ID == b.ID && a.Name == b.Name && a.Status == b.Status && a.Attempt == b.Attempt && a.MaxAttempts == b.MaxAttempts && a.Error == b.Error
	}
	if !slices.EqualFunc(evs, wantEvs, same) {
		t.Fatalf("task events:\n%+v\nwant:\n%+v", evs, wantEvs)
	}
}

// snoozes is how many times River has snoozed task id.
func snoozes(t *testing.T, s *Store, id int64) int {
	t.Helper()
	row, err := s.be.get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	json.Unmarshal(row.Metadata, &m)
	return m.Snoozes
}
