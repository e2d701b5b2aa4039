package policy

import (
	"testing"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// A model's pools on the clouds are candidates like any deployment's, each
// naming its cloud (whose error shapes its answers come in), speaking the
// format its cloud carries for its model, and sent with spillway's own
// credentials (a key id of their own, even without an api_key).
func TestCloudCandidates(t *testing.T) {
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", Auth: config.AuthKey}
	cfg.Providers["vertex-east"] = config.Provider{Type: config.Vertex, Region: "us-east5", Project: "p", Auth: config.AuthKey}
	cfg.Providers["azure"] = config.Provider{Type: "openai", BaseURL: "https://res.openai.azure.com/openai/deployments/astra", Auth: config.AuthKey,
		APIKey: config.Secret{Ref: "env:AZ", Value: "az-key"}}
	cfg.Providers["foundry"] = config.Provider{Type: "openai", BaseURL: "https://res.cognitiveservices.azure.com/openai", Auth: config.AuthKey,
		APIKey: config.Secret{Ref: "env:AZ", Value: "az-key"}}
	cfg.Models["claude-sonnet-5-5"] = config.Model{Tier: config.Medium, Deployments: []config.Deployment{
		{Provider: "anthropic"}, {Provider: "bedrock-east", Upstream: "anthropic.claude-x-v1:0"}, {Provider: "vertex-east", Upstream: "claude-x@2025"}}}
	cfg.Models["gemini-3-pro"] = config.Model{Tier: config.Heavy, Deployments: []config.Deployment{{Provider: "gemini"}, {Provider: "vertex-east", Upstream: "gemini-2.5-pro"}}}
	cfg.Models["gpt-6-astra"] = config.Model{Tier: config.Heavy, Deployments: []config.Deployment{{Provider: "openai"}, {Provider: "azure"}, {Provider: "foundry"}}}
	e := New(cfg)
	for _, c := range []struct {
		model string
		want  []Candidate // Provider, Format, Cloud, and whether a KeyID (set: "x")
	}{
		{"claude-sonnet-5-5", []Candidate{{Provider: "anthropic", Format: config.Anthropic}, {Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock, KeyID: "x"},
			{Provider: "vertex-east", Format: config.Anthropic, Cloud: config.Vertex, KeyID: "x"}}},
		{"gemini-3-pro", []Candidate{{Provider: "gemini", Format: config.Gemini}, {Provider: "vertex-east", Format: config.Gemini, Cloud: config.Vertex, KeyID: "x"}}},
		{"gpt-6-astra", []Candidate{{Provider: "openai", Format: config.OpenAI}, {Provider: "azure", Format: config.OpenAI, Cloud: string(classify.Azure), KeyID: "x"},
			{Provider: "foundry", Format: config.OpenAI, Cloud: string(classify.Azure), KeyID: "x"}}},
	} {
		var got []Candidate
		for _, cand := range e.Candidates(Request{Model: c.model, Type: c.want[0].Format, NoFallback: true}) {
			if cand.KeyID != "" {
				cand.KeyID = "x"
			}
			got = append(got, Candidate{Provider: cand.Provider, Format: cand.Format, Cloud: cand.Cloud, KeyID: cand.KeyID})
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %+v", c.model, got)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s[%d]: %+v, want %+v", c.model, i, got[i], c.want[i])
			}
		}
	}
	// an OpenAI request may step to Claude on Bedrock: the cloud's own
	// credentials are spillway's, so the step has a key id
	cfg.Chains["codex"] = []string{"gpt-6-astra", "claude-sonnet-5-5"}
	e = New(cfg)
	for _, cand := range e.Candidates(Request{Model: "gpt-6-astra", Type: config.OpenAI}) {
		if cand.Cloud == config.Bedrock && cand.KeyID == "" {
			t.Errorf("a cross-vendor step to Bedrock has no key id: %+v", cand)
		}
	}
}

// A deployment whose own credentials are refused (spillway's: a cloud's,
// or a key of auth: key) is passed over for the model's other
// deployments; the caller's own key refused fails the request at once.
func TestOwnCredentialsRefused(t *testing.T) {
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", Auth: config.AuthKey}
	cfg.Providers["bedrock-west"] = config.Provider{Type: config.Bedrock, Region: "us-west-2", Auth: config.AuthKey}
	cfg.Providers["vertex-east"] = config.Provider{Type: config.Vertex, Region: "us-east5", Project: "p", Auth: config.AuthKey}
	keyed := cfg.Providers["anthropic"]
	keyed.Auth, keyed.APIKey = config.AuthKey, config.Secret{Ref: "env:K", Value: "own-key"}
	cfg.Providers["anthropic-own"] = keyed
	deps := []config.Deployment{{Provider: "bedrock-east", Upstream: "anthropic.claude-x-v1:0"},
		{Provider: "bedrock-west", Upstream: "anthropic.claude-x-v1:0"}, {Provider: "vertex-east", Upstream: "claude-x@2025"}}
	for _, tt := range []struct {
		name  string
		first config.Deployment // the deployment tried first, refused
		want  []string          // the providers after each refusal; "" for the request's failure
	}{
		{"a Bedrock region's credentials", deps[0], []string{"bedrock-west", "vertex-east", ""}},
		{"spillway's own key", config.Deployment{Provider: "anthropic-own"}, []string{"bedrock-east", "bedrock-west", "vertex-east", ""}},
		{"the caller's own key", config.Deployment{Provider: "anthropic"}, []string{""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg.Models["claude-sonnet-5-5"] = config.Model{Tier: config.Medium, Deployments: append([]config.Deployment{tt.first}, deps...)}
			if tt.first.Provider == deps[0].Provider {
				cfg.Models["claude-sonnet-5-5"] = config.Model{Tier: config.Medium, Deployments: deps}
			}
			e, _ := clocked(cfg, WithRand(func() float64 { return 0.5 }))
			p := e.newPlan(Request{Model: "claude-sonnet-5-5", Type: config.Anthropic, NoFallback: true})
			if st := p.start(); st.Action != send || st.Candidate.Provider != tt.first.Provider {
				t.Fatalf("start: %+v", st)
			}
			for i, want := range tt.want {
				st := p.after(classify.Verdict{Class: classify.Auth, Message: "refused"})
				switch {
				case want == "" && st.Action != fail:
					t.Fatalf("after refusal %d: %+v, want the request to fail", i+1, st)
				case want != "" && (st.Action != send || st.Candidate.Provider != want || st.Wait != 0):
					t.Fatalf("after refusal %d: %v %s (wait %v), want %s at once", i+1, st.Action, st.Candidate.Provider, st.Wait, want)
				}
			}
		})
	}
}
