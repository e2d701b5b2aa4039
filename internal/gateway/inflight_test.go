package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// bigPad is an event's padding past what an event reader keeps without
// taking room from the request's budget (64 KiB).
var bigPad = strings.Repeat("x", 200<<10)

// heldAnswer is a Messages stream with two deltas (the hold window's
// tokens: the second comes through the window's pump), a delta over 64
// KiB, its final event, and after it the start of an event over 64 KiB
// cut by the upstream's end: what the pump's reader holds of the budget
// as the request ends.
func heldAnswer(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for _, t := range []string{"one ", "two ", bigPad} {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+t+`"}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	fmt.Fprintf(w, "event: ping\ndata: %s", bigPad) // cut: the upstream goes away inside it
}

// Every byte a request takes of the gateway's room is given back once:
// with a time-limited hold window (its events read on a goroutine of their
// own) and events past 64 KiB (the reader's buffer taken from the
// request's budget), the gateway's count of what it holds is exactly 0
// once the requests are over, never below.
func TestInflightGivenBackOnce(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(heldAnswer))
	t.Cleanup(up.Close)
	cfg := simtest.Config(up.URL)
	m := cfg.Models["claude-opus-5-5"]
	m.Hold = config.Hold{Tokens: 2, Duration: config.Duration(time.Hour)}
	cfg.Models["claude-opus-5-5"] = m
	clk := policytest.New(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	s, err := New(Options{Config: cfg, Engine: policy.New(cfg, policy.WithClock(clk)), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(s.Handler())
	body := `{"model":"claude-opus-5-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for i := range 100 {
		resp, err := http.Post(gs.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "message_stop") {
			t.Fatalf("request %d: status %d:\n%.500s", i, resp.StatusCode, b)
		}
	}
	gs.Close() // (every handler has returned)
	s.bytes.mu.Lock()
	used := s.bytes.used
	s.bytes.mu.Unlock()
	if used != 0 {
		t.Fatalf("the gateway holds %d bytes once every request is over, want 0", used)
	}
}

// A request's budget gives back what it holds, never more, and nothing
// once its request ended and gave back all it held (a reader that gives
// its buffer back late): the gateway's count never goes below what it
// holds.
func TestBudgetGivesBackOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(b *budget, s *Server)
		want int64 // the gateway's count after
	}{
		{"a give after the request's end", func(b *budget, s *Server) {
			b.Take(100)
			s.giveHeld(b.h)
			b.Give(100)
		}, 0},
		{"a give past what is held", func(b *budget, s *Server) {
			b.Take(100)
			b.Give(300)
		}, 0},
		{"a take after the end holds nothing", func(b *budget, s *Server) {
			s.giveHeld(b.h)
			b.Take(100)
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Server{}
			s.bytes.used = 50 // another request's
			h := &held{}
			h.answers = &budget{f: &s.bytes, h: h, limit: 1 << 20, most: 1 << 20}
			c.run(h.answers, s)
			if got := s.bytes.used - 50; got != c.want {
				t.Fatalf("the gateway holds %d bytes of this request's, want %d", got, c.want)
			}
		})
	}
}

// A continuation's body is the request's to hold while its attempt lasts,
// and given back when it ends: an answer of a large request that breaks
// twice is continued twice within gateway.max_body_mb (1 MiB, a body of
// 530 KiB: two continuations' bodies held at once are past it).
func TestContinuationBodyGivenBack(t *testing.T) {
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"part%d "}}`, n))
		if n < 3 {
			return // the stream ends before its final event
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)
	cfg := simtest.Config(up.URL)
	cfg.Gateway.MaxBodyMB = 1
	clk := policytest.New(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	s, err := New(Options{Config: cfg, Engine: policy.New(cfg, policy.WithClock(clk)), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(s.Handler())
	t.Cleanup(gs.Close)
	body := `{"model":"claude-opus-5-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("a", 530<<10) + `"}]}`
	resp, err := http.Post(gs.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	for _, want := range []string{"part1 ", "part2 ", "part3 ", "message_stop"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("the answer lacks %q:\n%.2000s", want, b)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("the upstream got %d requests, want 3", n)
	}
}
