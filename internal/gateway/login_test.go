package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/sim"
)

// withSecondAnthropic puts a second passthrough Anthropic provider's model
// in the claude chain between opus and haiku: an API key may spill to it,
// a login never (its credentials are for their own provider only).
func withSecondAnthropic(c *config.Config) {
	c.Providers["anthropic-b"] = config.Provider{Type: "anthropic", BaseURL: c.Providers["anthropic"].BaseURL, Auth: "passthrough"}
	c.Models["claude-sonnet-5-5-b"] = config.Model{Provider: "anthropic-b", Tier: config.Medium, Upstream: "claude-sonnet-5-5", Context: 200000}
	c.Chains["claude"] = []string{"claude-opus-5-5", "claude-sonnet-5-5-b", "claude-haiku-5-5"}
}

// A Claude login is any bearer that is not a key: whatever its prefix, and
// with an x-api-key beside it (then the x-api-key is dropped, sent nowhere,
// and the log says so without it). An API key (x-api-key, or a bearer of an
// API key's shape, as anthropic-sdk-go's WithAPIKey sends it) spills to
// another passthrough provider of the chain; a login only to its own.
func TestClaudeLoginIsAnyBearerThatIsNotAKey(t *testing.T) {
	const token, apiKey = "team-sso-token-0123456789", "sk-ant-api03-beside-0123456789"
	for _, tc := range []struct {
		name   string
		header map[string]string
		login  bool   // whether it may not go to anthropic-b
		sent   string // the credential the upstreams see
	}{
		{"x-api-key", map[string]string{"x-api-key": apiKey}, false, apiKey},
		{"an API key as a bearer", map[string]string{"Authorization": "Bearer " + apiKey}, false, apiKey},
		{"a bearer of any other shape", map[string]string{"Authorization": "Bearer " + token}, true, token},
		{"a lower-case bearer", map[string]string{"Authorization": "bearer " + token}, true, token},
		{"a plan's login", map[string]string{"Authorization": "Bearer sk-ant-oat01-login-0123456789", "anthropic-beta": "oauth-2025-04-20"}, true, "sk-ant-oat01-login-0123456789"},
		{"a login and an x-api-key", map[string]string{"Authorization": "Bearer " + token, "x-api-key": apiKey}, true, token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil, withSecondAnthropic)
			r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
			c := messages("claude-opus-5-5", "hi", false)
			c.Header = map[string]string{"anthropic-version": "2023-06-01"}
			for k, v := range tc.header {
				c.Header[k] = v
			}
			resp, body := r.do(t, c)
			want := "claude-sonnet-5-5-b"
			if tc.login {
				want = "claude-haiku-5-5"
			}
			if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != want {
				t.Fatalf("%d answered by %q (route %s), want %s: %s", resp.StatusCode, resp.Header.Get("X-Spillway-Model"), resp.Header.Get("X-Spillway-Route"), want, body)
			}
			for name, st := range r.sim.Snapshot().Models {
				for fp := range st.Credentials {
					if fp != sim.Fingerprint(tc.sent, "") {
						t.Fatalf("%s saw credentials %s, want only %s's", name, fp, tc.sent)
					}
				}
			}
			r.mu.Lock()
			logs := r.logs.String()
			r.mu.Unlock()
			if dropped := strings.Contains(logs, "x-api-key dropped"); dropped != (tc.login && tc.header["x-api-key"] != "") || strings.Contains(logs, apiKey) {
				t.Fatalf("the log (dropped noted: %v, want %v; never the key):\n%s", dropped, !dropped, logs)
			}
		})
	}
}

// On a gateway with keys no credential is a login: a gateway key sent as a
// bearer is admitted (and replaced by the provider's own), a plan's login
// is refused as a sign-in (403), any other unknown bearer as a bad key.
func TestNoLoginOnAGatewayWithKeys(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		for name, p := range c.Providers {
			p.Auth, p.APIKey = "key", config.Secret{Ref: "sk-provider-own", Value: "sk-provider-own"}
			c.Providers[name] = p
		}
		c.Gateway.Keys = []config.GatewayKey{{Name: "alice", Hash: config.KeyHash("gw-alice-0123")}}
	})
	for _, tc := range []struct {
		bearer, beta string
		status       int
	}{
		{"gw-alice-0123", "", 200},
		{"sk-ant-oat01-login-0123456789", "oauth-2025-04-20", 403},
		{"someone-elses-token", "", 401},
	} {
		c := messages("claude-haiku-5-5", "hi", false)
		c.Header = map[string]string{"anthropic-version": "2023-06-01", "Authorization": "Bearer " + tc.bearer}
		if tc.beta != "" {
			c.Header["anthropic-beta"] = tc.beta
		}
		if resp, body := r.do(t, c); resp.StatusCode != tc.status {
			t.Fatalf("bearer %s: %d %s, want %d", tc.bearer, resp.StatusCode, body, tc.status)
		}
	}
}

// Claude Code with ANTHROPIC_AUTH_TOKEN (a bearer of no known shape, no
// oauth beta), alone and beside ANTHROPIC_API_KEY (it then sends both
// headers): a login, answered by its own provider's next model, never sent
// to the other provider, the API key sent nowhere.
func TestClaudeCodeAuthTokenIsALogin(t *testing.T) {
	clienttest.Claude(t)
	const token, apiKey = "corp-gateway-token-0123456789", "sk-ant-api03-unused-0123456789"
	for _, both := range []bool{false, true} {
		r := newRig(t, nil, withSecondAnthropic)
		r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		zero := 0
		opts := clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: "Reply with pong", AuthToken: token, MaxRetries: &zero}
		if both {
			opts.APIKey = apiKey
		}
		res := clienttest.RunClaude(t, ctx, opts)
		cancel()
		if want := sim.Answer("claude-haiku-5-5", opts.Prompt, 16); res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
			t.Fatalf("both=%v: exit %d, stdout %q lacks %q\nstderr: %s", both, res.ExitCode, res.Stdout, want, res.Stderr)
		}
		snap := r.sim.Snapshot().Models
		if st := snap["claude-sonnet-5-5"]; st != nil && st.Received > 0 {
			t.Fatalf("both=%v: the login went to another provider (%v)", both, st.Credentials)
		}
		for _, m := range []string{"claude-opus-5-5", "claude-haiku-5-5"} {
			if got := snap[m].Credentials; len(got) != 1 || got[sim.Fingerprint(token, "")] == 0 {
				t.Fatalf("both=%v: %s saw %v, want the token's alone", both, m, got)
			}
		}
	}
}
