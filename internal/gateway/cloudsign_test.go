package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// The gateway's attempts go through a transport that signs for clouds
// (the senders refuse a cloud request through one that does not): its
// planTransport says so when the cloud transport is under it, and only
// then; a Messages request for a model on Bedrock is answered by the
// simulator's Bedrock.
func TestGatewaySignsForClouds(t *testing.T) {
	signs := func(rt http.RoundTripper) bool {
		s, ok := rt.(interface{ AuthorizesClouds() bool })
		return ok && s.AuthorizesClouds()
	}
	if signs(planTransport{rt: http.DefaultTransport}) {
		t.Error("a planTransport over a plain transport says it signs for clouds")
	}
	if !signs(planTransport{rt: cloud.NewTransport(nil, nil)}) {
		t.Error("a planTransport over the cloud transport does not say it signs for clouds")
	}
	_, url := simtest.Start(t, nil)
	cfg := simtest.Config(url)
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: url, Auth: config.AuthKey,
		APIKey: config.Secret{Value: "ABSK-gateway-test"}}
	cfg.Models = map[string]config.Model{"claude-sonnet-5-5": {Tier: config.Medium, Context: 200000,
		Deployments: []config.Deployment{{Name: "bedrock", Provider: "bedrock-east", Upstream: "us.anthropic.claude-sonnet-5-5-v1:0"}}}}
	cfg.Chains = map[string][]string{}
	s, err := New(Options{Config: cfg, Engine: policy.New(cfg, policy.WithClock(policytest.New(time.Now()))), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if !signs(s.rt) {
		t.Fatalf("the gateway's transport %T does not sign for clouds", s.rt)
	}
	gs := httptest.NewServer(s.Handler())
	defer gs.Close()
	resp, err := http.Post(gs.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"claude-sonnet-5-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "[bedrock/claude-sonnet-5-5]") {
		t.Fatalf("through the gateway to Bedrock: %d %s", resp.StatusCode, b)
	}
}
