package formats

import (
	"encoding/json"
	"github.com/spillway/spillway/internal/format/gemini"
	. "github.com/spillway/spillway/internal/wire"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/classify"
)

func TestEndpointFor(t *testing.T) {
	cases := []struct {
		path string
		kind Kind
		ok   bool
	}{
		{"/v1/responses", Responses, true},
		{"/v1/chat/completions", Chat, true},
		{"/openai/deployments/x/chat/completions/", Chat, true},
		{"/v1/embeddings", Embeddings, true},
		{"/v1/messages", Messages, true},
		{"/anthropic/v1/messages", Messages, true},
		{"/v1/models", "", false},
		{"/v1beta/models/gemini-3-pro:generateContent", GenerateContent, true},
		{"/v1beta/models/gemini-3-pro:streamGenerateContent", StreamGenerateContent, true},
		{"/v1beta/models/gemini-3-pro:countTokens", "", false},
		{"/v1beta/models", "", false},
	}
	for _, c := range cases {
		ep, ok := EndpointFor(c.path)
		if ok != c.ok || ep.Kind != c.kind {
			t.Errorf("EndpointFor(%q) = %v %v, want %v %v", c.path, ep.Kind, ok, c.kind, c.ok)
		}
	}
	if m := gemini.PathModel("/v1beta/models/gemini-3-pro:generateContent"); m != "gemini-3-pro" {
		t.Errorf("PathModel = %q", m)
	}
	if p := gemini.WithPathModel("/proxy/v1beta/models/gemini-3-pro:streamGenerateContent", "gemini-3-flash"); p != "/proxy/v1beta/models/gemini-3-flash:streamGenerateContent" {
		t.Errorf("WithPathModel = %q", p)
	}
}

func TestPromptBodies(t *testing.T) {
	p := Prompt{System: "be brief", User: "hi", Stream: true}
	cases := []struct {
		k    Kind
		want []string
	}{
		{Chat, []string{`"model":"m"`, `"role":"system"`, `"content":"be brief"`, `"content":"hi"`, `"stream":true`}},
		{Responses, []string{`"model":"m"`, `"instructions":"be brief"`, `"input":"hi"`, `"stream":true`}},
		{Messages, []string{`"model":"m"`, `"system":"be brief"`, `"max_tokens":4096`, `"content":"hi"`, `"stream":true`}},
		{GenerateContent, []string{`"systemInstruction"`, `"text":"hi"`}},
	}
	for _, c := range cases {
		b := promptBody(p, EndpointOf(c.k), "m")
		if !json.Valid(b) {
			t.Fatalf("%s: %s", c.k, b)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s body %s lacks %s", c.k, b, w)
			}
		}
		if c.k == GenerateContent && strings.Contains(string(b), `"model"`) {
			t.Errorf("a Gemini body names the model: %s", b)
		}
	}
	if ep, ok := PromptEndpoint(Anthropic); !ok || ep.Kind != Messages {
		t.Fatal(ep)
	}
	if ep, ok := PromptEndpoint(Gemini); !ok || ep.Kind != GenerateContent {
		t.Fatal(ep)
	}
}

// What spillway answers when it gives up is read back as the same class by
// spillway's own classifier, in every format: a client that runs spillway
// explain on it, or another spillway in front, sees what happened. The
// messages are the driver's own accounts.
func TestErrorBodiesClassifyAsTheirClass(t *testing.T) {
	why := map[classify.Class]string{
		classify.ContextLength: "the request is larger than every remaining model's context window",
		classify.ModelNotFound: "no model in the chain exists for this key",
	}
	for _, ep := range []Endpoint{EndpointOf(Chat), EndpointOf(Messages), EndpointOf(GenerateContent)} {
		for _, c := range []classify.Class{classify.Capacity, classify.RateLimit, classify.Quota, classify.Auth, classify.BadRequest,
			classify.ContextLength, classify.ContentFilter, classify.ModelNotFound, classify.Timeout} {
			if ep.Format == Gemini && c == classify.Quota {
				// Gemini says quota only in QuotaFailure details with a
				// quota id; a bare RESOURCE_EXHAUSTED reads as a rate
				// limit. Spillway passes a quota answer through instead.
				continue
			}
			status, body := errorBody(ep, c, "spillway: "+string(c)+": "+why[c])
			if v := classify.Classify(classify.Input{Status: status, Body: body, Provider: classify.Provider(ep.Format)}); v.Class != c {
				t.Errorf("%s %s: %d %s classifies as %s", ep.Format, c, status, body, v.Class)
			}
		}
	}
}

// A probe is one token on every API, not a whole answer.
func TestPromptMaxTokens(t *testing.T) {
	for _, ep := range []Endpoint{EndpointOf(Chat), EndpointOf(Responses), EndpointOf(Messages)} {
		b := string(promptBody(Prompt{User: "ping", MaxTokens: 1}, ep, "m"))
		if !strings.Contains(b, `"max_tokens":1`) && !strings.Contains(b, `"max_output_tokens":1`) {
			t.Errorf("%s: %s has no cap", ep.Kind, b)
		}
	}
	if g, _ := PromptEndpoint(Gemini); !strings.Contains(string(promptBody(Prompt{User: "ping", MaxTokens: 1}, g, "m")), `"maxOutputTokens":1`) {
		t.Error("gemini: no cap")
	}
}

// Each API's envelope puts the key where the API reads it, and a
// request of spillway's own carries what the API requires.
func TestEnvelopeKeys(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer client"}, "X-Api-Key": {"client"}}
	Envelope(Anthropic).SetKey(h, "mine")
	if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "mine" {
		t.Fatal(h)
	}
	a := Auth(Anthropic, "k")
	if a.Get("X-Api-Key") != "k" || a.Get("Anthropic-Version") == "" || a.Get("Content-Type") != "application/json" {
		t.Fatal(a)
	}
	if Auth(OpenAI, "k").Get("Authorization") != "Bearer k" || Auth(Gemini, "k").Get("X-Goog-Api-Key") != "k" {
		t.Fatal("key headers")
	}
	if _, ok := EnvelopeOf("azure"); ok {
		t.Fatal("an unknown format has an envelope")
	}
}
