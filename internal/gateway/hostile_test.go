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
	lazy "github.com/spillway/spillway/internal/hostile"
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
		gen        lazy.Gen
		spill      string // the model a chain spills to (another vendor's), "" for none
		path, body string
		want       []string // in the end of the client's answer
		status     int
		requests   int // to the hostile path
	}{
		{"a Messages answer cut before its end: not continued past 4 MiB", msgPath, lazy.MessagesText, "",
			msgPath, msgBody("claude-opus-5-5", ""), []string{"event: error", "not continued", "4 MiB"}, 200, 1},
		{"one oversized event: sent to each model once", msgPath, lazy.MessagesOversized, "",
			msgPath, msgBody("claude-opus-5-5", ""), []string{`"type":"error"`, "larger than spillway holds for a request"}, 0, 3},
		{"tool arguments, Messages to a Chat client", msgPath, lazy.MessagesTool, "claude-sonnet-5-5",
			chatPath, chatBody("gpt-6-astra", chatTools), []string{`"error"`}, 200, 1},
		{"tool arguments, Chat to a Messages client", chatPath, lazy.ChatTool, "gpt-6.1-sol",
			msgPath, msgBody("claude-opus-5-5", msgTools), []string{"event: error"}, 200, 1},
		{"tool arguments, Messages to a Responses client", msgPath, lazy.MessagesTool, "claude-sonnet-5-5",
			respPath, respBody("gpt-6-astra", respTools), []string{"response.failed"}, 200, 1},
		{"tool arguments, Chat to a Gemini client", chatPath, lazy.ChatTool, "gpt-6.1-sol",
			geminiPath, geminiBody, []string{`"error"`}, 200, 1},
		{"translated text, Messages to a Chat client", msgPath, lazy.MessagesText, "claude-sonnet-5-5",
			chatPath, chatBody("gpt-6-astra", ""), []string{`"error"`}, 200, 1},
		{"translated text, Messages to a Responses client", msgPath, lazy.MessagesText, "claude-sonnet-5-5",
			respPath, respBody("gpt-6-astra", ""), []string{"response.failed"}, 200, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var heap heapPeak
			up := &lazy.Upstream{Path: c.hostile, Gen: c.gen, Size: hostileSent, Sample: heap.sample}
			hs := httptest.NewServer(up)
			t.Cleanup(hs.Close)
			var mut func(*config.Config)
			if c.spill != "" {
				mut = spillTo(c.spill)
			}
			gw := hostileGateway(t, hs.URL, mut)
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
			if got := up.Count(c.hostile); got != c.requests {
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
