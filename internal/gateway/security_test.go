package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// The secrets of the team gateway these tests probe. The provider's key
// has no shape a pattern knows: only the configuration's own secrets can
// catch it.
const (
	teamProvider = "team-provider-secret-0123456789"
	aliceKey     = "alice-gateway-key-0123456789"
	teamAdmin    = "team-admin-key-0123456789"
	teamMetrics  = "team-metrics-key-0123456789"
)

// hostile is an upstream that echoes what it is sent: the credentials in
// its error messages, in-stream errors and headers, the account's headers
// on every answer. It keeps every request it got.
type hostile struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []*http.Request
	hold    chan struct{} // a request for "gpt-6-sol" waits here until release
	release func()
	arrived chan struct{} // a request for "gpt-6-sol" says here that it is held
}

func newHostile(t *testing.T) *hostile {
	h := &hostile{hold: make(chan struct{}), arrived: make(chan struct{}, 16)}
	h.release = sync.OnceFunc(func() { close(h.hold) })
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	t.Cleanup(h.release) // (first: Close waits for the held request)
	return h
}

// waitHeld waits until a request for "gpt-6-sol" is held at the upstream.
func (h *hostile) waitHeld(t *testing.T, what string) {
	t.Helper()
	select {
	case <-h.arrived:
	case <-time.After(20 * time.Second): // a bound on a real server's request, not a timing
		t.Fatalf("%s never reached the upstream", what)
	}
}

func (h *hostile) requests() []*http.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*http.Request(nil), h.got...)
}

func (h *hostile) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.got = append(h.got, r)
	h.mu.Unlock()
	var req struct {
		Model  string
		Stream bool
	}
	_ = json.Unmarshal(b, &req)
	cred := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key") + r.Header.Get("X-Goog-Api-Key")
	w.Header().Set("Set-Cookie", "session=team-account-cookie")
	w.Header().Set("Openai-Organization", "org-team")
	w.Header().Set("X-Echo", cred)
	switch {
	case req.Model == "gpt-6-luna":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"bad request: you sent %q","type":"invalid_request_error","code":"invalid_value"}}`, cred)
	case req.Model == "gpt-6-sol":
		select {
		case h.arrived <- struct{}{}:
		default:
		}
		<-h.hold
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"held"},"finish_reason":"stop"}]}`)
	case strings.HasPrefix(req.Model, "ghost-"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"Our servers are currently overloaded.","type":"service_unavailable_error","code":"server_is_overloaded"}}`)
	case req.Stream:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
		fmt.Fprint(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"partial\"}\n\n")
		w.(http.Flusher).Flush()
		if req.Model == "gpt-6-astra-slow" {
			time.Sleep(600 * time.Millisecond) // longer than the gateway's read_timeout
			fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":1}}}\n\n")
			return
		}
		msg, _ := json.Marshal("stream failed for " + cred)
		fmt.Fprintf(w, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"invalid_value\",\"message\":%s}}}\n\n", msg)
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}
}

// team is a gateway as a team runs it: on 0.0.0.0 with gateway keys, its
// providers' own key, an admin and a metrics key, in front of a hostile
// upstream. url is its loopback address.
type team struct {
	url  string
	up   *hostile
	gw   *gateway.Server
	clk  *policytest.Clock
	mu   sync.Mutex
	recs []events.Record
	logs bytes.Buffer
}

func (tm *team) text() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	var b strings.Builder
	b.WriteString(tm.logs.String())
	for _, r := range tm.recs {
		j, _ := json.Marshal(r)
		b.Write(j)
	}
	return b.String()
}

// newTeam starts the team gateway on listen (0.0.0.0:0, or a loopback
// address) with the file body extra added.
func newTeam(t *testing.T, listen, extra string) *team {
	t.Helper()
	return newTeamWith(t, listen, "  read_timeout: 300ms\n  keepalive_timeout: 300ms\n"+extra)
}

// newTeamWith is newTeam with section the file's gateway: section but for
// its keys.
func newTeamWith(t *testing.T, listen, section string) *team {
	t.Helper()
	tm := &team{up: newHostile(t), clk: policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
	keys := ""
	if !strings.HasPrefix(listen, "127.") {
		keys = "  keys: [{ name: alice, key: env:ALICE }]\n"
	}
	file := fmt.Sprintf("listen: %q\nproviders:\n  openai: { base_url: %q, api_key: env:PROVIDER, auth: key }\n  anthropic: { base_url: %q, api_key: env:PROVIDER, auth: key }\n  gemini: { base_url: %q, api_key: env:PROVIDER, auth: key }\n"+
		"gateway:\n  admin_key: env:ADMIN\n  metrics_key: env:METRICS\n%s%s",
		listen, tm.up.srv.URL+"/v1", tm.up.srv.URL, tm.up.srv.URL, keys, section)
	env := map[string]string{"PROVIDER": teamProvider, "ALICE": aliceKey, "ADMIN": teamAdmin, "METRICS": teamMetrics}
	cfg, err := config.Parse("team.yaml", []byte(file), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retry.Budget = config.Duration(time.Second)
	logger := newTestLogger(&tm.logs, &tm.mu)
	gw, err := gateway.New(gateway.Options{Config: cfg, Engine: policy.New(cfg, policy.WithClock(tm.clk)), Logger: logger, Dashboard: page{},
		Events: events.SinkFunc(func(r events.Record) { tm.mu.Lock(); tm.recs = append(tm.recs, r); tm.mu.Unlock() })})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan struct{})
	go func() { defer close(done); gw.ListenAndServe(ctx, cfg.Listen, func(a net.Addr) { addr <- a }) }()
	t.Cleanup(func() { cancel(); <-done })
	a := <-addr
	_, port, _ := net.SplitHostPort(a.String())
	tm.url, tm.gw = "http://127.0.0.1:"+port, gw
	return tm
}

// page is a dashboard that serves its paths and hears nothing.
type page struct{}

func (page) Fallback(time.Time, string, string, string, string) {}
func (page) Close()                                             {}
func (page) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "the dashboard") })
}

// post sends body to path as alice (her key where an OpenAI SDK sends
// one), with the extra headers.
func (tm *team) post(t *testing.T, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, tm.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return tm.do(t, req)
}

func (tm *team) do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// 1: a model name in a Gemini path cannot take the team's key to another
// path of the provider's host, add a query or cut the method.
func TestTeamGeminiPathStaysInItsSegment(t *testing.T) {
	tm := newTeam(t, "0.0.0.0:0", "")
	for _, seg := range []string{"..%2F..%2Fanything%23", "gemini-3-pro%3Fkey%3Dx", "x%2F..%2F..%2Fv1%2Ffiles", "gemini-3-pro%23"} {
		resp, b := tm.post(t, "/v1beta/models/"+seg+":generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "cannot go in a URL") {
			t.Fatalf("%s: %d %s", seg, resp.StatusCode, b)
		}
	}
	if got := tm.up.requests(); len(got) != 0 {
		t.Fatalf("the upstream got %d requests, the first for %s", len(got), got[0].URL)
	}
	// a good name goes, escaped, to its own path
	if resp, b := tm.post(t, "/v1beta/models/gemini-3-pro:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if got := tm.up.requests(); len(got) != 1 || got[0].URL.Path != "/v1beta/models/gemini-3-pro:generateContent" || got[0].URL.RawQuery != "" {
		t.Fatalf("requests %v", got)
	}
}

// 2: a client that sends its headers and no body is cut off at
// read_timeout, and an idle keep-alive connection at keepalive_timeout;
// a stream that lasts longer than read_timeout is not cut.
func TestTeamTimeouts(t *testing.T) {
	tm := newTeam(t, "0.0.0.0:0", "")
	addr := strings.TrimPrefix(tm.url, "http://")
	closed := func(c net.Conn) error {
		c.SetReadDeadline(time.Now().Add(20 * time.Second)) // the test's own bound, far past the gateway's
		_, err := io.Copy(io.Discard, c)
		return err
	}
	// headers, then no body
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n", addr, aliceKey)
	if err := closed(c); err != nil {
		t.Fatalf("a request with no body was not cut off: %v", err)
	}
	c.Close()
	// an idle keep-alive connection
	c, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle keep-alive connection was not closed: %v", err)
	}
	c.Close()
	// a stream longer than read_timeout
	resp, b := tm.post(t, "/v1/responses", `{"model":"gpt-6-astra-slow","stream":true,"input":"hi"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "response.completed") {
		t.Fatalf("a stream longer than read_timeout: %d %s", resp.StatusCode, b)
	}
}

// 3: no web page can use a loopback gateway: a cross-site form post is
// refused before anything is sent, a DNS rebinding name gets nothing, a
// link to the dashboard still opens it; the gateway's own pages and
// listed origins are let in.
func TestLoopbackRefusesOtherSites(t *testing.T) {
	tm := newTeam(t, "127.0.0.1:0", "  allowed_origins: [\"https://app.example\"]\n")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(tm.url, "http://"))
	chat := `{"model":"gpt-6-astra","messages":[{"role":"user","content":"spend the key"}]}`
	for _, c := range []struct {
		name   string
		method string
		path   string
		host   string
		header map[string]string
		want   int
	}{
		{"a cross-site text/plain form post", "POST", "/v1/chat/completions", "", map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 403},
		{"a cross-site fetch with Origin only", "POST", "/v1/chat/completions", "", map[string]string{"Origin": "https://evil.example"}, 403},
		{"a same-site page of another port", "POST", "/v1/messages", "", map[string]string{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"}, 403},
		{"a null origin (a sandboxed page)", "POST", "/v1/chat/completions", "", map[string]string{"Origin": "null"}, 403},
		{"DNS rebinding: the status", "GET", "/spillway/status", "evil.example:" + port, nil, 403},
		{"DNS rebinding: the dashboard's state", "GET", "/ui/state", "rebind.evil.example:" + port, nil, 403},
		{"DNS rebinding: a request", "POST", "/v1/chat/completions", "evil.example:" + port, nil, 403},
		{"another site's script reading the state", "GET", "/ui/state", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, 403},
		{"a link to the dashboard from another site", "GET", "/", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 200},
		{"the dashboard's own stream", "GET", "/ui/state", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, 200},
		{"an SDK (no browser headers)", "POST", "/v1/chat/completions", "", nil, 200},
		{"localhost in Host", "POST", "/v1/chat/completions", "localhost:" + port, nil, 200},
		{"the gateway's own origin", "POST", "/v1/chat/completions", "", map[string]string{"Origin": tm.url, "Sec-Fetch-Site": "same-origin"}, 200},
		{"a listed origin", "POST", "/v1/chat/completions", "", map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(tm.up.requests())
			var body io.Reader
			if c.method == "POST" {
				body = strings.NewReader(chat)
			}
			req, _ := http.NewRequest(c.method, tm.url+c.path, body)
			if c.host != "" {
				req.Host = c.host
			}
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			req.Header.Set("X-Spillway-Admin-Key", teamAdmin)
			resp, b := tm.do(t, req)
			if resp.StatusCode != c.want {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, c.want, b)
			}
			if c.want == 403 && len(tm.up.requests()) != before {
				t.Fatal("a refused request reached the upstream")
			}
		})
	}
}

// 3, beyond loopback: gateway.allowed_hosts names the gateway.
func TestTeamAllowedHosts(t *testing.T) {
	tm := newTeam(t, "0.0.0.0:0", "  allowed_hosts: [\"spillway.team.example\"]\n")
	for host, want := range map[string]int{"spillway.team.example": 200, "evil.example": 403, "127.0.0.1": 200} {
		req, _ := http.NewRequest(http.MethodPost, tm.url+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`))
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		if resp, b := tm.do(t, req); resp.StatusCode != want {
			t.Fatalf("Host %s: %d, want %d: %s", host, resp.StatusCode, want, b)
		}
	}
}

// 4: what an upstream echoes of the team's key reaches no team member, no
// log and no record: not in its error answer, not in its stream's error
// event, not in its headers; the account's headers are dropped.
func TestTeamSecretsStayHome(t *testing.T) {
	tm := newTeam(t, "0.0.0.0:0", "")
	check := func(what string, resp *http.Response, b []byte) {
		t.Helper()
		var hs strings.Builder
		resp.Header.Write(&hs)
		for _, secret := range []string{teamProvider, aliceKey} {
			if strings.Contains(string(b), secret) || strings.Contains(hs.String(), secret) {
				t.Fatalf("%s: the client got %s:\n%s\n%s", what, secret, hs.String(), b)
			}
		}
		for _, h := range []string{"Set-Cookie", "Openai-Organization"} {
			if resp.Header.Get(h) != "" {
				t.Fatalf("%s: the team's %s reached the client", what, h)
			}
		}
	}
	// the upstream's own error answer, passed on (a bad request)
	resp, b := tm.post(t, "/v1/chat/completions", `{"model":"gpt-6-luna","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "[redacted]") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	check("an error answer", resp, b)
	// an answer's headers
	resp, b = tm.post(t, "/v1/chat/completions", `{"model":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	check("an answer", resp, b)
	// an error event after the stream's output started
	resp, b = tm.post(t, "/v1/responses", `{"model":"gpt-6-astra","stream":true,"input":"hi"}`)
	if !strings.Contains(string(b), "partial") || !strings.Contains(string(b), "response.failed") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	check("a stream's error event", resp, b)
	if text := tm.text(); strings.Contains(text, teamProvider) || strings.Contains(text, aliceKey) {
		t.Fatalf("a key reached the log or a record:\n%s", text)
	}
	// the upstream did get the team's key, and never alice's
	for _, r := range tm.up.requests() {
		if r.Header.Get("Authorization") != "Bearer "+teamProvider {
			t.Fatalf("the upstream got %q", r.Header.Get("Authorization"))
		}
	}
}

// 5: model names a client makes up get no metric series and no status
// entry of their own, and their breakers are kept for the 256 used last;
// /metrics beyond loopback needs the metrics key.
func TestTeamUnknownModelsAreBounded(t *testing.T) {
	tm := newTeam(t, "0.0.0.0:0", "breaker: { failures: 1, consecutive: 1 }\n")
	for i := range 300 {
		tm.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"ghost-%d","messages":[{"role":"user","content":"hi"}]}`, i))
	}
	if n := len(tm.gw.Engine().BreakerStates()); n > len(tm.gw.Engine().Config().Models)*2 {
		t.Fatalf("%d breakers listed", n)
	}
	get := func(path, bearer string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, tm.url+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return tm.do(t, req)
	}
	if resp, _ := get("/metrics", ""); resp.StatusCode != 401 {
		t.Fatalf("/metrics without the metrics key: %d", resp.StatusCode)
	}
	if resp, _ := get("/metrics", aliceKey); resp.StatusCode != 401 {
		t.Fatalf("/metrics with a gateway key: %d", resp.StatusCode)
	}
	resp, m := get("/metrics", teamMetrics)
	if resp.StatusCode != 200 || strings.Contains(string(m), "ghost") {
		t.Fatalf("/metrics: %d, ghost series: %s", resp.StatusCode, grep(string(m), "ghost"))
	}
	req, _ := http.NewRequest(http.MethodGet, tm.url+"/spillway/status", nil)
	req.Header.Set("X-Spillway-Admin-Key", teamAdmin)
	_, sb := tm.do(t, req)
	var st struct {
		Breakers map[string]string `json:"breakers"`
		Unknown  int               `json:"unknown_models"`
	}
	json.Unmarshal(sb, &st)
	if st.Unknown != 256 || strings.Contains(string(sb), "ghost") {
		t.Fatalf("status: %d unknown, %d breakers: %s", st.Unknown, len(st.Breakers), grep(string(sb), "ghost"))
	}
}

// 6: the bytes in flight are bounded: past gateway.max_inflight_mb a
// request waits up to a second for room, then gets 503 spillway_busy with
// Retry-After: 1; once room is given back, requests go again.
func TestTeamBytesInFlight(t *testing.T) {
	tm := newTeam(t, "0.0.0.0:0", "  max_inflight_mb: 1\n  max_body_mb: 1\n")
	pad := strings.Repeat("x", 700<<10)
	held := make(chan []byte, 1)
	go func() {
		_, b := tm.post(t, "/v1/chat/completions", `{"model":"gpt-6-sol","messages":[{"role":"user","content":"`+pad+`"}]}`)
		held <- b
	}()
	// the held request is at the upstream: its body holds 700 KB
	tm.up.waitHeld(t, "the first request")
	busy := make(chan *http.Response, 1)
	go func() {
		resp, b := tm.post(t, "/v1/chat/completions", `{"model":"gpt-6-astra","messages":[{"role":"user","content":"`+pad+`"}]}`)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		busy <- resp
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tm.clk.BlockUntilDue(ctx, time.Second); err != nil { // it waits for room
		t.Fatal(err)
	}
	tm.clk.Advance(time.Second)
	resp := <-busy
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), `"code":"spillway_busy"`) || strings.Contains(string(b), "server_is_overloaded") {
		t.Fatalf("%d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if n := len(tm.up.requests()); n != 1 {
		t.Fatalf("the refused request reached the upstream (%d requests)", n)
	}
	tm.up.release()
	if b := <-held; !strings.Contains(string(b), "held") {
		t.Fatalf("the held request: %s", b)
	}
	if resp, b := tm.post(t, "/v1/chat/completions", `{"model":"gpt-6-astra","messages":[{"role":"user","content":"`+pad+`"}]}`); resp.StatusCode != 200 {
		t.Fatalf("once the room was given back: %d %s", resp.StatusCode, b)
	}
}
