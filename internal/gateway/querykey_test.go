package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/behaviour"
)

// A gateway key is taken from ?key= on Gemini's routes only (under
// /v1beta/ and Gemini's under /v1/), where Gemini's clients send it; on
// any other route a ?key= is no key (401).
func TestQueryKeyOnGeminiRoutesOnly(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		for name, p := range c.Providers {
			p.Auth, p.APIKey = "key", config.Secret{Ref: "sk-provider-own", Value: "sk-provider-own"}
			c.Providers[name] = p
		}
		c.Gateway.Keys = []config.GatewayKey{{Name: "alice", Hash: config.KeyHash("gw-alice-0123")}}
	})
	keyless := func(c call) call { c.Header = map[string]string{"anthropic-version": "2023-06-01"}; return c }
	for _, tc := range []struct {
		name   string
		c      call
		status int
	}{
		{"Gemini under /v1beta/", keyless(behaviour.Gemini("gemini-3-flash", "hi", false)), 200},
		{"Gemini under /v1/", call{Path: "/v1/models/gemini-3-flash:generateContent", Body: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`}, 200},
		{"Chat Completions", keyless(chat("gpt-6.1-sol", "hi", false)), 401},
		{"Responses", keyless(responses("gpt-6.1-sol", "hi", false)), 401},
		{"Messages", keyless(messages("claude-haiku-5-5", "hi", false)), 401},
	} {
		c := tc.c
		c.Path += map[bool]string{true: "&", false: "?"}[strings.Contains(c.Path, "?")] + "key=gw-alice-0123"
		if resp, body := r.do(t, c); resp.StatusCode != tc.status {
			t.Errorf("%s (%s): %d %s, want %d", tc.name, c.Path, resp.StatusCode, body, tc.status)
		}
	}
	for path, want := range map[string]int{"/v1beta/models?key=gw-alice-0123": 200, "/v1/models?key=gw-alice-0123": 200, "/v1/models?beta=true&key=gw-alice-0123&x=1": 200} {
		req, _ := http.NewRequest(http.MethodGet, r.url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
