package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/gateway"
	"github.com/spillway/spillway/sim"
)

// rig is a simulator behind a gateway, both on loopback.
type rig struct {
	sim    *sim.Server
	simURL string
	gw     *gateway.Server
	url    string
	mu     sync.Mutex
	recs   []events.Record
	logs   bytes.Buffer
}

func newRig(t testing.TB, scn *sim.Scenario, mut func(*config.Config)) *rig {
	t.Helper()
	r := &rig{}
	srv, err := sim.New(sim.Options{Scenario: scn, Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	r.sim, r.simURL = srv, hs.URL
	cfg := config.Default()
	p := cfg.Providers["openai"]
	p.BaseURL = hs.URL + "/v1"
	cfg.Providers["openai"] = p
	a := cfg.Providers["anthropic"]
	a.BaseURL = hs.URL
	cfg.Providers["anthropic"] = a
	cfg.Pacing = config.Pacing{MaxConcurrency: 8}
	cfg.Retry.Budget = config.Duration(5 * time.Second)
	cfg.Retry.BackoffBase = config.Duration(20 * time.Millisecond)
	cfg.Retry.BackoffMax = config.Duration(100 * time.Millisecond)
	cfg.Retry.NetworkGap = config.Duration(30 * time.Millisecond)
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0 // breakers have their own test
	if mut != nil {
		mut(cfg)
	}
	logger := newTestLogger(&r.logs, &r.mu)
	gw, err := gateway.New(gateway.Options{Config: cfg, Logger: logger, Events: events.SinkFunc(func(rec events.Record) {
		r.mu.Lock()
		r.recs = append(r.recs, rec)
		r.mu.Unlock()
	})})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(gw.Handler())
	t.Cleanup(gs.Close)
	r.gw, r.url = gw, gs.URL
	return r
}

func (r *rig) fault(t *testing.T, f sim.Fault) {
	t.Helper()
	if err := r.sim.AddFault(f); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) records() []events.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Record(nil), r.recs...)
}

type call struct {
	path, body string
	header     map[string]string
}

func chat(model, prompt string, stream bool) call {
	return call{"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, prompt),
		map[string]string{"Authorization": "Bearer sk-test-key-0123456789"}}
}
func responses(model, prompt string, stream bool) call {
	return call{"/v1/responses", fmt.Sprintf(`{"model":%q,"stream":%v,"input":%q}`, model, stream, prompt),
		map[string]string{"Authorization": "Bearer sk-test-key-0123456789"}}
}
func messages(model, prompt string, stream bool) call {
	return call{"/v1/messages?beta=true", fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, prompt),
		map[string]string{"x-api-key": "sk-ant-test-key-0123456789", "anthropic-version": "2023-06-01"}}
}

func (r *rig) do(t *testing.T, c call) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", r.url+c.path, strings.NewReader(c.body))
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, b
}

// text extracts the answer text from any of the protocols' bodies.
func text(b []byte) string {
	var out strings.Builder
	if bytes.Contains(b, []byte("data: ")) {
		for _, line := range strings.Split(string(b), "\n") {
			d, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(d), &m) != nil {
				continue
			}
			switch m["type"] {
			case "response.output_text.delta":
				out.WriteString(m["delta"].(string))
			case "content_block_delta":
				out.WriteString(m["delta"].(map[string]any)["text"].(string))
			}
			if ch, ok := m["choices"].([]any); ok && len(ch) > 0 {
				if c, ok := ch[0].(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
					out.WriteString(c)
				}
			}
		}
		return out.String()
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	if ch, ok := m["choices"].([]any); ok {
		return ch[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	}
	if s, ok := m["output_text"].(string); ok {
		return s
	}
	if c, ok := m["content"].([]any); ok && len(c) > 0 {
		return c[0].(map[string]any)["text"].(string)
	}
	return ""
}

// TestCapacityFallsBackInEveryProtocol: the heavy model is full; every kind
// of request completes on the next model, and the client never sees the
// capacity error (including response.failed and event: error before output).
func TestCapacityFallsBackInEveryProtocol(t *testing.T) {
	cases := []struct {
		name  string
		c     call
		heavy string
		next  string
		style string
	}{
		{"chat", chat("gpt-6-astra", "hi", false), "gpt-6-astra", "gpt-6.1-sol", ""},
		{"chat stream", chat("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", ""},
		{"chat stream error chunk", chat("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", "event"},
		{"responses", responses("gpt-6-astra", "hi", false), "gpt-6-astra", "gpt-6.1-sol", ""},
		{"responses stream: response.failed after created", responses("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", ""},
		{"responses stream: 503", responses("gpt-6-astra", "hi", true), "gpt-6-astra", "gpt-6.1-sol", "status"},
		{"messages", messages("claude-opus-5-5", "hi", false), "claude-opus-5-5", "claude-sonnet-5-5", ""},
		{"messages stream: 529", messages("claude-opus-5-5", "hi", true), "claude-opus-5-5", "claude-sonnet-5-5", ""},
		{"messages stream: event error before the first block", messages("claude-opus-5-5", "hi", true), "claude-opus-5-5", "claude-sonnet-5-5", "event"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, nil)
			r.fault(t, sim.Fault{Model: c.heavy, Kind: "capacity", Count: -1, Style: c.style})
			resp, body := r.do(t, c.c)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got, want := text(body), sim.Answer(c.next, "hi", 16); got != want {
				t.Fatalf("answer %q, want %q", got, want)
			}
			for _, bad := range []string{"overloaded", "response.failed", "event: error", `"error":{`} {
				if bytes.Contains(body, []byte(bad)) {
					t.Fatalf("the client saw the capacity failure (%s):\n%s", bad, body)
				}
			}
			if resp.Header.Get("X-Spillway-Model") != c.next || resp.Header.Get("X-Spillway-Attempts") != "2" ||
				resp.Header.Get("X-Spillway-Route") != c.heavy+":capacity > "+c.next+":ok" {
				t.Fatalf("headers: %v", resp.Header)
			}
			recs := r.records()
			if len(recs) != 2 || recs[0].Class != "capacity" || recs[0].Model != c.heavy || recs[1].Class != "ok" ||
				recs[1].FallbackFrom != c.heavy || recs[1].RequestedModel != c.heavy || recs[0].RequestID != recs[1].RequestID {
				t.Fatalf("event records: %+v", recs)
			}
		})
	}
}

func TestMinTierAndNoFallback(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	r.fault(t, sim.Fault{Model: "gpt-6.1-sol", Kind: "capacity", Count: -1})
	c := chat("gpt-6-astra", "hi", false)
	c.header["X-Spillway-Min-Tier"] = "medium"
	resp, body := r.do(t, c)
	if resp.StatusCode != 503 || bytes.Contains(body, []byte("gpt-6-luna:")) {
		t.Fatalf("min tier medium must not reach light: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	for _, rec := range r.records() {
		if rec.Model == "gpt-6-luna" {
			t.Fatal("a request with min tier medium was sent to a light model")
		}
	}
	if v := classify.HTTP(resp.StatusCode, resp.Header, body); v.Class != classify.Capacity || !strings.Contains(string(body), "gpt-6-astra (capacity)") || !strings.Contains(string(body), "waited") {
		t.Fatalf("failure does not name models and classes: %s", body)
	}
	c = chat("gpt-6-astra", "hi", false)
	c.header["X-Spillway-No-Fallback"] = "1"
	before := len(r.records())
	resp, _ = r.do(t, c)
	for _, rec := range r.records()[before:] {
		if rec.Model != "gpt-6-astra" {
			t.Fatalf("no-fallback request went to %s", rec.Model)
		}
	}
	if resp.StatusCode != 503 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c.header["X-Spillway-Min-Tier"] = "gigantic"
	if resp, body := r.do(t, c); resp.StatusCode != 400 || !strings.Contains(string(body), "allowed: heavy, medium, light") {
		t.Fatalf("bad tier header: %d %s", resp.StatusCode, body)
	}
}

func TestFailFastClasses(t *testing.T) {
	for _, kind := range []string{"quota", "auth"} {
		t.Run(kind, func(t *testing.T) {
			r := newRig(t, nil, nil)
			r.fault(t, sim.Fault{Model: "*", Kind: kind, Count: -1})
			resp, body := r.do(t, chat("gpt-6-astra", "hi", false))
			if v := classify.HTTP(resp.StatusCode, resp.Header, body); string(v.Class) != kind {
				t.Fatalf("class %s, want %s: %d %s", v.Class, kind, resp.StatusCode, body)
			}
			if n := len(r.records()); n != 1 {
				t.Fatalf("%d attempts for a fail-fast class, want 1", n)
			}
			if resp.Header.Get("X-Should-Retry") != "false" {
				t.Fatal("fail-fast answer should tell SDKs not to retry")
			}
		})
	}
	t.Run("bad request passes the upstream error through", func(t *testing.T) {
		r := newRig(t, nil, nil)
		resp, body := r.do(t, call{"/v1/chat/completions", `{"model":"gpt-6-astra","messages":"` + strings.Repeat("x ", 700000) + `"}`, map[string]string{"Authorization": "Bearer k"}})
		if resp.StatusCode != 400 || !strings.Contains(string(body), "maximum context length") {
			t.Fatalf("%d %s", resp.StatusCode, body[:min(len(body), 300)])
		}
	})
}

func TestContextLengthMovesToALargerWindow(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) { c.Chains["codex"] = []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra"} })
	big := strings.Repeat("word ", 300000) // ~375k tokens by the sim's count: over 272k, under 500k
	resp, body := r.do(t, chat("gpt-6-astra", big, false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gpt-6.1-terra" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body[:min(300, len(body))])
	}
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "rate_limit", Count: 1, RetryAfter: 0.4})
	t0 := time.Now()
	resp, _ := r.do(t, chat("gpt-6-luna", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gpt-6-luna" {
		t.Fatalf("status %d model %s", resp.StatusCode, resp.Header.Get("X-Spillway-Model"))
	}
	recs := r.records()
	if len(recs) != 2 || recs[1].WaitMS < 400 {
		t.Fatalf("records %+v", recs)
	}
	// no attempt before the retry-after: the simulator saw them 400ms+ apart
	st := r.sim.Snapshot().Models["gpt-6-luna"]
	if len(st.Starts) != 1 || time.Since(t0) < 400*time.Millisecond {
		t.Fatalf("starts %v elapsed %v", st.Starts, time.Since(t0))
	}
	if st.Received != 2 {
		t.Fatalf("received %d", st.Received)
	}
}

func TestRetryAfterFloorsCapacityBackoff(t *testing.T) {
	// a chain of one (no fallback): after capacity with retry-after 0.3s,
	// the next attempt comes no sooner
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "capacity", Count: 1, RetryAfter: 0.3})
	resp, _ := r.do(t, chat("gpt-6-luna", "hi", false))
	recs := r.records()
	if resp.StatusCode != 200 || len(recs) != 2 || recs[1].WaitMS < 300 {
		t.Fatalf("%d %+v", resp.StatusCode, recs)
	}
}

func TestNoTightLoops(t *testing.T) {
	// everything full: attempts are spaced by backoff and the request ends
	// within its budget with a clear failure
	r := newRig(t, nil, func(c *config.Config) { c.Retry.Budget = config.Duration(600 * time.Millisecond) })
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
		r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}
	t0 := time.Now()
	resp, body := r.do(t, responses("gpt-6-astra", "hi", false))
	el := time.Since(t0)
	if resp.StatusCode != 503 || el > 3*time.Second {
		t.Fatalf("%d after %v: %s", resp.StatusCode, el, body)
	}
	recs := r.records()
	walks := 0
	for i, rec := range recs {
		if i > 0 && rec.Model == "gpt-6-astra" {
			walks++
			if rec.WaitMS < 5 { // backoff_base 20ms / 4
				t.Fatalf("a new walk of the chain started with no wait: %+v", rec)
			}
		}
	}
	if len(recs) > 3*(walks+1) || len(recs) > 60 {
		t.Fatalf("%d attempts in %v: a tight loop", len(recs), el)
	}
}

func TestNetworkRetriesSameModel(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "reset", Count: 2})
	resp, body := r.do(t, chat("gpt-6-astra", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gpt-6-astra" || resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:ok" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	recs := r.records()
	if recs[1].WaitMS < 30 || recs[2].WaitMS < 30 {
		t.Fatalf("network retries without the fixed gap: %+v", recs)
	}
	// persisting network failure: fail after network_retries, never switch
	r2 := newRig(t, nil, nil)
	r2.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "reset", Count: -1})
	resp, body = r2.do(t, chat("gpt-6-astra", "hi", false))
	for _, rec := range r2.records() {
		if rec.Model != "gpt-6-astra" {
			t.Fatal("switched model for a network failure")
		}
	}
	if resp.StatusCode != 502 || len(r2.records()) != 4 {
		t.Fatalf("%d after %d attempts: %s", resp.StatusCode, len(r2.records()), body)
	}
}

func TestServerErrorRetriedThenCapacity(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "server_error", Count: -1})
	resp, _ := r.do(t, chat("gpt-6-astra", "hi", false))
	if got := resp.Header.Get("X-Spillway-Route"); got != "gpt-6-astra:server_error > gpt-6-astra:server_error > gpt-6.1-sol:ok" {
		t.Fatalf("route %q", got)
	}
}

func TestModelNotFoundSkipped(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		c.Models["gpt-ghost"] = config.Model{Provider: "openai", Tier: config.Heavy, Context: 272000}
		c.Chains["codex"] = []string{"gpt-ghost", "gpt-6.1-sol", "gpt-6-luna"}
	})
	resp, _ := r.do(t, chat("gpt-ghost", "hi", false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Route") != "gpt-ghost:model_not_found > gpt-6.1-sol:ok" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
}

func TestBrokenStreamsNeverLookComplete(t *testing.T) {
	three := 3
	cases := []struct {
		name  string
		c     call
		fault sim.Fault
		want  string // the protocol's error event
	}{
		{"responses reset after output", responses("gpt-6-luna", "hi", true), sim.Fault{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three}, "event: response.failed"},
		{"messages reset after output", messages("claude-haiku-5-5", "hi", true), sim.Fault{Model: "claude-haiku-5-5", Kind: "reset", AfterTokens: &three}, "event: error"},
		{"chat reset after output", chat("gpt-6-luna", "hi", true), sim.Fault{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three}, `"code":"stream_interrupted"`},
		{"responses stall after output (idle timeout)", responses("gpt-6-luna", "hi", true), sim.Fault{Model: "gpt-6-luna", Kind: "stall", AfterTokens: &three}, "event: response.failed"},
		{"messages overloaded mid-stream passes through", messages("claude-haiku-5-5", "hi", true), sim.Fault{Model: "claude-haiku-5-5", Kind: "midstream"}, "overloaded_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, func(cfg *config.Config) { cfg.Gateway.Idle = config.Duration(300 * time.Millisecond) })
			r.fault(t, c.fault)
			resp, body := r.do(t, c.c)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if !bytes.Contains(body, []byte(c.want)) {
				t.Fatalf("no protocol error event %q:\n%s", c.want, body)
			}
			for _, done := range []string{"response.completed", "message_stop", "[DONE]"} {
				if bytes.Contains(body, []byte(done)) {
					t.Fatalf("a broken stream carries %s:\n%s", done, body)
				}
			}
			if !strings.Contains(text(body), "[") {
				t.Fatalf("the output that had started was not passed through:\n%s", body)
			}
			if recs := r.records(); len(recs) != 1 || recs[0].Class == "ok" {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

func TestFirstTokenTimeoutRetriesBeforeAnyByte(t *testing.T) {
	zero := 0
	r := newRig(t, nil, func(cfg *config.Config) { cfg.Gateway.FirstToken = config.Duration(200 * time.Millisecond) })
	// headers and opening events, then silence: the client must see nothing
	// of it, and the retry on the same model answers
	r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "stall", AfterTokens: &zero, Count: 1})
	resp, body := r.do(t, responses("gpt-6-luna", "hi", true))
	if resp.StatusCode != 200 || text(body) != sim.Answer("gpt-6-luna", "hi", 16) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := strings.Count(string(body), "event: response.created"); n != 1 {
		t.Fatalf("the client saw %d response.created events", n)
	}
	if got := resp.Header.Get("X-Spillway-Route"); got != "gpt-6-luna:timeout > gpt-6-luna:ok" {
		t.Fatalf("route %q", got)
	}
}

func TestBreakerOpensAndRequestsStartAtMedium(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		c.Breaker = config.Breaker{Failures: 2, Window: config.Duration(time.Minute), Cooldown: config.Duration(300 * time.Millisecond)}
	})
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 2})
	r.do(t, chat("gpt-6-astra", "a", false))
	r.do(t, chat("gpt-6-astra", "b", false))
	heavyBefore := r.sim.Snapshot().Models["gpt-6-astra"].Received
	resp, _ := r.do(t, chat("gpt-6-astra", "c", false))
	if resp.Header.Get("X-Spillway-Model") != "gpt-6.1-sol" || r.sim.Snapshot().Models["gpt-6-astra"].Received != heavyBefore {
		t.Fatalf("while heavy is open the request must start at medium without touching heavy: %v", resp.Header)
	}
	if !strings.HasPrefix(resp.Header.Get("X-Spillway-Route"), "gpt-6-astra:breaker_open") {
		t.Fatalf("route %q", resp.Header.Get("X-Spillway-Route"))
	}
	st := statusOf(t, r)
	if st.Breakers["openai/gpt-6-astra"] != "open" {
		t.Fatalf("status breakers %v", st.Breakers)
	}
	time.Sleep(400 * time.Millisecond) // gobreaker's cooldown runs on the wall clock
	resp, _ = r.do(t, chat("gpt-6-astra", "d", false))
	if resp.Header.Get("X-Spillway-Model") != "gpt-6-astra" {
		t.Fatalf("the probe after cooldown should go to heavy: %v", resp.Header)
	}
	if st := statusOf(t, r); st.Breakers["openai/gpt-6-astra"] != "closed" {
		t.Fatalf("breaker after a good probe: %v", st.Breakers)
	}
}

type status struct {
	Breakers        map[string]string  `json:"breakers"`
	RecentFallbacks []gateway.Fallback `json:"recent_fallbacks"`
}

func statusOf(t *testing.T, r *rig) status {
	resp, err := http.Get(r.url + "/spillway/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st status
	json.NewDecoder(resp.Body).Decode(&st)
	return st
}

func TestObservability(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 1})
	r.do(t, chat("gpt-6-astra", "hi", false))
	resp, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`spillway_fallbacks_total{class="capacity",from="gpt-6-astra",to="gpt-6.1-sol"} 1`,
		`spillway_attempts_total{class="capacity",model="gpt-6-astra"} 1`,
		`spillway_requests_total{endpoint="/v1/chat/completions",outcome="ok"} 1`,
		`spillway_request_duration_seconds_bucket`, `spillway_upstream_ttfb_seconds_bucket`, `spillway_inflight_requests 0`,
	} {
		if !bytes.Contains(m, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if st := statusOf(t, r); len(st.RecentFallbacks) != 1 || st.RecentFallbacks[0].To != "gpt-6.1-sol" {
		t.Fatalf("status fallbacks %+v", st.RecentFallbacks)
	}
	if resp, _ := http.Get(r.url + "/healthz"); resp.StatusCode != 200 {
		t.Fatal("healthz")
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "*", Kind: "auth", Count: -1})
	c := chat("gpt-6-astra", "hi", false)
	secret := "sk-proj-SUPERSECRETVALUE0123456789"
	c.header["Authorization"] = "Bearer " + secret
	resp, _ := r.do(t, c)
	if resp.StatusCode != 401 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	blob, _ := json.Marshal(r.records())
	r.mu.Lock()
	logs := r.logs.String()
	r.mu.Unlock()
	for _, where := range []string{string(blob), logs} {
		if strings.Contains(where, "SUPERSECRETVALUE") {
			t.Fatalf("the key reached a log:\n%s", where)
		}
	}
}

func TestBadInput(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) { c.Gateway.MaxBodyMB = 1 })
	cases := []struct {
		c    call
		code int
		want string
	}{
		{call{"/v1/chat/completions", `{"model":`, nil}, 400, "not a JSON object"},
		{call{"/v1/messages", `{"messages":[]}`, nil}, 400, `no \"model\"`},
		{call{"/v1/chat/completions", `{"model":"x","m":"` + strings.Repeat("y", 2<<20) + `"}`, nil}, 413, "larger than 1 MiB"},
	}
	for _, c := range cases {
		resp, body := r.do(t, c.c)
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s", c.c.body[:min(30, len(c.c.body))], resp.StatusCode, body)
		}
	}
	if len(r.records()) != 0 {
		t.Fatal("bad input was sent upstream")
	}
}

func TestPacingAsTheUpstreamSeesIt(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		c.Pacing = config.Pacing{MinGap: config.Duration(80 * time.Millisecond), MaxConcurrency: 2}
	})
	r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "slow", Count: -1, DelayMS: 15})
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, _ := r.do(t, chat("gpt-6-luna", "pace", true)); resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	st := r.sim.Snapshot().Models["gpt-6-luna"]
	if st.PeakConcurrency > 2 || len(st.Starts) != 6 {
		t.Fatalf("peak concurrency %d (limit 2), starts %d", st.PeakConcurrency, len(st.Starts))
	}
	// the pacer spaces sends 80ms apart; the simulator stamps them one
	// loopback hop later, whose jitter (large under -race) can shift a
	// single gap, but not the average
	for i := 1; i < len(st.Starts); i++ {
		if gap := st.Starts[i] - st.Starts[i-1]; gap < 60 {
			t.Fatalf("starts %v: gap %dms far under min_gap 80ms", st.Starts, gap)
		}
	}
	if n := len(st.Starts); n > 1 {
		if avg := (st.Starts[n-1] - st.Starts[0]) / int64(n-1); avg < 78 {
			t.Fatalf("starts %v: average gap %dms under min_gap 80ms", st.Starts, avg)
		}
	}
}

func TestCredentials(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	scn.Keys = map[string]sim.Key{"sk-client-revoked-000": {State: "invalid"}}
	c := chat("gpt-6-luna", "hi", false)
	c.header["Authorization"] = "Bearer sk-client-revoked-000"
	// passthrough (default): the client's own key reaches the provider
	r := newRig(t, scn, nil)
	if resp, _ := r.do(t, c); resp.StatusCode != 401 {
		t.Fatalf("passthrough: %d, want the provider's 401 for the client's key", resp.StatusCode)
	}
	// auth: key: the configured key replaces it
	r = newRig(t, scn, func(cfg *config.Config) {
		p := cfg.Providers["openai"]
		p.Auth, p.APIKey = "key", config.Secret{Ref: "env:X", Value: "sk-configured-key-123"}
		cfg.Providers["openai"] = p
	})
	if resp, body := r.do(t, c); resp.StatusCode != 200 {
		t.Fatalf("auth key: %d %s", resp.StatusCode, body)
	}
}

func TestNoHeadersWithinTheFirstTokenTimeout(t *testing.T) {
	r := newRig(t, nil, func(cfg *config.Config) { cfg.Gateway.FirstToken = config.Duration(200 * time.Millisecond) })
	r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "stall", Count: 1}) // accepts, then says nothing at all
	t0 := time.Now()
	resp, body := r.do(t, responses("gpt-6-luna", "hi", true))
	if resp.StatusCode != 200 || text(body) != sim.Answer("gpt-6-luna", "hi", 16) || time.Since(t0) > 3*time.Second {
		t.Fatalf("%d after %v: %s", resp.StatusCode, time.Since(t0), body)
	}
	if got := resp.Header.Get("X-Spillway-Route"); got != "gpt-6-luna:timeout > gpt-6-luna:ok" {
		t.Fatalf("route %q", got)
	}
}

func TestAStalledClientDoesNotHoldTheModel(t *testing.T) {
	// answers of ~100k tokens (megabytes of SSE): a client that does not
	// read fills the socket buffers and blocks the gateway's writes
	scn, _ := sim.Builtin("calm")
	scn.AnswerTokens = 100000
	r := newRig(t, scn, func(cfg *config.Config) {
		cfg.Pacing = config.Pacing{MaxConcurrency: 1}
		cfg.Gateway.Idle = config.Duration(300 * time.Millisecond)
		cfg.Retry.Budget = config.Duration(5 * time.Second)
	})
	req, _ := http.NewRequest("POST", r.url+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-6-luna","stream":true,"messages":[{"role":"user","content":"long"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	stalled, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Body.Close() // never read
	time.Sleep(100 * time.Millisecond)
	// another client still gets the model: the stalled one's writes time out
	t0 := time.Now()
	resp, _ := r.do(t, chat("gpt-6-luna", "me too", false))
	if resp.StatusCode != 200 || time.Since(t0) > 4*time.Second {
		t.Fatalf("%d after %v", resp.StatusCode, time.Since(t0))
	}
}

// Keep-alive comments after output started keep the stream alive past the
// idle timeout, and reach the client.
func TestKeepAliveCommentsKeepAStreamAlive(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
		fmt.Fprint(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"thinking\"}\n\n")
		rc.Flush()
		for i := 0; i < 5; i++ {
			time.Sleep(100 * time.Millisecond)
			fmt.Fprint(w, ": keep-alive\n")
			rc.Flush()
		}
		fmt.Fprint(w, "\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":1}}}\n\n")
	}))
	defer up.Close()
	r := newRig(t, nil, func(cfg *config.Config) {
		cfg.Gateway.Idle = config.Duration(250 * time.Millisecond)
		p := cfg.Providers["openai"]
		p.BaseURL = up.URL + "/v1"
		cfg.Providers["openai"] = p
	})
	resp, body := r.do(t, responses("gpt-6-luna", "hi", true))
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("response.completed")) || bytes.Contains(body, []byte("response.failed")) || !bytes.Contains(body, []byte(": keep-alive")) {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
}

func TestClientBudgetHeader(t *testing.T) {
	// retry.budget is 300ms; the light model stays full for the first 4
	// attempts (spaced by 20–100ms backoff, well past 300ms in all)
	cases := []struct {
		name   string
		budget string
		status int
	}{
		{"the configured budget runs out", "", 503},
		{"a client's longer budget waits it out", "20s", 200},
		{"a client's shorter budget fails sooner", "1ms", 503},
		{"a bad value is refused before anything is sent", "soon", 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, func(c *config.Config) {
				c.Retry.Budget = config.Duration(300 * time.Millisecond)
				c.Retry.BackoffBase = config.Duration(200 * time.Millisecond)
				c.Retry.BackoffMax = config.Duration(400 * time.Millisecond)
			})
			r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "capacity", Count: 4})
			call := chat("gpt-6-luna", "hi", false)
			if c.budget != "" {
				call.header["X-Spillway-Budget"] = c.budget
			}
			resp, body := r.do(t, call)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			got := r.sim.Snapshot().Models["gpt-6-luna"]
			switch c.status {
			case 200:
				if got == nil || got.Received != 5 {
					t.Fatalf("the simulator saw %+v, want 5 attempts", got)
				}
			case 400:
				if got != nil && got.Received != 0 || !strings.Contains(string(body), "X-Spillway-Budget") {
					t.Fatalf("sent upstream or unclear: %+v %s", got, body)
				}
			}
		})
	}
}

func TestABreakerRefusalIsNotAnAttempt(t *testing.T) {
	// heavy opens after one capacity answer and stays open: a heavy-only
	// request waits out its budget on refusals that never reach the
	// simulator, the event log or the attempt count
	r := newRig(t, nil, func(c *config.Config) {
		c.Breaker = config.Breaker{Failures: 1, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute), MaxCooldown: config.Duration(time.Minute)}
		c.Retry.Budget = config.Duration(300 * time.Millisecond)
	})
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 1})
	c := chat("gpt-6-astra", "hi", false)
	c.header["X-Spillway-Min-Tier"] = "heavy"
	resp, body := r.do(t, c)
	if resp.StatusCode != 503 || resp.Header.Get("X-Spillway-Attempts") != "1" {
		t.Fatalf("%d attempts %q: %s", resp.StatusCode, resp.Header.Get("X-Spillway-Attempts"), body)
	}
	if got := r.sim.Snapshot().Models["gpt-6-astra"].Received; got != 1 {
		t.Fatalf("the simulator saw %d requests, want the 1 that opened the breaker", got)
	}
	if recs := r.records(); len(recs) != 1 || recs[0].Class != "capacity" {
		t.Fatalf("event records %+v, want the one real attempt", recs)
	}
	if route := resp.Header.Get("X-Spillway-Route"); !strings.Contains(route, "gpt-6-astra:capacity > gpt-6-astra:breaker_open") {
		t.Fatalf("route %q", route)
	}
	if !strings.Contains(string(body), "in 1 attempt;") {
		t.Fatalf("the message counts refusals as attempts: %s", body)
	}
}

func TestModelKeyIsExact(t *testing.T) {
	// a provider reads "model" exactly; so must the router
	r := newRig(t, nil, nil)
	resp, body := r.do(t, call{"/v1/chat/completions", `{"model":"gpt-6-luna","MODEL":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Authorization": "Bearer sk-test-key-0123456789"}})
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gpt-6-luna" {
		t.Fatalf("%d routed to %q: %s", resp.StatusCode, resp.Header.Get("X-Spillway-Model"), body)
	}
	resp, body = r.do(t, call{"/v1/chat/completions", `{"Model":"gpt-6-luna","messages":[]}`, nil})
	if resp.StatusCode != 400 || !strings.Contains(string(body), `no \"model\"`) {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
}
