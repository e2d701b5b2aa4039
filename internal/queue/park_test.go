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
// own clock, whenever River hands it back (River's scheduler makes a job
// available up to 5 s before its time, and River's time is not the
// queue's): handed back before the reset, it is parked again for what is
// left, silently, and its step is sent at the reset (plus the driver's
// second) or after, never before. It says so in spillway's words, once:
// no River error name, no "every model at capacity".
func TestUsageLimitParkWakesAtItsReset(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			r := newRunRig(t, "calm")
			t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			clk := policytest.New(t0)
			reset := t0.Add(time.Second)
			// the upstream: a ChatGPT plan's usage limit that resets at
			// reset, then answers; each request's time on the queue's clock
			var mu sync.Mutex
			var sent []time.Time
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				io.Copy(io.Discard, req.Body)
				mu.Lock()
				sent = append(sent, clk.Now())
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
			id, err := s.Add(ctx, Task{Name: "limited", MinTier: "heavy", Steps: []Step{{Name: "ask", Model: "gpt-6-astra", Prompt: "hi"}}}, t0)
			if err != nil {
				t.Fatal(err)
			}
			o := r.opts(1)
			o.UntilEmpty = false
			o.Clock = clk
			o.Engine = policy.New(Paced(r.cfg), policy.ForBatchWork(), policy.WithClock(clk))
			var evMu sync.Mutex
			var evs []TaskEvent
			o.OnTask = func(ev TaskEvent) {
				evMu.Lock()
				evs = append(evs, ev)
				evMu.Unlock()
			}
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx, o) }()
			// the driver parks it until the reset and a second: woken
			// earlier by River, it must park again, not send
			wake := reset.Add(time.Second)
			for advanced := false; ; {
				in, _ := s.Get(ctx, id)
				if in.Status == "succeeded" {
					break
				}
				if !advanced && in.Status == "waiting for the usage limit's reset" && snoozes(t, s, id) >= 2 {
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
			if len(sent) != 2 || sent[1].Before(wake) {
				t.Fatalf("requests at %v; the second must come at %v or later (the reset at %v and the driver's second)", sent, wake, reset)
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
		})
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
