package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/sim"
)

// rig is a simulator behind a gateway, both on loopback, with the
// gateway's engine on a fake clock. The behaviours the gateway shares with
// the library are internal/behaviour's suite; these tests are the
// gateway's own (its endpoints, metrics, status, logs, credentials, the
// real clients through it).
type rig struct {
	sim    *sim.Server
	simURL string
	gw     *gateway.Server
	url    string
	clk    *policytest.Clock
	mu     sync.Mutex
	recs   []events.Record
	// recorded is closed (and dropped) at the next record; waitRecords
	// makes it
	recorded chan struct{}
	logs     bytes.Buffer
}

func newRig(t testing.TB, scn *sim.Scenario, mut func(*config.Config)) *rig {
	t.Helper()
	return newRigWith(t, scn, mut, nil)
}

// newRigWith is newRig with the gateway's options changed by opt.
func newRigWith(t testing.TB, scn *sim.Scenario, mut func(*config.Config), opt func(*gateway.Options)) *rig {
	t.Helper()
	r := &rig{}
	srv, err := sim.New(sim.Options{Scenario: scn, Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	r.sim, r.simURL = srv, hs.URL
	r.clk = policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	r.start(t, mut, opt)
	return r
}

// start runs the rig's gateway in front of its simulator (r.sim at
// r.simURL), its engine on r.clk.
func (r *rig) start(t testing.TB, mut func(*config.Config), opt func(*gateway.Options)) {
	t.Helper()
	cfg := simtest.Config(r.simURL)
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
	engine := policy.New(cfg, policy.WithClock(r.clk))
	o := gateway.Options{Config: cfg, Engine: engine, Logger: logger, Events: events.SinkFunc(func(rec events.Record) {
		r.mu.Lock()
		r.recs = append(r.recs, rec)
		if r.recorded != nil {
			close(r.recorded)
			r.recorded = nil
		}
		r.mu.Unlock()
	})}
	if opt != nil {
		opt(&o)
	}
	gw, err := gateway.New(o)
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(gw.Handler())
	t.Cleanup(gs.Close)
	r.gw, r.url = gw, gs.URL
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

// waitRecords is the records once cond holds of them, checked now and at
// each record; it waits as long as waitCtx(t) lasts, then returns them as
// they are (for the caller's check to fail on). The gateway records an
// answer once it has relayed its end, which its client may have read
// already.
func (r *rig) waitRecords(t testing.TB, cond func([]events.Record) bool) []events.Record {
	ctx := waitCtx(t)
	for {
		r.mu.Lock()
		if r.recorded == nil {
			r.recorded = make(chan struct{})
		}
		recorded, recs := r.recorded, append([]events.Record(nil), r.recs...)
		r.mu.Unlock()
		if cond(recs) {
			return recs
		}
		select {
		case <-recorded:
		case <-ctx.Done():
			t.Logf("gave up waiting for records: %v", ctx.Err())
			return recs
		}
	}
}

// waitCtx is t's context, for a test's waits on events (records, the
// simulator's counts): it ends with the test, or a tenth of the time left
// before the test binary's deadline, so that a wait for what never comes
// fails the test with its own message rather than the binary's timeout.
// It is no bound on how long anything should take.
func waitCtx(t testing.TB) context.Context {
	ctx := t.Context()
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dt.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Until(d)/10))
			t.Cleanup(cancel)
		}
	}
	return ctx
}

type call = behaviour.Call

var (
	chat      = behaviour.Chat
	responses = behaviour.Responses
	messages  = behaviour.Messages
)

func (r *rig) do(t *testing.T, c call) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := c.Request(ctx, r.url)
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

// A Codex-style streaming Responses request that runs out of models gets
// the failure as a response.failed event whose code (invalid_prompt) Codex
// prints as spillway words it, once, without walking the chain again on its
// own (an HTTP 503 would make it retry four more times; server_is_overloaded
// it prints as its own "Selected model is at capacity").
func TestResponsesStreamGivesUpWithAnEvent(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) { c.Retry.Budget = 0 })
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
		r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}
	resp, body := r.do(t, responses("gpt-6-astra", "hi", true))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
		!bytes.Contains(body, []byte("event: response.failed")) || !bytes.Contains(body, []byte(`"code":"invalid_prompt"`)) ||
		!bytes.Contains(body, []byte("tried gpt-6-astra (capacity), gpt-6.1-sol (capacity), gpt-6-luna (capacity)")) {
		t.Fatalf("%d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if resp.Header.Get("X-Spillway-Model") != "" || resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity" {
		t.Fatalf("headers %v", resp.Header)
	}
	// not a stream: the provider-shaped 503
	resp, body = r.do(t, responses("gpt-6-astra", "hi", false))
	if v := classify.HTTP(resp.StatusCode, resp.Header, body); resp.StatusCode != 503 || v.Class != classify.Capacity {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestStatusShowsBreakersAndFallbacks(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		c.Breaker = config.Breaker{Failures: 2, Window: config.Duration(time.Minute), Cooldown: config.Duration(time.Minute), MaxCooldown: config.Duration(time.Minute)}
	})
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 2})
	r.do(t, chat("gpt-6-astra", "a", false))
	r.do(t, chat("gpt-6-astra", "b", false))
	st := statusOf(t, r)
	if st.Breakers["openai/gpt-6-astra"] != "open" || len(st.RecentFallbacks) != 2 || st.RecentFallbacks[0].To != "gpt-6.1-sol" || st.RecentFallbacks[0].RequestID == "" {
		t.Fatalf("status %+v", st)
	}
	var model struct{ Breaker string }
	for _, m := range st.Models {
		if m.Name == "gpt-6-astra" {
			model.Breaker = m.Breaker
		}
	}
	if model.Breaker != "open" {
		t.Fatalf("models %+v", st.Models)
	}
	r.clk.Advance(time.Minute)
	if st := statusOf(t, r); st.Breakers["openai/gpt-6-astra"] != "half-open" {
		t.Fatalf("breakers after the cooldown %v", st.Breakers)
	}
	m := metricsOf(t, r)
	if !strings.Contains(m, `spillway_breaker_state{key="openai/gpt-6-astra"} 1`) {
		t.Fatalf("breaker metric:\n%s", grep(m, "spillway_breaker_state"))
	}
}

type status struct {
	Pacing          string             `json:"pacing"`
	ProvidersDown   []string           `json:"providers_down"`
	Breakers        map[string]string  `json:"breakers"`
	RecentFallbacks []gateway.Fallback `json:"recent_fallbacks"`
	Models          []struct {
		Name    string `json:"name"`
		Breaker string `json:"breaker"`
	} `json:"models"`
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

func metricsOf(t *testing.T, r *rig) string {
	resp, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	return string(m)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestObservability(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 1})
	r.do(t, chat("gpt-6-astra", "hi", false))
	m := metricsOf(t, r)
	for _, want := range []string{
		`spillway_fallbacks_total{class="capacity",from="gpt-6-astra",to="gpt-6.1-sol"} 1`,
		`spillway_attempts_total{class="capacity",model="gpt-6-astra"} 1`,
		`spillway_attempts_total{class="ok",model="gpt-6.1-sol"} 1`,
		`spillway_requests_total{endpoint="/v1/chat/completions",outcome="ok"} 1`,
		`spillway_upstream_ttfb_seconds_count{model="gpt-6-astra"} 1`,
		`spillway_request_duration_seconds_bucket`, `spillway_inflight_requests 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if st := statusOf(t, r); len(st.RecentFallbacks) != 1 || st.RecentFallbacks[0].To != "gpt-6.1-sol" {
		t.Fatalf("status fallbacks %+v", st.RecentFallbacks)
	}
	if resp, _ := http.Get(r.url + "/healthz"); resp.StatusCode != 200 {
		t.Fatal("healthz")
	}
	r.mu.Lock()
	logs := r.logs.String()
	r.mu.Unlock()
	if !strings.Contains(logs, `"msg":"fallback"`) || !strings.Contains(logs, `"from":"gpt-6-astra"`) {
		t.Fatalf("no fallback in the log:\n%s", logs)
	}
}

// A request passed over its model for its size is a fallback like any
// other: counted with class context_length, in the status and the log.
func TestContextSkipIsAFallback(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		m := c.Models["gpt-6-astra"]
		m.Context = 1000
		c.Models["gpt-6-astra"] = m
	})
	resp, _ := r.do(t, chat("gpt-6-astra", strings.Repeat("word ", 2400), false))
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Route") != "gpt-6-astra:context_length > gpt-6.1-sol:ok" {
		t.Fatalf("%d, route %q", resp.StatusCode, resp.Header.Get("X-Spillway-Route"))
	}
	if m := metricsOf(t, r); !strings.Contains(m, `spillway_fallbacks_total{class="context_length",from="gpt-6-astra",to="gpt-6.1-sol"} 1`) {
		t.Fatalf("metrics:\n%s", grep(m, "spillway_fallbacks_total"))
	}
	if st := statusOf(t, r); len(st.RecentFallbacks) != 1 || st.RecentFallbacks[0].Class != "context_length" {
		t.Fatalf("status fallbacks %+v", st.RecentFallbacks)
	}
	r.mu.Lock()
	logs := r.logs.String()
	r.mu.Unlock()
	if !strings.Contains(logs, `"answered_by":"gpt-6.1-sol"`) || !strings.Contains(logs, `"route":"gpt-6-astra:context_length > gpt-6.1-sol:ok"`) {
		t.Fatalf("the request's log line:\n%s", logs)
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "*", Kind: "auth", Count: -1})
	c := chat("gpt-6-astra", "hi", false)
	secret := "sk-proj-SUPERSECRETVALUE0123456789"
	c.Header["Authorization"] = "Bearer " + secret
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
		{call{Path: "/v1/chat/completions", Body: `{"model":`}, 400, "not a JSON object"},
		{call{Path: "/v1/messages", Body: `{"messages":[]}`}, 400, `no \"model\"`},
		{call{Path: "/v1/chat/completions", Body: `{"model":"x","m":"` + strings.Repeat("y", 2<<20) + `"}`}, 413, "larger than 1 MiB"},
		{call{Path: "/v1/chat/completions", Body: `{"model":"gpt-6-luna"}`, Header: map[string]string{"X-Spillway-Min-Tier": "gigantic"}}, 400, "allowed: heavy, medium, light"},
		{call{Path: "/v1/chat/completions", Body: `{"model":"gpt-6-luna"}`, Header: map[string]string{"X-Spillway-Budget": "-5s"}}, 400, "not a positive duration"},
		{call{Path: "/v1/chat/completions", Body: `{"model":42,"messages":[]}`}, 400, `the request's \"model\" is a number, not a string`},
		{call{Path: "/v1/messages", Body: `{"model":{"name":"x"},"messages":[]}`}, 400, `the request's \"model\" is an object, not a string`},
	}
	for _, c := range cases {
		resp, body := r.do(t, c.c)
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s", c.c.Body[:min(30, len(c.c.Body))], resp.StatusCode, body)
		}
	}
	get := func(path string) (*http.Response, []byte) {
		resp, err := http.Get(r.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, body
	}
	resp, body := get("/v1/nothing")
	if resp.StatusCode != 404 || !strings.Contains(string(body), "no route for GET /v1/nothing") || !strings.Contains(string(body), `"code":"not_found"`) {
		t.Errorf("unknown route: %d %s", resp.StatusCode, body)
	}
	// a Gemini path's 404 is Gemini's, its code the status
	resp, body = get("/v1beta/nothing")
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"code":404`) || !strings.Contains(string(body), `"status":"NOT_FOUND"`) {
		t.Errorf("unknown Gemini route: %d %s", resp.StatusCode, body)
	}
	// a route asked with another method: 405, saying which
	resp, body = get("/v1/chat/completions")
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || !strings.Contains(string(body), "GET /v1/chat/completions: this route takes POST") {
		t.Errorf("GET on a POST route: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if len(r.records()) != 0 {
		t.Fatal("bad input was sent upstream")
	}
}

func TestCredentials(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	scn.Keys = map[string]sim.Key{"sk-client-revoked-000": {State: "invalid"}}
	c := chat("gpt-6-luna", "hi", false)
	c.Header["Authorization"] = "Bearer sk-client-revoked-000"
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

func TestAStalledClientDoesNotHoldTheModel(t *testing.T) {
	// answers of ~100k tokens (megabytes of SSE): a client that does not
	// read fills the socket buffers and blocks the gateway's writes, whose
	// deadline is the idle timeout (real time: it is the socket's)
	scn, _ := sim.Builtin("calm")
	scn.AnswerTokens = 100000
	r := newRig(t, scn, func(cfg *config.Config) {
		cfg.Pacing = config.Pacing{MaxConcurrency: 1, When: config.PaceAlways}
		cfg.Timeouts.Idle = config.Duration(40 * time.Millisecond)
		cfg.Retry.Budget = config.Duration(time.Hour) // the slot wait is not what ends this
	})
	req, _ := http.NewRequest("POST", r.url+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-6-luna","stream":true,"messages":[{"role":"user","content":"long"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	stalled, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Body.Close() // never read
	// another client still gets the model: the stalled one's writes time out
	resp, _ := r.do(t, chat("gpt-6-luna", "me too", false))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	recs := r.records()
	// its record counts what was passed on before the client stalled: some, not the whole answer
	if len(recs) != 2 || recs[0].Class != "unknown" || !strings.Contains(recs[0].Error, "client went away") || recs[0].OutputTokens == 0 || recs[0].OutputTokens >= 100000 {
		t.Fatalf("records %+v", recs)
	}
}

func TestModelKeyIsExact(t *testing.T) {
	// a provider reads "model" exactly; so must the router
	r := newRig(t, nil, nil)
	resp, body := r.do(t, call{Path: "/v1/chat/completions", Body: `{"model":"gpt-6-luna","MODEL":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`, Header: map[string]string{"Authorization": "Bearer sk-test-key-0123456789"}})
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gpt-6-luna" {
		t.Fatalf("%d routed to %q: %s", resp.StatusCode, resp.Header.Get("X-Spillway-Model"), body)
	}
	resp, body = r.do(t, call{Path: "/v1/chat/completions", Body: `{"Model":"gpt-6-luna","messages":[]}`})
	if resp.StatusCode != 400 || !strings.Contains(string(body), `no \"model\"`) {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
}

// Output tokens in the record are what the client received, in every
// protocol, streamed or not.
func TestOutputTokensRecorded(t *testing.T) {
	for _, c := range []call{chat("gpt-6-luna", "count", false), chat("gpt-6-luna", "count", true), responses("gpt-6-luna", "count", true),
		responses("gpt-6-luna", "count", false), messages("claude-haiku-5-5", "count", true), messages("claude-haiku-5-5", "count", false)} {
		r := newRig(t, nil, nil)
		if strings.Contains(c.Path, "chat") && strings.Contains(c.Body, `"stream":true`) {
			c.Body = strings.Replace(c.Body, `"stream":true`, `"stream":true,"stream_options":{"include_usage":true}`, 1)
		}
		resp, _ := r.do(t, c)
		if recs := r.records(); resp.StatusCode != 200 || len(recs) != 1 || recs[0].OutputTokens != 16 {
			t.Errorf("%s %s: %d %+v", c.Path, c.Body[:40], resp.StatusCode, recs)
		}
	}
}

// pacing.when: auto is pressure in the gateway: healthy requests, one after
// another, wait nothing (a closed loop on one connection is not held to a
// request every 0.5–2 s).
func TestGatewayPacesOnlyUnderPressure(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) { c.Pacing = config.Default().Pacing })
	for i := range 20 {
		if resp, body := r.do(t, chat("gpt-6-luna", fmt.Sprint("loop ", i), false)); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	for _, rec := range r.records() {
		if rec.WaitMS != 0 {
			t.Fatalf("a healthy request waited %dms: %+v", rec.WaitMS, rec)
		}
	}
	if len(r.clk.Slept()) != 0 {
		t.Fatalf("the gateway slept %v for healthy requests", r.clk.Slept())
	}
	if st := statusOf(t, r); st.Pacing != "pressure" || st.ProvidersDown == nil || len(st.ProvidersDown) != 0 {
		t.Fatalf("status pacing %q, providers down %v", st.Pacing, st.ProvidersDown)
	}
}

// A provider whose connections all fail is named in /spillway/status.
func TestStatusNamesAProviderThatIsDown(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "*", Kind: "reset", Count: -1})
	if resp, _ := r.do(t, chat("gpt-6-luna", "hi", false)); resp.StatusCode != 502 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if st := statusOf(t, r); len(st.ProvidersDown) != 1 || st.ProvidersDown[0] != "openai" {
		t.Fatalf("providers down %v", st.ProvidersDown)
	}
}

// /readyz: ready while every chain has a deployment that is not known to
// be down; unready (503, naming the chains) once every upstream is down;
// /healthz still says the process answers.
func TestReadiness(t *testing.T) {
	r := newRig(t, nil, nil)
	ready := func() (int, map[string]any) {
		resp, err := http.Get(r.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := ready(); code != 200 || m["ready"] != true {
		t.Fatalf("a fresh gateway: %d %v", code, m)
	}
	r.fault(t, sim.Fault{Model: "*", Kind: "reset", Count: -1})
	r.do(t, chat("gpt-6-luna", "hi", false))
	if code, m := ready(); code != 503 || !strings.Contains(fmt.Sprint(m["chains_without_a_deployment"]), "codex") {
		t.Fatalf("openai down: %d %v", code, m)
	}
	r.do(t, messages("claude-haiku-5-5", "hi", false))
	r.do(t, behaviour.Gemini("gemini-3-flash", "hi", false))
	code, m := ready()
	if code != 503 || fmt.Sprint(m["providers_down"]) != "[anthropic gemini openai]" {
		t.Fatalf("every upstream down: %d %v", code, m)
	}
	if resp, _ := http.Get(r.url + "/healthz"); resp.StatusCode != 200 {
		t.Fatal("healthz")
	}
}

// One JSON line per request, every line parses, and a fallback says which
// model answered; no key reaches it.
func TestRequestLogLines(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 1})
	r.do(t, chat("gpt-6-astra", "hi", false).With("Authorization", "Bearer sk-secret-request-log-0123"))
	r.do(t, chat("gpt-6.1-sol", "hi", false))
	r.mu.Lock()
	logs := r.logs.String()
	r.mu.Unlock()
	var requests []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if m["msg"] == "request" {
			requests = append(requests, m)
		}
	}
	if len(requests) != 2 {
		t.Fatalf("%d request lines, want 2:\n%s", len(requests), logs)
	}
	first := requests[0]
	if first["model"] != "gpt-6-astra" || first["answered_by"] != "gpt-6.1-sol" || first["route"] != "gpt-6-astra:capacity > gpt-6.1-sol:ok" ||
		first["outcome"] != "ok" || first["attempts"] != float64(2) || first["request_id"] == "" {
		t.Fatalf("the fallback's line: %v", first)
	}
	if _, ok := requests[1]["answered_by"]; ok {
		t.Fatalf("a request its own model answered says answered_by: %v", requests[1])
	}
	if strings.Contains(logs, "sk-secret-request-log") {
		t.Fatal("a key reached the log")
	}
}

// Gateway keys: a request needs one (401 in the provider's shape without),
// may use only its chains (403), at most its concurrency at once (429);
// the providers get the gateway's own keys, never the client's.
func TestGatewayKeys(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	// were the client's key sent on, the simulator would refuse it
	scn.Keys = map[string]sim.Key{"gw-alice-0123": {State: "invalid"}, "gw-bob-0123": {State: "invalid"}}
	r := newRig(t, scn, func(c *config.Config) {
		for name, p := range c.Providers {
			p.Auth, p.APIKey = "key", config.Secret{Ref: "sk-provider-own", Value: "sk-provider-own"}
			c.Providers[name] = p
		}
		c.Gateway.Keys = []config.GatewayKey{
			{Name: "alice", Hash: config.KeyHash("gw-alice-0123")},
			{Name: "bob", Hash: config.KeyHash("gw-bob-0123"), Chains: []string{"claude"}, Concurrency: 1},
		}
	})
	do := func(c call) (int, string) {
		t.Helper()
		resp, body := r.do(t, c)
		return resp.StatusCode, string(body)
	}
	if code, body := do(chat("gpt-6.1-sol", "hi", false)); code != 401 || !strings.Contains(body, `"error"`) || !strings.Contains(body, "gateway key") {
		t.Fatalf("no key: %d %s", code, body)
	}
	if code, body := do(messages("claude-haiku-5-5", "hi", false).With("X-Api-Key", "wrong")); code != 401 || !strings.Contains(body, `"type":"error"`) {
		t.Fatalf("a wrong key, Anthropic's shape: %d %s", code, body)
	}
	if code, body := do(chat("gpt-6.1-sol", "hi", false).With("Authorization", "Bearer gw-alice-0123")); code != 200 {
		t.Fatalf("alice: %d %s", code, body)
	}
	if code, body := do(chat("gpt-6.1-sol", "hi", false).With("Authorization", "Bearer gw-bob-0123")); code != 403 || !strings.Contains(body, `chain \"codex\"`) || !strings.Contains(body, `"code":"permission_denied"`) {
		t.Fatalf("bob outside his chains: %d %s", code, body)
	}
	// outside its chains is a permission's refusal in each format, not a
	// bad key's (a client would tell its user to log in again)
	if code, body := do(messages("gpt-6.1-sol", "hi", false).With("X-Api-Key", "gw-bob-0123")); code != 403 || !strings.Contains(body, `"type":"permission_error"`) {
		t.Fatalf("bob outside his chains, Anthropic's shape: %d %s", code, body)
	}
	if code, body := do(behaviour.Gemini("gemini-3-flash", "hi", false).With("X-Goog-Api-Key", "gw-bob-0123")); code != 403 || !strings.Contains(body, `"code":403`) || !strings.Contains(body, `"status":"PERMISSION_DENIED"`) {
		t.Fatalf("bob outside his chains, Gemini's shape: %d %s", code, body)
	}
	if code, body := do(messages("claude-haiku-5-5", "hi", false).With("X-Api-Key", "gw-bob-0123")); code != 200 {
		t.Fatalf("bob in his chain: %d %s", code, body)
	}
	// the listings show a key its own chains' models only
	list := func(h, v string) string {
		req, _ := http.NewRequest(http.MethodGet, r.url+"/v1/models", nil)
		req.Header.Set(h, v)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := list("X-Api-Key", "gw-bob-0123"); !strings.Contains(got, "claude-opus-5-5") {
		t.Fatalf("bob's listing: %s", got)
	}
	if got := list("X-Api-Key", "gw-alice-0123"); !strings.Contains(got, "claude-haiku-5-5") {
		t.Fatalf("alice's listing: %s", got)
	}
	req, _ := http.NewRequest(http.MethodGet, r.url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer gw-bob-0123")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "gpt-6") {
			t.Fatalf("bob (chains: claude) sees the OpenAI models: %s", b)
		}
	}
	// bob's one slot taken by a request that stalls: the next is refused
	r.fault(t, sim.Fault{Model: "claude-haiku-5-5", Kind: "stall", Count: 1})
	done := make(chan struct{})
	ctx, cancelSlow := context.WithCancel(context.Background())
	defer cancelSlow()
	go func() {
		defer close(done)
		req, _ := messages("claude-haiku-5-5", "slow", false).With("X-Api-Key", "gw-bob-0123").Request(ctx, r.url)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if _, err := r.sim.WaitStats(waitCtx(t), func(st sim.Stats) bool {
		return st.Models["claude-haiku-5-5"] != nil && st.Models["claude-haiku-5-5"].Received >= 2
	}); err != nil {
		t.Fatal(err)
	}
	if code, body := do(messages("claude-haiku-5-5", "hi", false).With("X-Api-Key", "gw-bob-0123")); code != 429 || !strings.Contains(body, "spillway: key bob has 1 request in flight, its limit (gateway.keys concurrency); retry when one ends") {
		t.Fatalf("bob past his concurrency: %d %s", code, body)
	}
	cancelSlow() // the stalled request ends; its slot comes back
	<-done
	r.mu.Lock()
	logs := r.logs.String()
	r.mu.Unlock()
	if strings.Contains(logs, "gw-alice-0123") || !strings.Contains(logs, `"key":"alice"`) {
		t.Fatalf("the log names the key by name, never by value:\n%s", logs)
	}
}

// memUsage is the gateway keys' daily tokens in memory (the CLI keeps them
// in the queue's database: TestKeyUsage covers those stores).
type memUsage struct {
	mu sync.Mutex
	m  map[string]int64
}

func (u *memUsage) KeyUsed(_ context.Context, name, day string) (int64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[name+" "+day], nil
}

func (u *memUsage) KeyAdd(_ context.Context, name, day string, n int64) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.m[name+" "+day] += n
	return nil
}

// A key's daily tokens: its requests count their attempts' tokens; past
// the budget the next is refused as quota (429 insufficient_quota), until
// the next UTC day.
func TestGatewayKeyDailyTokens(t *testing.T) {
	usage := &memUsage{m: map[string]int64{}}
	r := newRigWith(t, nil, func(c *config.Config) {
		for name, p := range c.Providers {
			p.Auth, p.APIKey = "key", config.Secret{Ref: "sk-provider-own", Value: "sk-provider-own"}
			c.Providers[name] = p
		}
		c.Gateway.Keys = []config.GatewayKey{{Name: "carol", Hash: config.KeyHash("gw-carol-0123"), DailyTokens: 30}}
	}, func(o *gateway.Options) { o.Usage = usage })
	ask := func() (int, string) {
		resp, body := r.do(t, chat("gpt-6.1-sol", "say something long enough", false).With("Authorization", "Bearer gw-carol-0123"))
		return resp.StatusCode, string(body)
	}
	code, _ := ask()
	day := r.clk.Now().UTC().Format(time.DateOnly)
	used, _ := usage.KeyUsed(context.Background(), "carol", day)
	if code != 200 || used <= 0 {
		t.Fatalf("first request: %d, %d tokens counted", code, used)
	}
	for i := 0; i < 10 && used < 30; i++ {
		ask()
		used, _ = usage.KeyUsed(context.Background(), "carol", day)
	}
	resp, raw := r.do(t, chat("gpt-6.1-sol", "say something long enough", false).With("Authorization", "Bearer gw-carol-0123"))
	code, body := resp.StatusCode, string(raw)
	if code != 429 || !strings.Contains(body, "insufficient_quota") || !strings.Contains(body, "used its 30 tokens for today") {
		t.Fatalf("past the budget: %d %s", code, body)
	}
	// no retry storm against a limit that resets at midnight
	if resp.Header.Get("X-Should-Retry") != "false" || resp.Header.Get("Retry-After") != "43200" {
		t.Fatalf("refusal headers %v: want x-should-retry false and Retry-After until 00:00 UTC (12 h from noon)", resp.Header)
	}
	r.clk.Advance(24 * time.Hour) // a new UTC day
	if code, body := ask(); code != 200 {
		t.Fatalf("the next day: %d %s", code, body)
	}
}

// servedStats is model's statistics once the simulator has counted n
// answers served: a client has the end of a stream (or the whole body)
// before the simulator's handler, past its last write, counts it, so the
// count is waited for (on waitCtx(t)) rather than read at once.
func (r *rig) servedStats(t testing.TB, model string, n int) *sim.ModelStats {
	return servedStats(t, r.sim, model, n)
}

// servedStats is model's statistics at srv once srv has counted n answers
// served (or, when waitCtx(t) ends first, as they are then: nil if srv has
// seen no request for it).
func servedStats(t testing.TB, srv *sim.Server, model string, n int) *sim.ModelStats {
	st, err := srv.WaitStats(waitCtx(t), func(st sim.Stats) bool {
		m := st.Models[model]
		return m != nil && m.Served >= n || m == nil && n <= 0
	})
	if err != nil {
		t.Logf("gave up waiting for %s to serve %d: %v", model, n, err)
	}
	return st.Models[model]
}

// A request for a model of another format whose chain does not translate
// is not sent, and the answer says that once: no attempt counted, no
// "last upstream message" (there was none).
func TestAModelOfAnotherFormatIsNotSentAndSaysSo(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	r := newRig(t, scn, nil)
	resp, body := r.do(t, chat("claude-haiku-5-5", "hi", false))
	var got struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(body, &got)
	want := "spillway: bad_request: not sent: model claude-haiku-5-5 is in chain claude, which does not translate: none of its models speaks openai, the format the request came in"
	if resp.StatusCode != 400 || got.Error.Message != want {
		t.Fatalf("%d %s\nwant message %q", resp.StatusCode, body, want)
	}
	if len(r.records()) != 0 {
		t.Fatalf("records of an attempt never sent: %+v", r.records())
	}
}

// After a request, 30 s of quiet on the gateway's clock give its memory
// back, once, and /metrics counts it; the live heap is among its series
// (what the soak judges).
func TestMemoryGivenBackAfterQuiet(t *testing.T) {
	freed := make(chan struct{}, 4)
	r := newRigWith(t, nil, nil, func(o *gateway.Options) { o.GiveBack = func() { freed <- struct{}{} } })
	if resp, body := r.do(t, chat("gpt-6-astra", "hi", false)); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	m := metricsOf(t, r)
	if !strings.Contains(m, "spillway_memory_given_back_total 0") || !strings.Contains(m, "\ngo_gc_heap_live_bytes ") {
		t.Fatalf("before the quiet:\n%s", grep(m, "memory_given_back")+grep(m, "heap_live"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.clk.BlockUntilDue(ctx, 30*time.Second); err != nil {
		t.Fatalf("no give-back armed 30 s ahead after the request: %v", err)
	}
	r.clk.Advance(29 * time.Second)
	if len(freed) != 0 {
		t.Fatal("memory given back before 30 s of quiet")
	}
	r.clk.Advance(time.Second)
	select {
	case <-freed:
	case <-ctx.Done():
		t.Fatal("memory not given back after 30 s of quiet")
	}
	for !strings.Contains(metricsOf(t, r), "spillway_memory_given_back_total 1") {
		if ctx.Err() != nil {
			t.Fatalf("/metrics: %s", grep(metricsOf(t, r), "memory_given_back"))
		}
		runtime.Gosched()
	}
	r.clk.Advance(time.Hour)
	if len(freed) != 0 || r.clk.Timers() != 0 {
		t.Fatalf("given back again while idle (%d), %d timers pending", len(freed), r.clk.Timers())
	}
}

// A countTokens request in flight (a body still coming) holds the gateway
// busy like any other: no memory is given back under it.
func TestCountTokensInFlightIsNotQuiet(t *testing.T) {
	freed := make(chan struct{}, 4)
	r := newRigWith(t, nil, nil, func(o *gateway.Options) { o.GiveBack = func() { freed <- struct{}{} } })
	if resp, body := r.do(t, chat("gpt-6-astra", "hi", false)); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.clk.BlockUntilDue(ctx, 30*time.Second); err != nil {
		t.Fatalf("no give-back armed after the request: %v", err)
	}
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // before the rig's shutdown waits for it
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(r.url+"/v1beta/models/gemini-3-pro:countTokens", "application/json", pr)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	pw.Write([]byte(`{"contents":[{"parts":[{"text":"`))
	for r.clk.Timers() != 0 { // the request in flight stops the give-back's timer
		if ctx.Err() != nil {
			t.Fatal("a countTokens request in flight left the give-back armed")
		}
		runtime.Gosched()
	}
	r.clk.Advance(time.Minute)
	if len(freed) != 0 {
		t.Fatal("memory given back with a countTokens request in flight")
	}
	pw.Write([]byte(`hi"}]}]}`))
	pw.Close()
	<-done
}
