package send

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/sim"
)

func TestNewRequest(t *testing.T) {
	cfg := config.Default()
	cfg.Providers["azure"] = config.Provider{Type: "openai", BaseURL: "https://res.openai.azure.com/openai/deployments/astra-prod/",
		Query: "api-version=2024-10-21", Auth: "key", KeyHeader: "api-key", APIKey: config.Secret{Ref: "env:AZ", Value: "az-key"}}
	cfg.Providers["anthropic"] = config.Provider{Type: "anthropic", BaseURL: "https://api.anthropic.com", Auth: "key", APIKey: config.Secret{Ref: "env:AN", Value: "an-key"}}
	caller := http.Header{"Authorization": {"Bearer caller"}, "X-Spillway-Min-Tier": {"heavy"}, "Connection": {"close"}, "Openai-Beta": {"x"}}
	chat := wire.EndpointOf(wire.Chat)
	body, _ := wire.ParseBody(chat, []byte(`{"model":"gpt-6-astra","messages":[]}`))
	cases := []struct {
		name      string
		ep        wire.Endpoint
		cand      policy.Candidate
		query     string // the caller's
		url       string
		keyHeader string
		key       string
	}{
		{"passthrough: the caller's key, the caller's query", chat, policy.Candidate{Model: "gpt-6-astra", Upstream: "gpt-6-astra", Provider: "openai", Format: config.OpenAI},
			"beta=true", "https://api.openai.com/v1/chat/completions?beta=true", "Authorization", "Bearer caller"},
		{"an Azure-style deployment: its query, its key header, its model name", chat, policy.Candidate{Model: "gpt-6-astra", Upstream: "astra-prod", Provider: "azure", Format: config.OpenAI, Deployment: "azure"},
			"beta=true", "https://res.openai.azure.com/openai/deployments/astra-prod/chat/completions?api-version=2024-10-21&beta=true", "Api-Key", "az-key"},
		{"the provider's query wins over the caller's, and a caller's key= stays home", chat, policy.Candidate{Model: "gpt-6-astra", Upstream: "astra-prod", Provider: "azure", Format: config.OpenAI, Deployment: "azure"},
			"api-version=2023-01-01&key=caller-secret&beta=true", "https://res.openai.azure.com/openai/deployments/astra-prod/chat/completions?api-version=2024-10-21&beta=true", "Api-Key", "az-key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := NewRequest(context.Background(), cfg, c.ep, body, c.cand, caller, c.query)
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != c.url || req.Header.Get(c.keyHeader) != c.key {
				t.Fatalf("%s %v", req.URL, req.Header)
			}
			if req.Header.Get("X-Spillway-Min-Tier") != "" || req.Header.Get("Connection") != "" || req.Header.Get("Openai-Beta") != "x" {
				t.Fatalf("headers %v", req.Header)
			}
			if c.cand.Provider == "azure" && req.Header.Get("Authorization") != "" {
				t.Fatal("the caller's key went to a provider with a key of its own")
			}
			b, _ := io.ReadAll(req.Body)
			if want := `"model":"` + c.cand.Upstream + `"`; !strings.Contains(string(b), want) || req.ContentLength != int64(len(b)) {
				t.Fatalf("body %s", b)
			}
		})
	}
	msgs := wire.EndpointOf(wire.Messages)
	mb, _ := wire.ParseBody(msgs, []byte(`{"model":"claude-opus-5-5","max_tokens":1,"messages":[]}`))
	req, err := NewRequest(context.Background(), cfg, msgs, mb, policy.Candidate{Model: "claude-opus-5-5", Upstream: "claude-opus-5-5", Provider: "anthropic", Format: config.Anthropic},
		http.Header{"X-Api-Key": {"caller"}, "Anthropic-Version": {"2023-06-01"}}, "")
	if err != nil || req.URL.String() != "https://api.anthropic.com/v1/messages" || req.Header.Get("X-Api-Key") != "an-key" || req.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Fatalf("%v %v %v", err, req.URL, req.Header)
	}
	for _, bad := range []policy.Candidate{{Model: "x", Provider: "nowhere"}, {Model: "claude-opus-5-5", Provider: "anthropic", Format: config.Anthropic}} {
		if _, err := NewRequest(context.Background(), cfg, chat, body, bad, nil, ""); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// Room asks the model for one token with the provider's own key: no room at
// capacity, room otherwise; without a key of the provider's own it cannot
// ask.
func TestRoom(t *testing.T) {
	srv, err := sim.New(sim.Options{TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	cfg := config.Default()
	p := cfg.Providers["openai"]
	p.BaseURL, p.Auth, p.APIKey = hs.URL+"/v1", "key", config.Secret{Ref: "env:K", Value: "sk-room-test"}
	cfg.Providers["openai"] = p
	for _, c := range []struct {
		name          string
		model         string
		keyless       bool
		room, checked bool
	}{
		{"a full model", "gpt-6-astra", false, false, true},
		{"a model with room", "gpt-6.1-sol", false, true, true},
		{"no key of the provider's own", "gpt-6.1-sol", true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := cfg
			if c.keyless {
				cfg = config.Default()
			}
			cand := policy.Candidate{Model: c.model, Upstream: c.model, Provider: "openai", Format: config.OpenAI}
			room, checked := Room(context.Background(), http.DefaultTransport, cfg, cand, classify.Classify)
			if room != c.room || checked != c.checked {
				t.Fatalf("room %v checked %v", room, checked)
			}
		})
	}
}
