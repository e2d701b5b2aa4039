package send

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// canned is an upstream that answers every request with one event stream.
type canned string

func (c canned) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(c))), Request: req}, nil
}

// readStream sends one stream request to gpt-6-astra through the driver,
// the upstream answering body, and reads the stream as a library caller
// does: what it read, the read's error, and the event records.
func readStream(t *testing.T, kind wire.Kind, body string) (string, error, []events.Record) {
	t.Helper()
	var mu sync.Mutex
	var recs []events.Record
	sink := events.SinkFunc(func(r events.Record) {
		mu.Lock()
		defer mu.Unlock()
		recs = append(recs, r)
	})
	var st *Stream
	out := policy.New(config.Default()).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "gpt-6-astra"}, Stream: true, Events: sink,
		Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/", nil)
			resp, _ := canned(body).RoundTrip(req)
			a.Headers(true)
			ep := wire.EndpointOf(kind)
			var res policy.Result
			if st, res = Open(a, resp, ep, ep, Options{}); st == nil {
				return res
			}
			res.Committed, res.Open = true, true
			return res
		}})
	if st == nil {
		t.Fatalf("no stream: %+v", out)
	}
	b := st.Body()
	got, err := io.ReadAll(b)
	b.Close()
	mu.Lock()
	defer mu.Unlock()
	return string(got), err, append([]events.Record(nil), recs...)
}

func TestStreamEnds(t *testing.T) {
	const (
		delta  = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
		finish = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	)
	for _, c := range []struct {
		name, body string
		broken     bool   // the read fails with a *BrokenStream
		class      string // the record's
		route      string // the stream's last word
	}{
		{"whole", delta + finish + "data: [DONE]\n\n", false, "ok", "gpt-6-astra:ok"},
		{"a malformed frame after the final event is dropped: the answer is whole",
			delta + finish + "data: {\"usage\":{\"completion_tokens\":1}\n\ndata: [DONE]\n\n", false, "ok", "gpt-6-astra:ok"},
		{"a malformed frame before it breaks the stream", delta + "data: {\"choices\":[\n\n" + finish, true, "server_error", "gpt-6-astra:server_error"},
		{"a stream that ends without its final event", delta, true, "network", "gpt-6-astra:network"},
		{"an event past the frame limit is the upstream's answer, not the network's",
			delta + "data: " + strings.Repeat("x", sse.DefaultMaxFrame) + "\n\n" + finish, true, "server_error", "gpt-6-astra:server_error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err, recs := readStream(t, wire.Chat, c.body)
			var broken *BrokenStream
			if errors.As(err, &broken) != c.broken || !c.broken && err != nil {
				t.Fatalf("read error %v", err)
			}
			if n := strings.Count(got, ": X-Spillway-Route:"); n != 1 || FinalRoute([]byte(got)) != c.route {
				t.Fatalf("%d last words, route %q:\n%s", n, FinalRoute([]byte(got)), got)
			}
			if strings.Contains(got, "usage") || strings.Contains(got, "choices\":[\n") {
				t.Fatalf("a malformed frame reached the caller:\n%s", got)
			}
			if len(recs) != 1 || recs[0].Class != c.class || recs[0].Route != c.route {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

// A malformed frame's verdict says what it was without quoting its data:
// escaped, a key in it would slip past redaction.
func TestMalformedQuotesNoData(t *testing.T) {
	key := "0123456789abcdef0123456789abcdef"
	v := malformed(sse.Event{Name: strings.Repeat("x", 100), Data: []byte(`{"api-key":"` + key + `"`)})
	if v.Class != classify.ServerError || strings.Contains(v.Message, key[:8]) || strings.Contains(v.Message, strings.Repeat("x", 41)) {
		t.Fatalf("%+v", v)
	}
}

// A continuation's Messages stream is tracked as the caller sees it: a
// second break resumes from the caller's text and the caller's block.
func TestSpliceTracksWhatTheCallerHas(t *testing.T) {
	s := &Stream{client: wire.EndpointOf(wire.Messages), from: wire.EndpointOf(wire.Messages), o: Options{Track: true, Splice: &Resume{Text: "Hello ", Index: 2}}, mem: meter{b: Limit(DefaultPerRequest)}}
	s.keepText("Hello ")
	s.open, s.openText, s.trim = 2, true, " "
	for _, ev := range []sse.Event{
		{Name: "message_start", Data: []byte(`{"type":"message_start","message":{}}`)},
		{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
		{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}`)},
		{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
		{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`)},
		{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"!"}}`)},
	} {
		out, drop, err := s.splice(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !drop {
			s.track(out)
		}
	}
	if r := s.Resume(); r == nil || r.Text != "Hello world!" || r.Index != 3 {
		t.Fatalf("resume %+v", r)
	}
}

// tracked is a Messages stream that Track follows, with budget b, at a
// text block in flight.
func tracked(b Budget) *Stream {
	s := &Stream{client: wire.EndpointOf(wire.Messages), from: wire.EndpointOf(wire.Messages), o: Options{Track: true}, mem: meter{b: b}, open: -1}
	s.track(sse.Event{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)})
	return s
}

// delta is a Messages text delta of n bytes.
func delta(n int) sse.Event {
	return sse.Event{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("a", n) + `"}}`)}
}

// What a continuation carries is bounded: at most MaxResume bytes of text,
// and no more than the request's budget has room for; past either, the
// relay keeps no more text (and holds none of the budget for it), and a
// break is not continued. What the stream took is given back at its end,
// but for the text a Resume handed on.
func TestAContinuationCarriesAtMostItsCap(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget int64
		sent   int
		resume bool
		lost   string
	}{
		{"a short answer", DefaultPerRequest, 100 << 10, true, ""},
		{"up to the cap", DefaultPerRequest, MaxResume, true, ""},
		{"past the cap", DefaultPerRequest, MaxResume + 64<<10, false, "4 MiB a continuation carries"},
		{"past the request's budget", 1 << 20, 2 << 20, false, "gateway.max_inflight_mb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Limit(c.budget).(*limit)
			s := tracked(b)
			for sent := 0; sent < c.sent; sent += 32 << 10 {
				s.track(delta(min(32<<10, c.sent-sent)))
				if b.used.Load() > c.budget || int64(cap(s.text)) > MaxResume {
					t.Fatalf("held %d bytes of the budget, %d of text", b.used.Load(), cap(s.text))
				}
			}
			r := s.Resume()
			if (r != nil) != c.resume || !strings.Contains(s.lost, c.lost) {
				t.Fatalf("resume %v, lost %q", r != nil, s.lost)
			}
			if r != nil && len(r.Text) != c.sent {
				t.Fatalf("resume carries %d bytes, want %d", len(r.Text), c.sent)
			}
			s.body = io.NopCloser(strings.NewReader(""))
			s.Close()
			if kept := b.used.Load(); r == nil && kept != 0 || r != nil && kept != int64(cap(s.text)) {
				t.Fatalf("after the stream, %d bytes of the budget still held (resume %v)", kept, r != nil)
			}
		})
	}
}

// An attempt that failed on an event past what the request may hold gives
// back all it took of the budget: the next attempt of the request (another
// model) has the whole of it.
func TestAFailedAttemptGivesItsBudgetBack(t *testing.T) {
	b := Limit(1 << 20).(*limit)
	body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("a", 2<<20) + "\"}}\n\n"
	var failed policy.Result
	policy.New(config.Default()).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "claude-opus-5-5"}, Stream: true,
		Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/", nil)
			resp, _ := canned(body).RoundTrip(req)
			a.Headers(true)
			ep := wire.EndpointOf(wire.Messages)
			st, res := Open(a, resp, ep, ep, Options{Budget: b})
			if st != nil {
				t.Fatal("an answer past the budget was opened")
			}
			if failed = res; b.used.Load() != 0 {
				t.Fatalf("the failed attempt still holds %d bytes of the budget", b.used.Load())
			}
			return res
		}})
	if failed.Verdict.Code != classify.TooLarge {
		t.Fatalf("%+v", failed.Verdict)
	}
}
