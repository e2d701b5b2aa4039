package sim_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/google"

	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/sim"
)

const (
	vertexMessages = `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"tell me about pools"}]}`
	vertexGemini   = `{"contents":[{"role":"user","parts":[{"text":"tell me about pools"}]}]}`
)

// vertexPath is a Vertex AI method's path.
func vertexPath(region, publisher, model, method string) string {
	return "/v1/projects/sim-project/locations/" + region + "/publishers/" + publisher + "/models/" + model + ":" + method
}

func vertexReq(t *testing.T, base, path, body, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// googleError is Vertex AI's error body.
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// sseEvents reads an SSE body's events.
func sseEvents(t *testing.T, body []byte) []sse.Event {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(body))
	var out []sse.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return out
		}
		ev.Data, ev.Raw = bytes.Clone(ev.Data), nil // the reader reuses its buffer
		out = append(out, ev)
	}
}

func TestVertexAnthropic(t *testing.T) {
	t.Parallel()
	srv, base := newCloudSim(t, sim.Options{})
	path := vertexPath("us-east5", "anthropic", "claude-sonnet-5-5@20260101", "rawPredict")
	resp, b := do(t, vertexReq(t, base, path, vertexMessages, "ya29.anything"))
	var m struct {
		Type, Model string
		Content     []struct{ Text string }
	}
	if err := json.Unmarshal(b, &m); resp.StatusCode != 200 || err != nil || m.Type != "message" || m.Model != "claude-sonnet-5-5" || len(m.Content) != 1 {
		t.Fatalf("rawPredict: %d %s", resp.StatusCode, b)
	}
	// streamed: the Messages SSE, the same text
	resp, b = do(t, vertexReq(t, base, strings.Replace(path, ":rawPredict", ":streamRawPredict", 1), strings.Replace(vertexMessages, `"max_tokens"`, `"stream":true,"max_tokens"`, 1), ""))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("streamRawPredict: %d %s", resp.StatusCode, b)
	}
	evs := sseEvents(t, b)
	var text strings.Builder
	for _, ev := range evs {
		var d struct{ Delta struct{ Text string } }
		if ev.Name == "content_block_delta" && json.Unmarshal(ev.Data, &d) == nil {
			text.WriteString(d.Delta.Text)
		}
	}
	if evs[0].Name != "message_start" || evs[len(evs)-1].Name != "message_stop" || text.String() != m.Content[0].Text {
		t.Errorf("stream: %d events, text %q, want %q", len(evs), text.String(), m.Content[0].Text)
	}
	// count tokens
	resp, b = do(t, vertexReq(t, base, vertexPath("us-east5", "anthropic", "count-tokens", "rawPredict"), `{"model":"claude-sonnet-5-5","messages":[{"role":"user","content":"hi"}]}`, ""))
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if json.Unmarshal(b, &ct); resp.StatusCode != 200 || ct.InputTokens <= 0 {
		t.Errorf("count-tokens: %d %s", resp.StatusCode, b)
	}
	if st := srv.Snapshot().Models["vertex/claude-sonnet-5-5"]; st == nil || st.Served != 2 || st.Streamed != 1 {
		t.Errorf("vertex/claude-sonnet-5-5 stats %+v", st)
	}
}

func TestVertexAnthropicBodyRules(t *testing.T) {
	t.Parallel()
	_, base := newCloudSim(t, sim.Options{})
	path := vertexPath("global", "anthropic", "claude-haiku-5-5", "rawPredict")
	for name, body := range map[string]string{
		"no anthropic_version":        `{"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
		"Bedrock's anthropic_version": `{"anthropic_version":"bedrock-2023-05-31","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
		"model in the body":           `{"anthropic_version":"vertex-2023-10-16","model":"claude-haiku-5-5","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
		"no max_tokens":               `{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":"hi"}]}`,
	} {
		resp, b := do(t, vertexReq(t, base, path, body, ""))
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if json.Unmarshal(b, &e); resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %s, want the model's 400 invalid_request_error", name, resp.StatusCode, b)
		}
	}
	// an unknown model, a path of another shape: Google's 404
	for _, p := range []string{vertexPath("global", "anthropic", "claude-nonesuch@1", "rawPredict"), vertexPath("global", "meta", "llama", "rawPredict"), "/v1/projects/p/locations/global/endpoints/x:predict"} {
		resp, b := do(t, vertexReq(t, base, p, vertexMessages, ""))
		var e googleError
		if json.Unmarshal(b, &e); resp.StatusCode != 404 || e.Error.Status != "NOT_FOUND" || e.Error.Code != 404 {
			t.Errorf("%s: %d %s", p, resp.StatusCode, b)
		}
	}
}

func TestVertexGemini(t *testing.T) {
	t.Parallel()
	srv, base := newCloudSim(t, sim.Options{})
	resp, b := do(t, vertexReq(t, base, vertexPath("us-central1", "google", "gemini-3-flash", "generateContent"), vertexGemini, ""))
	var m struct {
		Candidates []struct {
			Content      struct{ Parts []struct{ Text string } }
			FinishReason string
		}
		ModelVersion string
	}
	if json.Unmarshal(b, &m); resp.StatusCode != 200 || len(m.Candidates) != 1 || m.Candidates[0].FinishReason != "STOP" || m.ModelVersion != "gemini-3-flash" {
		t.Fatalf("generateContent: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, vertexReq(t, base, vertexPath("us-central1", "google", "gemini-3-flash", "streamGenerateContent")+"?alt=sse", vertexGemini, ""))
	evs := sseEvents(t, b)
	if resp.StatusCode != 200 || len(evs) < 2 || !strings.Contains(string(evs[len(evs)-1].Data), `"finishReason":"STOP"`) {
		t.Fatalf("streamGenerateContent: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, vertexReq(t, base, vertexPath("us-central1", "google", "gemini-nonesuch", "generateContent"), vertexGemini, ""))
	var e googleError
	if json.Unmarshal(b, &e); resp.StatusCode != 404 || e.Error.Status != "NOT_FOUND" || !strings.Contains(e.Error.Message, "publishers/google/models/gemini-nonesuch") {
		t.Errorf("unknown Gemini model: %d %s", resp.StatusCode, b)
	}
	if st := srv.Snapshot().Models["vertex/gemini-3-flash"]; st == nil || st.Served != 2 {
		t.Errorf("vertex/gemini-3-flash stats %+v", st)
	}
	if st := srv.Snapshot().Models["gemini-3-flash"]; st != nil {
		t.Errorf("the Gemini API's pool served Vertex AI's requests: %+v", st)
	}
}

func TestVertexFaults(t *testing.T) {
	t.Parallel()
	srv, base := newCloudSim(t, sim.Options{})
	claude := vertexPath("us-east5", "anthropic", "claude-opus-5-5@20260101", "rawPredict")
	gemini := vertexPath("us-east5", "google", "gemini-3-pro", "generateContent")
	const full = "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."
	cases := []struct {
		kind   string
		status int
		rpc    string
		msg    string
	}{
		{"capacity", 429, "RESOURCE_EXHAUSTED", full},
		{"rate_limit", 429, "RESOURCE_EXHAUSTED", "Exceeded the Provisioned Throughput"},
		{"auth", 401, "UNAUTHENTICATED", "invalid authentication credentials"},
		{"quota", 403, "PERMISSION_DENIED", "billing"},
		{"server_error", 500, "INTERNAL", ""},
		{"timeout", 504, "DEADLINE_EXCEEDED", ""},
		{"model_not_found", 404, "NOT_FOUND", "not found"},
	}
	for _, target := range []struct{ pool, path, body string }{
		{"vertex/claude-opus-5-5", claude, vertexMessages},
		{"vertex/gemini-3-pro", gemini, vertexGemini},
	} {
		for _, c := range cases {
			srv.AddFault(sim.Fault{Model: target.pool, Kind: c.kind})
			resp, b := do(t, vertexReq(t, base, target.path, target.body, ""))
			var e googleError
			if json.Unmarshal(b, &e); resp.StatusCode != c.status || e.Error.Code != c.status || e.Error.Status != c.rpc || !strings.Contains(e.Error.Message, c.msg) {
				t.Errorf("%s %s: %d %s, want %d %s %q", target.pool, c.kind, resp.StatusCode, b, c.status, c.rpc, c.msg)
			}
		}
	}
	// a context too long is the model's own answer, in its format
	srv.AddFault(sim.Fault{Model: "vertex/claude-opus-5-5", Kind: "context_length"})
	if resp, b := do(t, vertexReq(t, base, claude, vertexMessages, "")); resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request_error"`) || !strings.Contains(string(b), "prompt is too long") {
		t.Errorf("context_length on Claude: %d %s", resp.StatusCode, b)
	}
	// in the stream: Messages error events for Claude, Google's error chunk for Gemini
	srv.AddFault(sim.Fault{Model: "vertex/claude-opus-5-5", Kind: "midstream"})
	_, b := do(t, vertexReq(t, base, strings.Replace(claude, ":rawPredict", ":streamRawPredict", 1), vertexMessages, ""))
	evs := sseEvents(t, b)
	if last := evs[len(evs)-1]; last.Name != "error" || !strings.Contains(string(last.Data), `"overloaded_error"`) {
		t.Errorf("Claude midstream: last event %s %s", last.Name, last.Data)
	}
	srv.AddFault(sim.Fault{Model: "vertex/gemini-3-pro", Kind: "midstream", Error: "rate_limit"})
	_, b = do(t, vertexReq(t, base, strings.Replace(gemini, ":generateContent", ":streamGenerateContent", 1)+"?alt=sse", vertexGemini, ""))
	evs = sseEvents(t, b)
	var e googleError
	if json.Unmarshal(evs[len(evs)-1].Data, &e); e.Error.Status != "RESOURCE_EXHAUSTED" || len(evs) < 2 {
		t.Errorf("Gemini midstream: %s", b)
	}
	srv.AddFault(sim.Fault{Model: "vertex/gemini-3-pro", Kind: "capacity", Style: "event"})
	_, b = do(t, vertexReq(t, base, strings.Replace(gemini, ":generateContent", ":streamGenerateContent", 1)+"?alt=sse", vertexGemini, ""))
	evs = sseEvents(t, b)
	if len(evs) != 1 || !strings.Contains(string(evs[0].Data), full) {
		t.Errorf("Gemini capacity event: %s", b)
	}
}

// serviceAccount is the simulator's service account as a client loads it.
type serviceAccount struct {
	PrivateKey  string `json:"private_key"`
	ClientEmail string `json:"client_email"`
	TokenURI    string `json:"token_uri"`
}

func TestVertexTokenGrantAndExpiry(t *testing.T) {
	t.Parallel()
	clock := &sim.ManualClock{T: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)}
	srv, base := newCloudSim(t, sim.Options{Clock: clock, Clouds: sim.CloudAuth{GoogleServiceAccount: true, TokenLifetime: 10 * time.Minute}})
	js, err := srv.ServiceAccountJSON(base + "/token")
	if err != nil {
		t.Fatal(err)
	}
	var sa serviceAccount
	if err := json.Unmarshal(js, &sa); err != nil || sa.TokenURI != base+"/token" || !strings.Contains(sa.PrivateKey, "PRIVATE KEY") {
		t.Fatalf("service account %s: %v", js, err)
	}
	// the Google library's own JWT-bearer grant
	creds, err := google.CredentialsFromJSON(context.Background(), js, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := creds.TokenSource.Token()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.AccessToken, "ya29.sim-") || tok.TokenType != "Bearer" || time.Until(tok.Expiry) > 10*time.Minute || time.Until(tok.Expiry) < 5*time.Minute {
		t.Fatalf("token %+v", tok)
	}
	path := vertexPath("global", "anthropic", "claude-haiku-5-5", "rawPredict")
	if resp, b := do(t, vertexReq(t, base, path, vertexMessages, tok.AccessToken)); resp.StatusCode != 200 {
		t.Fatalf("with the granted token: %d %s", resp.StatusCode, b)
	}
	for name, token := range map[string]string{"no token": "", "an unknown token": "ya29.sim-forged"} {
		resp, b := do(t, vertexReq(t, base, path, vertexMessages, token))
		var e googleError
		if json.Unmarshal(b, &e); resp.StatusCode != 401 || e.Error.Status != "UNAUTHENTICATED" {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
	}
	// the simulator's clock passes the token's lifetime: refused
	clock.T = clock.T.Add(10*time.Minute + time.Second)
	if resp, b := do(t, vertexReq(t, base, path, vertexMessages, tok.AccessToken)); resp.StatusCode != 401 {
		t.Errorf("expired token: %d %s", resp.StatusCode, b)
	}
	// a fresh grant works again
	tok2, err := grant(t, base, js)
	if err != nil || tok2 == tok.AccessToken {
		t.Fatalf("second grant: %q %v", tok2, err)
	}
	if resp, b := do(t, vertexReq(t, base, path, vertexMessages, tok2)); resp.StatusCode != 200 {
		t.Errorf("with the new token: %d %s", resp.StatusCode, b)
	}
}

// grant asks for a token with the service account in js, once.
func grant(t *testing.T, base string, js []byte) (string, error) {
	t.Helper()
	creds, err := google.CredentialsFromJSON(context.Background(), js, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		return "", err
	}
	tok, err := creds.TokenSource.Token()
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

func TestTokenEndpointRefuses(t *testing.T) {
	t.Parallel()
	srv, base := newCloudSim(t, sim.Options{Clouds: sim.CloudAuth{GoogleServiceAccount: true}})
	js, _ := srv.ServiceAccountJSON(base + "/token")
	// the same account with another key: its signature does not verify
	var m map[string]string
	json.Unmarshal(js, &m)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKCS8PrivateKey(other)
	m["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	forged, _ := json.Marshal(m)
	if _, err := grant(t, base, forged); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("a key not the service account's: %v", err)
	}
	for name, form := range map[string]url.Values{
		"another grant":  {"grant_type": {"client_credentials"}},
		"no assertion":   {"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}},
		"a bad JWT":      {"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"a.b.c"}},
		"not even a JWT": {"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"x"}},
	} {
		resp, err := http.PostForm(base+"/token", form)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Error == "" {
			t.Errorf("%s: %d %q", name, resp.StatusCode, e.Error)
		}
	}
	// without a service account, no grant (and any bearer passes)
	_, open := newCloudSim(t, sim.Options{})
	resp, _ := http.PostForm(open+"/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"a.b.c"}})
	if resp.StatusCode != 400 {
		t.Errorf("no service account: %d", resp.StatusCode)
	}
	resp.Body.Close()
	if _, err := srv.ServiceAccountJSON(""); err != nil {
		t.Error(err)
	}
	plain, _ := sim.New(sim.Options{})
	if _, err := plain.ServiceAccountJSON("http://x/token"); err == nil {
		t.Error("a simulator without a service account wrote one")
	}
}
