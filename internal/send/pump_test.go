package send

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// ledger is a Budget that counts what is held, and tells when something
// was taken.
type ledger struct {
	mu    sync.Mutex
	held  int64
	taken chan struct{}
}

func (l *ledger) Take(n int64) bool {
	l.mu.Lock()
	l.held += n
	l.mu.Unlock()
	select {
	case l.taken <- struct{}{}:
	default:
	}
	return true
}

func (l *ledger) Give(n int64) {
	l.mu.Lock()
	l.held -= n
	l.mu.Unlock()
}

func (l *ledger) now() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// A stream's Close gives back all the stream took of its budget before it
// returns, what its hold window's pump read too: the pump's reader, in the
// middle of an event past 64 KiB when the stream is closed, gives its
// buffer back before Close returns, never after (when the request has
// given back all it held: twice).
func TestCloseWaitsForThePump(t *testing.T) {
	const delta = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	for i := range 20 {
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte(delta + delta + "data: " + strings.Repeat("x", 200<<10)))
		}() // (then nothing more: the stream stalls inside the large event)
		b := &ledger{taken: make(chan struct{}, 1)}
		var st *Stream
		policy.New(config.Default()).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Stream: true,
			Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
				resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr}
				a.Headers(true)
				ep := wire.EndpointOf(wire.Chat)
				var res policy.Result
				o := Options{Hold: config.Hold{Tokens: 2, Duration: config.Duration(time.Hour)}, Budget: b}
				if st, res = Open(a, resp, ep, ep, o); st == nil {
					return res
				}
				res.Committed, res.Open = true, true
				return res
			}})
		if st == nil {
			t.Fatal("no stream")
		}
		<-b.taken // the pump's reader took room for the large event
		st.Close()
		if held := b.now(); held != 0 {
			t.Fatalf("run %d: the stream holds %d bytes of its budget after Close, want 0", i, held)
		}
	}
}

// The output a hold window held counts against the budget until it is
// read, not only while it is held: what First holds is the request's
// until the caller has it, and given back then.
func TestHeldOutputCountsUntilRead(t *testing.T) {
	delta := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("y", 5<<10) + "\"}}]}\n\n"
	finish := "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	b := &ledger{taken: make(chan struct{}, 1)}
	var st *Stream
	policy.New(config.Default()).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Stream: true,
		Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body: io.NopCloser(strings.NewReader(strings.Repeat(delta, 60) + finish))}
			a.Headers(true)
			ep := wire.EndpointOf(wire.Chat)
			var res policy.Result
			if st, res = Open(a, resp, ep, ep, Options{Hold: config.Hold{Tokens: 40}, Budget: b}); st == nil {
				return res
			}
			res.Committed, res.Open = true, true
			return res
		}})
	if st == nil {
		t.Fatal("no stream")
	}
	if held, first := b.now(), int64(len(st.First())); first < 200<<10 || held < first {
		t.Fatalf("the stream holds %d bytes of its budget with %d bytes of output held back, want at least those", held, first)
	}
	body := st.Body()
	if _, err := io.ReadAll(body); err != nil {
		t.Fatal(err)
	}
	body.Close()
	if held := b.now(); held != 0 {
		t.Fatalf("the stream holds %d bytes of its budget once read and closed, want 0", held)
	}
}
