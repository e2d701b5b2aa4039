package transport_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/transport"
)

// A library caller's request for a model whose Anthropic pool is full
// spills to the same model on Bedrock: sent in Bedrock's envelope, with
// none of the caller's credentials (a Bedrock API key, spillway's own, is
// the cloud transport's to add).
func TestSpillToBedrock(t *testing.T) {
	full := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	defer full.Close()
	var mu sync.Mutex
	var uri string
	var got http.Header
	cloud := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uri, got = r.RequestURI, r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"from bedrock"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`)
	}))
	defer cloud.Close()
	cfg := config.Default()
	p := cfg.Providers["anthropic"]
	p.BaseURL = full.URL
	cfg.Providers["anthropic"] = p
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: cloud.URL, Auth: config.AuthKey,
		APIKey: config.Secret{Ref: "env:BEDROCK_KEY", Value: "bedrock-api-key"}}
	const id = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	cfg.Models["claude-sonnet-5-5"] = config.Model{Tier: config.Medium, Deployments: []config.Deployment{{Provider: "anthropic"}, {Provider: "bedrock-east", Upstream: id}}}
	eng := policy.New(cfg, policy.ForBatchWork(), policy.WithClock(policytest.New(time.Now())))
	client := &http.Client{Transport: transport.New(cfg, transport.WithEngine(eng))}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, full.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-5-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Api-Key", "sk-ant-caller-secret")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "from bedrock") {
		t.Fatalf("%d %s (route %s)", resp.StatusCode, body, resp.Header.Get("X-Spillway-Route"))
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"; uri != want {
		t.Errorf("sent to %s, want %s", uri, want)
	}
	if got.Get("X-Api-Key") != "" || got.Get("Anthropic-Version") != "" {
		t.Errorf("the caller's headers reached Bedrock: %v", got)
	}
	if a := got.Get("Authorization"); a != "" && a != "Bearer bedrock-api-key" {
		t.Errorf("Authorization %q: only the Bedrock API key may go", a)
	}
}

// A region whose credentials Bedrock refuses (spillway's own) is passed
// over for the model's other region, at once; its refusal, which names
// the account, reaches no one.
func TestRefusedRegionSpills(t *testing.T) {
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"message":"User: arn:aws:sts::123456789012:assumed-role/Admin/s is not authorized to perform: bedrock:InvokeModel"}`)
	}))
	defer denied.Close()
	west := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"from us-west-2"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`)
	}))
	defer west.Close()
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: denied.URL, Auth: config.AuthKey,
		APIKey: config.Secret{Ref: "env:BEDROCK_KEY", Value: "bedrock-api-key"}}
	cfg.Providers["bedrock-west"] = config.Provider{Type: config.Bedrock, Region: "us-west-2", BaseURL: west.URL, Auth: config.AuthKey,
		APIKey: config.Secret{Ref: "env:BEDROCK_KEY", Value: "bedrock-api-key"}}
	const id = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	cfg.Models["claude-sonnet-5-5"] = config.Model{Tier: config.Medium, Deployments: []config.Deployment{
		{Provider: "bedrock-east", Upstream: id}, {Provider: "bedrock-west", Upstream: id}}}
	eng := policy.New(cfg, policy.ForBatchWork(), policy.WithClock(policytest.New(time.Now())))
	client := &http.Client{Transport: transport.New(cfg, transport.WithEngine(eng))}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, denied.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-5-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	route := resp.Header.Get("X-Spillway-Route")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "from us-west-2") || !strings.Contains(route, "bedrock-east:auth") {
		t.Fatalf("%d %s (route %s)", resp.StatusCode, body, route)
	}
}
