package send

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// signsClouds is a RoundTripper that says it signs for clouds and does
// not: what the tests of the envelopes send through (a recorder sees the
// request as built).
type signsClouds struct{ http.RoundTripper }

func (signsClouds) AuthorizesClouds() bool { return true }

// A cloud's token count goes in the cloud's envelope: Bedrock's
// CountTokens with the InvokeModel body (base64) in its input, Anthropic's
// count-tokens rawPredict on Vertex AI with the model in the body and no
// max_tokens, Gemini's countTokens; the count is read from each answer.
func TestCountTokens(t *testing.T) {
	var answer string
	hs, last := recorderAnswering(t, &answer)
	cfg := cloudConfig(hs.URL)
	for _, c := range []struct {
		cand   policy.Candidate
		answer string
		uri    string
		check  func(t *testing.T, s seen)
		tokens int
	}{
		{policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0", Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock},
			`{"inputTokens":9}`,
			"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens",
			func(t *testing.T, s seen) {
				var in struct {
					Input struct {
						InvokeModel struct {
							Body string `json:"body"`
						} `json:"invokeModel"`
					} `json:"input"`
				}
				_ = json.Unmarshal(s.raw, &in)
				inner, err := base64.StdEncoding.DecodeString(in.Input.InvokeModel.Body)
				if err != nil || !strings.Contains(string(inner), `"anthropic_version":"bedrock-2023-05-31"`) || strings.Contains(string(inner), `"model"`) || !strings.Contains(string(inner), `"max_tokens":1`) {
					t.Errorf("the InvokeModel body in the count: %s (%v); raw %s", inner, err, s.raw)
				}
			}, 9},
		{policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "claude-sonnet-4-5@20250929", Provider: "vertex-east", Format: config.Anthropic, Cloud: config.Vertex},
			`{"input_tokens":8}`,
			"/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict?trace=1",
			func(t *testing.T, s seen) {
				if string(s.body["model"]) != `"claude-sonnet-4-5@20250929"` || string(s.body["anthropic_version"]) != `"vertex-2023-10-16"` || s.body["max_tokens"] != nil || s.body["messages"] == nil {
					t.Errorf("Anthropic's count on Vertex AI: %s", s.raw)
				}
			}, 8},
		{policy.Candidate{Model: "gemini-3-pro", Upstream: "gemini-2.5-pro", Provider: "vertex-global", Format: config.Gemini, Cloud: config.Vertex},
			`{"totalTokens":7}`,
			"/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-pro:countTokens",
			func(t *testing.T, s seen) {
				if s.body["contents"] == nil { // (Vertex AI's CountTokensRequest takes a generationConfig too)
					t.Errorf("Gemini's count on Vertex AI: %s", s.raw)
				}
			}, 7},
	} {
		answer = c.answer
		ans, err := CountTokens(context.Background(), signsClouds{http.DefaultTransport}, cfg, c.cand, nil, nil)
		if err != nil || ans.Status != 200 || ans.Tokens != c.tokens {
			t.Fatalf("%s: %v %+v", c.cand.Provider, err, ans)
		}
		s := last()
		if s.uri != c.uri || ans.Call != "POST "+strings.Split(c.uri, "?")[0] {
			t.Errorf("count sent to %s (%s), want %s", s.uri, ans.Call, c.uri)
			continue
		}
		c.check(t, s)
		noCallerCredentials(t, s)
	}
	if _, err := CountTokens(context.Background(), signsClouds{http.DefaultTransport}, cfg, policy.Candidate{Model: "claude-opus-5-5", Provider: "anthropic", Format: config.Anthropic}, nil, nil); err == nil {
		t.Error("a token count of a provider that is no cloud")
	}
}

// recorderAnswering is recorder, answering *answer.
func recorderAnswering(t *testing.T, answer *string) (*httptest.Server, func() seen) {
	hs, last := recorder(t)
	inner := hs.Config.Handler
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(&replaced{ResponseWriter: w, body: *answer}, r)
	})
	return hs, last
}

// replaced writes body in place of what the handler writes.
type replaced struct {
	http.ResponseWriter
	body string
	done bool
}

func (r *replaced) Write([]byte) (int, error) {
	if !r.done {
		r.done = true
		return r.ResponseWriter.Write([]byte(r.body))
	}
	return 0, nil
}

// A request marked for a cloud never leaves through a transport that does
// not sign for clouds: Exchange, Probe and CountTokens refuse it before
// sending, naming the provider; through the cloud transport (and a
// wrapper that says so) it goes.
func TestCloudRequestsNeedASigner(t *testing.T) {
	hs, _ := recorder(t)
	var sent int
	counting := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent++
		return http.DefaultTransport.RoundTrip(r)
	})
	cfg := cloudConfig(hs.URL)
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: hs.URL, Auth: config.AuthKey,
		APIKey: config.Secret{Value: "ABSK-test-key"}} // a Bedrock API key: the cloud transport needs no AWS chain
	cand := policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "anthropic.claude-sonnet-4-5-20250929-v1:0", Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock}
	msgs := wire.EndpointOf(wire.Messages)
	const want = "spillway: provider bedrock-east is a cloud, and this request's transport does not sign for clouds"
	senders := map[string]func(rt http.RoundTripper) error{
		"Probe": func(rt http.RoundTripper) error {
			_, err := Probe(context.Background(), rt, cfg, cand, http.Header{})
			return err
		},
		"CountTokens": func(rt http.RoundTripper) error {
			_, err := CountTokens(context.Background(), rt, cfg, cand, nil, nil)
			return err
		},
		"Exchange": func(rt http.RoundTripper) error {
			var err error
			policy.New(cfg, policy.WithClock(policytest.New(time.Now()))).Run(context.Background(), &policy.Call{
				Request: policy.Request{Model: "claude-sonnet-5-5", Type: config.Anthropic, NoFallback: true},
				Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
					req, rerr := cloudRequest(ctx, "bedrock-east", cfg.Providers["bedrock-east"], cand, cloudCall{payload: []byte(`{"model":"m","max_tokens":1,"messages":[]}`), header: http.Header{}})
					if rerr != nil {
						t.Fatal(rerr)
					}
					ans, res := Exchange(a, rt, req, msgs, Options{})
					if ans != nil {
						err = nil
						return res
					}
					if !res.NotSent || res.Verdict.Class != classify.BadRequest {
						t.Errorf("Exchange's refusal: %+v", res)
					}
					err, _ = res.Detail.(error)
					return res
				}})
			return err
		},
	}
	for name, sendThrough := range senders {
		for _, rt := range []http.RoundTripper{counting, http.DefaultTransport} {
			sent = 0
			if err := sendThrough(rt); err == nil || err.Error() != want {
				t.Errorf("%s through %T: %v, want %q", name, rt, err, want)
			}
			if sent != 0 {
				t.Errorf("%s through %T: the request left", name, rt)
			}
		}
		sent = 0
		if err := sendThrough(cloud.NewTransport(counting, nil)); err != nil || sent != 1 {
			t.Errorf("%s through the cloud transport: %v, %d sent", name, err, sent)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A client's own Messages body is counted as the client sent it, in the
// cloud's envelope: its model made the deployment's id, Bedrock's
// InvokeModel body given the anthropic_version and max_tokens it needs and
// the header's betas (Vertex AI's count takes them as the header), none of
// the caller's credentials; its other members keep their bytes.
func TestCountTokensOfABody(t *testing.T) {
	var answer string
	hs, last := recorderAnswering(t, &answer)
	cfg := cloudConfig(hs.URL)
	const body = `{"model":"claude-sonnet-5-5","system":"be brief","messages":[{"role":"user","content":"count \u00e9 me"}],"tools":[{"name":"t","input_schema":{"type":"object"}}]}`
	for _, c := range []struct {
		name   string
		cand   policy.Candidate
		answer string
		tokens int
		check  func(t *testing.T, s seen, inner map[string]json.RawMessage)
	}{
		{"bedrock", policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "us.anthropic.claude-sonnet-5-5-20261001-v1:0", Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock},
			`{"inputTokens":31}`, 31,
			func(t *testing.T, s seen, inner map[string]json.RawMessage) {
				if inner["model"] != nil || string(inner["max_tokens"]) != "1" || string(inner["anthropic_version"]) != `"bedrock-2023-05-31"` ||
					string(inner["anthropic_beta"]) != `["context-1m-2025-08-07"]` || string(inner["messages"]) != `[{"role":"user","content":"count \u00e9 me"}]` {
					t.Errorf("the InvokeModel body counted: %v", inner)
				}
			}},
		{"vertex", policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "claude-sonnet-5-5@20261001", Provider: "vertex-east", Format: config.Anthropic, Cloud: config.Vertex},
			`{"input_tokens":32}`, 32,
			func(t *testing.T, s seen, _ map[string]json.RawMessage) {
				if string(s.body["model"]) != `"claude-sonnet-5-5@20261001"` || s.body["max_tokens"] != nil || string(s.body["system"]) != `"be brief"` ||
					s.header.Get("Anthropic-Beta") != "context-1m-2025-08-07" {
					t.Errorf("the count on Vertex AI: %s %v", s.raw, s.header)
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			answer = c.answer
			ans, err := CountTokens(context.Background(), signsClouds{http.DefaultTransport}, cfg, c.cand, []byte(body), callerHeader())
			if err != nil || ans.Status != 200 || ans.Tokens != c.tokens {
				t.Fatalf("%v %+v", err, ans)
			}
			s := last()
			var inner map[string]json.RawMessage
			if c.cand.Cloud == config.Bedrock {
				var in struct {
					Input struct {
						InvokeModel struct {
							Body []byte `json:"body"`
						} `json:"invokeModel"`
					} `json:"input"`
				}
				if err := json.Unmarshal(s.raw, &in); err != nil || json.Unmarshal(in.Input.InvokeModel.Body, &inner) != nil {
					t.Fatalf("CountTokens' input: %s", s.raw)
				}
			}
			c.check(t, s, inner)
			noCallerCredentials(t, s)
		})
	}
	if _, err := CountTokens(context.Background(), signsClouds{http.DefaultTransport}, cfg,
		policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "claude-sonnet-5-5@20261001", Provider: "vertex-east", Format: config.Anthropic, Cloud: config.Vertex}, []byte(`[1]`), nil); err == nil ||
		!strings.Contains(err.Error(), "the body to count") {
		t.Errorf("a body that is no object: %v", err)
	}
}

// A count a cloud does not give says why in words fit for a client: a
// refusal of spillway's credentials named (never the cloud's words, which
// name the role), another error's words with an ARN's account hidden.
func TestCountTokensError(t *testing.T) {
	var status int
	var body string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-Errortype", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(hs.Close)
	cfg := cloudConfig(hs.URL)
	cand := policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "us.anthropic.claude-sonnet-5-5-v1:0", Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock}
	for _, c := range []struct {
		status     int
		body, want string
	}{
		{403, `{"message":"User: arn:aws:sts::123456789012:assumed-role/spill/x is not authorized to perform: bedrock:CountTokens"}`, "provider bedrock-east's own cloud credentials were refused (AccessDeniedException"},
		{500, `{"message":"failed for arn:aws:bedrock:us-east-1:123456789012:inference-profile/x"}`, "failed for arn:aws:bedrock:us-east-1:…:inference-profile/x"},
		{503, `{"error":{"code":503,"message":"The service is unavailable.","status":"UNAVAILABLE"}}`, "The service is unavailable."},
		{502, strings.Repeat("x", 1000), strings.Repeat("x", 300) + "…"},
	} {
		status, body = c.status, c.body
		ans, err := CountTokens(context.Background(), signsClouds{http.DefaultTransport}, cfg, cand, nil, nil)
		if err != nil || ans.Status != c.status || ans.Tokens != 0 || !strings.Contains(ans.Error, c.want) || strings.Contains(ans.Error, "123456789012") {
			t.Errorf("%d: %v %q, want %q", c.status, err, ans.Error, c.want)
		}
	}
}
