package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	respfmt "github.com/spillway/spillway/internal/format/responses"
	"github.com/spillway/spillway/sim"
)

// A ChatGPT plan's request, as Codex signed in with ChatGPT sends it.
func chatgptCall(model string, stream bool) call {
	c := responses(model, "hi", stream)
	c.Path = respfmt.ChatGPT.Path
	c.Header = map[string]string{"Authorization": "Bearer eyJ.plan-token-0123456789.sig", "Chatgpt-Account-Id": "acct-0123", "Originator": "codex_exec"}
	return c
}

func TestChatGPTProviderName(t *testing.T) {
	if respfmt.ChatGPT.Via != config.ChatGPT {
		t.Fatalf("the route's provider %q is not config.ChatGPT", respfmt.ChatGPT.Via)
	}
}

// The plan's route walks the plan's models on the plan's backend only, and
// the backend gets exactly the client's own credentials.
func TestChatGPTPlanSpillsWithinThePlan(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := newRig(t, nil, nil)
		r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
		resp, body := r.do(t, chatgptCall("gpt-6-astra", stream))
		if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gpt-6.1-sol" {
			t.Fatalf("stream=%v: %d %s %s", stream, resp.StatusCode, resp.Header.Get("X-Spillway-Route"), body)
		}
		for _, rec := range r.records() {
			if rec.Provider != config.ChatGPT || rec.Endpoint != respfmt.ChatGPT.Path {
				t.Fatalf("attempt %+v went elsewhere than the plan's backend", rec)
			}
		}
		want := sim.Fingerprint("eyJ.plan-token-0123456789.sig", "acct-0123")
		for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol"} {
			if got := r.sim.Snapshot().Models[m].Credentials; len(got) != 1 || got[want] != 1 {
				t.Fatalf("%s saw credentials %v, want the client's own once (%s)", m, got, want)
			}
		}
	}
}

// Every other path under the plan's prefix goes to its host as it came:
// method, path, query, credentials; the answer comes back as it went.
func TestChatGPTPlanPassesOtherPathsThrough(t *testing.T) {
	r := newRig(t, nil, nil)
	req, _ := http.NewRequest(http.MethodGet, r.url+"/backend-api/codex/models?client_version=0.169.0", nil)
	req.Header.Set("Authorization", "Bearer eyJ.plan-token-0123456789.sig")
	req.Header.Set("X-Spillway-Min-Tier", "heavy")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Sim-Path") != "/backend-api/codex/models?client_version=0.169.0" {
		t.Fatalf("%d, the backend saw %q", resp.StatusCode, resp.Header.Get("X-Sim-Path"))
	}
	if n := len(r.records()); n != 0 {
		t.Fatalf("a pass-through is no attempt of the driver's: %d records", n)
	}
}

// A gateway that serves others never carries a person's sign-in: 403 (never
// a 401 of spillway's own, which would send Codex to refresh its token), on
// every path of the route, and nothing is sent.
func TestChatGPTPlanRefusedOnASharedGateway(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		c.Gateway.Keys = []config.GatewayKey{{Name: "team", Key: config.Secret{Ref: "gw-team-key-0123456789", Value: "gw-team-key-0123456789"}, Hash: config.KeyHash("gw-team-key-0123456789")}}
	})
	resp, body := r.do(t, chatgptCall("gpt-6-astra", true))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "one person's plan is not a team's") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, r.url+"/backend-api/codex/models", nil)
	req.Header.Set("Authorization", "Bearer eyJ.plan-token-0123456789.sig")
	other, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	other.Body.Close()
	if other.StatusCode != http.StatusForbidden || other.Header.Get("X-Sim-Path") != "" {
		t.Fatalf("pass-through on a shared gateway: %d", other.StatusCode)
	}
	if n := r.sim.Snapshot().Models["gpt-6-astra"]; n != nil && n.Received > 0 {
		t.Fatal("a refused sign-in reached the backend")
	}
	// a Claude login too: 403, not the 401 that sends Claude Code to log in again
	login := messages("claude-opus-5-5", "hi", true)
	login.Header = map[string]string{"Authorization": "Bearer sk-ant-oat01-login-0123456789", "anthropic-version": "2023-06-01", "anthropic-beta": "oauth-2025-04-20"}
	if resp, body := r.do(t, login); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a Claude login on a shared gateway: %d %s", resp.StatusCode, body)
	}
}

// Claude Code logged in with a plan: its OAuth bearer goes through as it
// came, and a stream that breaks after output is not continued by a
// request of spillway's own (an API key's would be).
func TestClaudeLoginPassesThroughAndIsNeverContinued(t *testing.T) {
	oauth := func(c call) call {
		c.Header = map[string]string{"Authorization": "Bearer sk-ant-oat01-login-0123456789", "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,oauth-2025-04-20"}
		return c
	}
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: 1})
	resp, body := r.do(t, oauth(messages("claude-opus-5-5", "hi", true)))
	if resp.StatusCode != 200 || !strings.Contains(string(body), "message_stop") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	want := sim.Fingerprint("sk-ant-oat01-login-0123456789", "")
	for _, m := range []string{"claude-opus-5-5", "claude-sonnet-5-5"} {
		if got := r.sim.Snapshot().Models[m].Credentials; len(got) != 1 || got[want] != 1 {
			t.Fatalf("%s saw credentials %v, want the login's own once", m, got)
		}
	}
	for _, login := range []bool{true, false} {
		r := newRig(t, nil, nil)
		three := 3
		r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "midstream", AfterTokens: &three, Count: 1})
		c := messages("claude-opus-5-5", "hi", true)
		if login {
			c = oauth(c)
		}
		_, body := r.do(t, c)
		sent := 0
		for _, st := range r.sim.Snapshot().Models {
			sent += st.Received
		}
		switch {
		case login && (sent != 1 || !strings.Contains(string(body), "event: error")):
			t.Fatalf("a login's broken stream: %d requests sent, want 1 and the error event:\n%s", sent, body)
		case !login && sent != 2:
			t.Fatalf("an API key's broken stream: %d requests, want it continued (2)", sent)
		}
	}
}

// Gemini CLI signed in with Google: its Code Assist requests (wrapped) walk
// the chain on the Code Assist backend only, the answer comes back wrapped,
// the backend gets exactly the client's token, and the API's other methods
// pass through.
func TestCodeAssistSpillsWithinTheSignIn(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := newRig(t, nil, nil)
		r.fault(t, sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
		path := "/v1internal:generateContent"
		if stream {
			path = "/v1internal:streamGenerateContent?alt=sse"
		}
		c := call{Path: path, Body: `{"model":"gemini-3-pro","project":"p-1","user_prompt_id":"u-1","request":{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}}`,
			Header: map[string]string{"Authorization": "Bearer ya29.google-login-0123456789"}}
		resp, body := r.do(t, c)
		if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gemini-3-flash" || !strings.Contains(string(body), `{"response":{"candidates"`) ||
			!strings.Contains(string(body), "[gemini-3-flash]") {
			t.Fatalf("stream=%v: %d %s\n%s", stream, resp.StatusCode, resp.Header.Get("X-Spillway-Route"), body)
		}
		for _, rec := range r.records() {
			if rec.Provider != config.CodeAssist {
				t.Fatalf("attempt %+v went elsewhere than Code Assist", rec)
			}
		}
		want := sim.Fingerprint("ya29.google-login-0123456789", "")
		for _, m := range []string{"gemini-3-pro", "gemini-3-flash"} {
			if got := r.sim.Snapshot().Models[m].Credentials; len(got) != 1 || got[want] != 1 {
				t.Fatalf("%s saw credentials %v, want the login's own once", m, got)
			}
		}
	}
	r := newRig(t, nil, nil)
	resp, body := r.do(t, call{Path: "/v1internal:loadCodeAssist", Body: `{"metadata":{"pluginType":"GEMINI"}}`, Header: map[string]string{"Authorization": "Bearer ya29.google-login-0123456789"}})
	if resp.StatusCode != 200 || !strings.Contains(string(body), sim.CodeAssistProject) || len(r.records()) != 0 {
		t.Fatalf("loadCodeAssist: %d %s", resp.StatusCode, body)
	}
	shared := newRig(t, nil, func(c *config.Config) {
		c.Gateway.Keys = []config.GatewayKey{{Name: "team", Key: config.Secret{Ref: "gw-team-key-0123456789", Value: "gw-team-key-0123456789"}, Hash: config.KeyHash("gw-team-key-0123456789")}}
	})
	for _, p := range []string{"/v1internal:streamGenerateContent?alt=sse", "/v1internal:loadCodeAssist"} {
		resp, _ := shared.do(t, call{Path: p, Body: `{"model":"gemini-3-pro","request":{"contents":[]}}`, Header: map[string]string{"Authorization": "Bearer ya29.google-login-0123456789"}})
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s on a shared gateway: %d", p, resp.StatusCode)
		}
	}
}

// A plan's usage limit reaches Codex as its backend said it (Codex prints
// its own "You've hit your usage limit … try again at …" from resets_at),
// after one attempt: the limit is the account's, not the model's.
func TestChatGPTPlanUsageLimitPassesThrough(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "usage_limit", Count: -1, ResetsIn: 5400})
	resp, body := r.do(t, chatgptCall("gpt-6-astra", true))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), `"type":"usage_limit_reached"`) || !strings.Contains(string(body), `"resets_at":`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if route := routeOf(r); len(route) != 1 {
		t.Fatalf("route %v: a usage limit is the account's, one attempt", route)
	}
}

// The plan headers the backend sends (its usage windows) are kept by host,
// without the credential, in /spillway/status: a used-up window shows.
func TestStatusKeepsThePlanHeaders(t *testing.T) {
	r := newRig(t, nil, nil)
	r.do(t, chatgptCall("gpt-6-astra", false))
	r.fault(t, sim.Fault{Model: "gpt-6.1-sol", Kind: "usage_limit", Count: 1, ResetsIn: 600})
	r.do(t, chatgptCall("gpt-6.1-sol", false))
	resp, err := http.Get(r.url + "/spillway/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Plans []struct {
			Host    string            `json:"host"`
			Headers map[string]string `json:"headers"`
		} `json:"plan_limits"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	json.Unmarshal(b, &st)
	if len(st.Plans) != 1 || st.Plans[0].Headers["x-codex-primary-used-percent"] != "100.0" || st.Plans[0].Headers["x-codex-secondary-window-minutes"] != "10080" {
		t.Fatalf("plan_limits %+v", st.Plans)
	}
	if strings.Contains(string(b), "plan-token") || strings.Contains(string(b), "acct-0123") {
		t.Fatalf("the status holds the credential: %s", b)
	}
}

// An escaped ".." (which the mux does not clean) never leaves the prefix.
func TestSignInPassThroughStaysUnderItsPrefix(t *testing.T) {
	r := newRig(t, nil, nil)
	for _, p := range []string{"/backend-api/codex/%2e%2e/%2e%2e/accounts/check", "/backend-api/codex/models/%2E%2E/x", "/v1internal:loadCodeAssist/%2e%2e/%2e%2e/x"} {
		req, _ := http.NewRequest(http.MethodGet, r.url+p, nil)
		req.Header.Set("Authorization", "Bearer eyJ.plan-token-0123456789.sig")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Sim-Path") != "" {
			t.Fatalf("%s: %d, reached %q", p, resp.StatusCode, resp.Header.Get("X-Sim-Path"))
		}
	}
}

// A ChatGPT plan's account id is the sign-in's, redacted like a credential:
// a backend that echoes it in its errors does not put it in the event
// records, the gateway's log or the give-up answer.
func TestChatGPTAccountIDIsRedacted(t *testing.T) {
	const account = "4f1c2d3e-5a6b-7c8d-9e0f-a1b2c3d4e5f6"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "server_is_overloaded", "type": "service_unavailable_error",
			"message": "Our servers are currently overloaded for account " + r.Header.Get("Chatgpt-Account-Id") + ". Please try again later."}})
	}))
	defer echo.Close()
	r := newRig(t, nil, func(c *config.Config) {
		p := c.Providers[config.ChatGPT]
		p.BaseURL = echo.URL + "/backend-api/codex"
		c.Providers[config.ChatGPT] = p
		c.Retry.Budget = 0
	})
	c := chatgptCall("gpt-6-luna", false).With("Chatgpt-Account-Id", account)
	resp, body := r.do(t, c)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	recs := r.records()
	if len(recs) == 0 || recs[0].Error != "Our servers are currently overloaded for account [redacted]. Please try again later." {
		t.Fatalf("records %+v", recs)
	}
	r.mu.Lock()
	logs := r.logs.String()
	r.mu.Unlock()
	for where, text := range map[string]string{"the answer": string(body), "the log": logs} {
		if strings.Contains(text, account) {
			t.Fatalf("%s holds the account id:\n%s", where, text)
		}
	}
}
