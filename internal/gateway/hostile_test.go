package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// The hostile-upstream cases of issue 46: an upstream that sends ten times
// the gateway's memory budget (gateway.max_inflight_mb: 8) in one answer,
// made as it is sent and never held (lazy). For each, the heap's objects
// (runtime/metrics, after a collection, sampled every 2 MiB sent and at
// the end) stay within the budget plus 16 MiB, the client gets its
// format's own error (or the answer), and the upstream gets the requests
// the policy says: no continuation past what a continuation carries, an
// oversized event sent to each model once.
const (
	hostileBudget = 8 << 20
	hostileSent   = 10 * hostileBudget
	heapSlack     = 16 << 20
)

// lazy is an upstream on loopback whose hostile path answers with gen, the
// others full (capacity, in their format): every request is counted by
// path.
type lazy struct {
	srv     *httptest.Server
	hostile string // the path that answers with gen
	gen     func(w *streamer)
	sample  func()
	mu      sync.Mutex
	hits    map[string]int
}

func newLazy(t *testing.T, hostile string, gen func(w *streamer), sample func()) *lazy {
	l := &lazy{hostile: hostile, gen: gen, sample: sample, hits: map[string]int{}}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *lazy) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	l.mu.Lock()
	l.hits[r.URL.Path]++
	l.mu.Unlock()
	if !strings.HasPrefix(r.URL.Path, l.hostile) {
		full(w, r.URL.Path)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	l.gen(&streamer{w: w, rc: http.NewResponseController(w), sample: l.sample})
	// the handler returns without the answer's end: the stream is cut
}

func (l *lazy) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for p, c := range l.hits {
		if strings.HasPrefix(p, prefix) {
			n += c
		}
	}
	return n
}

// full answers that the model is at capacity, in the path's format.
func full(w http.ResponseWriter, path string) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	case strings.HasPrefix(path, "/v1beta/"):
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
	default:
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The server is overloaded","type":"server_error","code":"server_is_overloaded"}}`)
	}
}

// streamer writes a hostile answer: events made as they are sent, a
// sample of the heap every 2 MiB.
type streamer struct {
	w      io.Writer
	rc     *http.ResponseController
	sample func()
	sent   int
	next   int
}

// put writes s (no more once the gateway hung up).
func (s *streamer) put(parts ...string) bool {
	for _, p := range parts {
		if _, err := io.WriteString(s.w, p); err != nil {
			return false
		}
		s.sent += len(p)
	}
	if s.sent >= s.next {
		s.next = s.sent + 2<<20
		if s.rc.Flush() != nil {
			return false
		}
		s.sample()
	}
	return true
}

// repeat writes open, then the event that carries piece of a's until
// hostileSent bytes went: each made as it goes.
func (s *streamer) repeat(open string, event func(piece string) string) {
	if !s.put(open) {
		return
	}
	piece := strings.Repeat("a", 32<<10)
	ev := event(piece) // one event, written again and again: nothing held
	for s.sent < hostileSent {
		if !s.put(ev) {
			return
		}
	}
	s.rc.Flush()
}

const msgStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"

func msgText(s *streamer) {
	s.repeat(msgStart+"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		func(p string) string {
			return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + p + "\"}}\n\n"
		})
}

func msgTool(s *streamer) {
	s.repeat(msgStart+"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Bash\",\"input\":{}}}\n\n"+
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"cmd\\\":\\\"\"}}\n\n",
		func(p string) string {
			return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" + p + "\"}}\n\n"
		})
}

func chatTool(s *streamer) {
	s.repeat("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"Bash\",\"arguments\":\"{\\\"cmd\\\":\\\"\"}}]}}]}\n\n",
		func(p string) string {
			return "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"" + p + "\"}}]}}]}\n\n"
		})
}

// msgOversized opens an answer, then sends one event that never ends.
func msgOversized(s *streamer) {
	open := msgStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""
	s.repeat(open, func(p string) string { return p })
}

// heapPeak samples the heap's objects after a collection and keeps the
// largest.
type heapPeak struct {
	mu   sync.Mutex
	peak uint64
}

func (h *heapPeak) sample() {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	h.mu.Lock()
	h.peak = max(h.peak, s[0].Value.Uint64())
	h.mu.Unlock()
}

// hostileGateway is a gateway with max_inflight_mb: 8 in front of up,
// each provider with a key of its own, chain rules from mut.
func hostileGateway(t *testing.T, up string, mut func(*config.Config)) string {
	cfg := simtest.Config(up)
	cfg.Gateway.MaxInflightMB, cfg.Gateway.MaxBodyMB = hostileBudget>>20, hostileBudget>>20
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
	cfg.Retry.Budget = config.Duration(5 * time.Second)
	if mut != nil {
		mut(cfg)
	}
	clk := policytest.New(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	gw, err := gateway.New(gateway.Options{Config: cfg, Engine: policy.New(cfg, policy.WithClock(clk)), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(gw.Handler())
	t.Cleanup(gs.Close)
	return gs.URL
}

// tail keeps the last bytes written to it, and counts them all.
type tail struct {
	n   int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.n += len(p)
	t.buf = append(t.buf, p...)
	if len(t.buf) > 64<<10 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-8<<10:]...)
	}
	return len(p), nil
}

// hostileCall sends body to path and reads the answer: its status, the
// bytes read, and the last of them.
func hostileCall(t *testing.T, url, path, body string) (int, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tl tail
	if _, err := io.Copy(&tl, resp.Body); err != nil {
		t.Fatalf("reading the answer: %v (read %d bytes)", err, tl.n)
	}
	return resp.StatusCode, tl.n, string(tl.buf)
}

const (
	tool       = `{"type":"object","properties":{"cmd":{"type":"string"}}}`
	chatTools  = `,"tools":[{"type":"function","function":{"name":"Bash","parameters":` + tool + `}}]`
	msgTools   = `,"tools":[{"name":"Bash","input_schema":` + tool + `}]`
	respTools  = `,"tools":[{"type":"function","name":"Bash","parameters":` + tool + `}]`
	gemTools   = `,"tools":[{"functionDeclarations":[{"name":"Bash","parameters":` + tool + `}]}]`
	chatPath   = "/v1/chat/completions"
	msgPath    = "/v1/messages"
	respPath   = "/v1/responses"
	geminiPath = "/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse"
)

func chatBody(model, tools string) string {
	return `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]` + tools + `}`
}
func msgBody(model, tools string) string {
	return `{"model":"` + model + `","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]` + tools + `}`
}
func respBody(model, tools string) string {
	return `{"model":"` + model + `","stream":true,"input":"hi"` + tools + `}`
}

var geminiBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]` + gemTools + `}`

func TestHostileUpstreams(t *testing.T) {
	cases := []struct {
		name       string
		hostile    string // the upstream path that answers with gen
		gen        func(*streamer)
		spill      string // the model a chain spills to (another vendor's), "" for none
		path, body string
		want       []string // in the end of the client's answer
		status     int
		requests   int // to the hostile path
	}{
		{"a Messages answer cut before its end: not continued past 4 MiB", msgPath, msgText, "",
			msgPath, msgBody("claude-opus-5-5", ""), []string{"event: error", "not continued", "4 MiB"}, 200, 1},
		{"one oversized event: sent to each model once", msgPath, msgOversized, "",
			msgPath, msgBody("claude-opus-5-5", ""), []string{`"type":"error"`, "larger than spillway holds for a request"}, 0, 3},
		{"tool arguments, Messages to a Chat client", msgPath, msgTool, "claude-sonnet-5-5",
			chatPath, chatBody("gpt-6-astra", chatTools), []string{`"error"`}, 200, 1},
		{"tool arguments, Chat to a Messages client", chatPath, chatTool, "gpt-6.1-sol",
			msgPath, msgBody("claude-opus-5-5", msgTools), []string{"event: error"}, 200, 1},
		{"tool arguments, Messages to a Responses client", msgPath, msgTool, "claude-sonnet-5-5",
			respPath, respBody("gpt-6-astra", respTools), []string{"response.failed"}, 200, 1},
		{"tool arguments, Chat to a Gemini client", chatPath, chatTool, "gpt-6.1-sol",
			geminiPath, geminiBody, []string{`"error"`}, 200, 1},
		{"translated text, Messages to a Chat client", msgPath, msgText, "claude-sonnet-5-5",
			chatPath, chatBody("gpt-6-astra", ""), []string{`"error"`}, 200, 1},
		{"translated text, Messages to a Responses client", msgPath, msgText, "claude-sonnet-5-5",
			respPath, respBody("gpt-6-astra", ""), []string{"response.failed"}, 200, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var heap heapPeak
			up := newLazy(t, c.hostile, c.gen, heap.sample)
			var mut func(*config.Config)
			if c.spill != "" {
				mut = spillTo(c.spill)
			}
			gw := hostileGateway(t, up.srv.URL, mut)
			heap.sample()
			status, n, end := hostileCall(t, gw, c.path, c.body)
			heap.sample()
			if c.status != 0 && status != c.status || c.status == 0 && status < 400 {
				t.Fatalf("status %d:\n%s", status, end)
			}
			for _, w := range c.want {
				if !strings.Contains(end, w) {
					t.Fatalf("the answer's end has no %q (%d bytes read):\n%s", w, n, clip(end))
				}
			}
			for _, done := range []string{"message_stop", "response.completed", "[DONE]", `"finishReason"`} {
				if strings.Contains(end, done) {
					t.Fatalf("a cut answer ends as a whole one (%s):\n%s", done, clip(end))
				}
			}
			if got := up.count(c.hostile); got != c.requests {
				t.Fatalf("the hostile upstream got %d requests, want %d", got, c.requests)
			}
			if heap.peak > hostileBudget+heapSlack {
				t.Fatalf("heap objects peaked at %.1f MiB, past the budget and 16 MiB (%d MiB)", float64(heap.peak)/(1<<20), (hostileBudget+heapSlack)>>20)
			}
			t.Logf("heap objects peaked at %.1f MiB; the client read %d bytes", float64(heap.peak)/(1<<20), n)
		})
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return fmt.Sprintf("…%s", s[len(s)-2000:])
	}
	return s
}
