package transport_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// In the library too a Claude login is any bearer that is not an API key:
// it goes to its own provider only (not to another passthrough provider of
// the chain), and an x-api-key beside it is sent nowhere.
func TestLibraryClaudeLoginStaysWithItsProvider(t *testing.T) {
	const token, apiKey = "team-sso-token-0123456789", "sk-ant-api03-beside-0123456789"
	r := newRigAt(t, func(c *config.Config, url string) {
		for name, p := range c.Providers {
			p.BaseURL = url
			c.Providers[name] = p
		}
		c.Providers["anthropic-b"] = config.Provider{Type: "anthropic", BaseURL: url, Auth: "passthrough"}
		c.Models["claude-sonnet-5-5-b"] = config.Model{Provider: "anthropic-b", Tier: config.Medium, Upstream: "claude-sonnet-5-5", Context: 200000}
		c.Chains["claude"] = []string{"claude-opus-5-5", "claude-sonnet-5-5-b", "claude-haiku-5-5"}
	})
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, r.url+"/v1/messages",
		strings.NewReader(`{"model":"claude-opus-5-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Api-Key", apiKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	res, err := (&http.Client{Transport: r.tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || r.route() != "claude-opus-5-5:capacity > claude-haiku-5-5:ok" {
		t.Fatalf("%d, route %s", res.StatusCode, r.route())
	}
	for name, st := range r.sim.Snapshot().Models {
		for fp := range st.Credentials {
			if fp != sim.Fingerprint(token, "") {
				t.Fatalf("%s saw credentials other than the login's", name)
			}
		}
	}
}
