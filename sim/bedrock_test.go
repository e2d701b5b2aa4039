package sim_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/spillway/spillway/sim"
)

// newCloudSim starts a simulator with options o (calm, seed 1, no token
// delay unless o says).
func newCloudSim(t *testing.T, o sim.Options) (*sim.Server, string) {
	t.Helper()
	o.Seed = 1
	if o.Clock == nil {
		o.Clock = &sim.ManualClock{T: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)} // a quiet Sunday night
	}
	srv, err := sim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return srv, hs.URL
}

// bedrockPath is the InvokeModel path of id, escaped as AWS's SDKs escape
// it (":" and "/" too).
func bedrockPath(id string, stream bool) string {
	esc := strings.NewReplacer(":", "%3A", "/", "%2F").Replace(id)
	if stream {
		return "/model/" + esc + "/invoke-with-response-stream"
	}
	return "/model/" + esc + "/invoke"
}

const bedrockBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"tell me about pools"}]}`

// bedrockReq builds a Bedrock request; creds, when not nil, sign it.
func bedrockReq(t *testing.T, base, path, body string, creds *aws.Credentials) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if creds != nil {
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(context.Background(), *creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// bedrockFrame is one decoded event-stream message.
type bedrockFrame struct {
	messageType, eventType, exceptionType string
	event                                 map[string]any // a chunk's Messages event
	message                               string         // an exception's
}

// readFrames decodes an event stream with the SDK's decoder (CRCs
// checked); err is the decoder's first error other than the end.
func readFrames(t *testing.T, body []byte) (frames []bedrockFrame, err error) {
	t.Helper()
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(body)
	for {
		m, derr := dec.Decode(r, nil)
		if errors.Is(derr, io.EOF) {
			return frames, nil
		}
		if derr != nil {
			return frames, derr
		}
		f := bedrockFrame{}
		if v := m.Headers.Get(":message-type"); v != nil {
			f.messageType = v.String()
		}
		if v := m.Headers.Get(":event-type"); v != nil {
			f.eventType = v.String()
		}
		if v := m.Headers.Get(":exception-type"); v != nil {
			f.exceptionType = v.String()
		}
		if f.messageType == "event" {
			var chunk struct {
				Bytes string `json:"bytes"`
			}
			if err := json.Unmarshal(m.Payload, &chunk); err != nil {
				t.Fatalf("chunk payload %q: %v", m.Payload, err)
			}
			raw, err := base64.StdEncoding.DecodeString(chunk.Bytes)
			if err != nil {
				t.Fatalf("chunk bytes: %v", err)
			}
			if err := json.Unmarshal(raw, &f.event); err != nil {
				t.Fatalf("chunk event %q: %v", raw, err)
			}
		} else {
			var e struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(m.Payload, &e)
			f.message = e.Message
		}
		frames = append(frames, f)
	}
}

func TestBedrockInvokeModelIDs(t *testing.T) {
	t.Parallel()
	srv, base := newCloudSim(t, sim.Options{})
	ids := []string{
		"anthropic.claude-sonnet-5-5-v1:0",
		"anthropic.claude-sonnet-5-5-20260101-v1:0",
		"us.anthropic.claude-sonnet-5-5-v1:0",
		"global.anthropic.claude-sonnet-5-5-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-5-5-v1:0",
		"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-5-5-v1:0",
	}
	var first string
	for _, id := range ids {
		resp, b := do(t, bedrockReq(t, base, bedrockPath(id, false), bedrockBody, nil))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", id, resp.StatusCode, b)
		}
		if resp.Header.Get("x-amzn-RequestId") == "" || resp.Header.Get("X-Amzn-Bedrock-Output-Token-Count") == "" {
			t.Errorf("%s: headers %v", id, resp.Header)
		}
		var m struct {
			Type       string `json:"type"`
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Type != "message" || m.StopReason != "end_turn" || len(m.Content) != 1 {
			t.Fatalf("%s: %s", id, b)
		}
		if first == "" {
			first = m.Content[0].Text
		} else if m.Content[0].Text != first {
			t.Errorf("%s: answer %q, want the same model's %q", id, m.Content[0].Text, first)
		}
	}
	st := srv.Snapshot().Models["bedrock/claude-sonnet-5-5"]
	if st == nil || st.Served != len(ids) {
		t.Fatalf("bedrock/claude-sonnet-5-5 stats %+v, want %d served", st, len(ids))
	}
	if st := srv.Snapshot().Models["claude-sonnet-5-5"]; st != nil {
		t.Errorf("the Anthropic API's pool served Bedrock's requests: %+v", st)
	}
}

func TestBedrockStream(t *testing.T) {
	t.Parallel()
	_, base := newCloudSim(t, sim.Options{})
	id := "us.anthropic.claude-haiku-5-5-v1:0"
	_, whole := do(t, bedrockReq(t, base, bedrockPath(id, false), bedrockBody, nil))
	var want struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(whole, &want)

	resp, b := do(t, bedrockReq(t, base, bedrockPath(id, true), bedrockBody, nil))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	frames, err := readFrames(t, b)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var text strings.Builder
	for _, f := range frames {
		if f.messageType != "event" || f.eventType != "chunk" {
			t.Fatalf("frame %+v, want chunk events only", f)
		}
		types = append(types, f.event["type"].(string))
		if d, ok := f.event["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			text.WriteString(d["text"].(string))
		}
	}
	if types[0] != "message_start" || types[len(types)-1] != "message_stop" || strings.Contains(strings.Join(types, " "), "ping") {
		t.Errorf("events %v", types)
	}
	if len(want.Content) == 0 || text.String() != want.Content[0].Text {
		t.Errorf("streamed %q, whole %s", text.String(), whole)
	}
	metrics, ok := frames[len(frames)-1].event["amazon-bedrock-invocationMetrics"].(map[string]any)
	if !ok || metrics["inputTokenCount"].(float64) <= 0 || metrics["outputTokenCount"].(float64) <= 0 {
		t.Errorf("message_stop %v, want amazon-bedrock-invocationMetrics with token counts", frames[len(frames)-1].event)
	}
}

func TestBedrockBodyRules(t *testing.T) {
	t.Parallel()
	srv, base := newCloudSim(t, sim.Options{})
	id := "anthropic.claude-sonnet-5-5-v1:0"
	cases := []struct {
		name, id, body, typ, msg string
	}{
		{"model in the body", id, `{"anthropic_version":"bedrock-2023-05-31","model":"claude-sonnet-5-5","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "ValidationException", "extraneous key [model] is not permitted"},
		{"stream in the body", id, `{"anthropic_version":"bedrock-2023-05-31","stream":true,"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "ValidationException", "extraneous key [stream] is not permitted"},
		{"no anthropic_version", id, `{"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "ValidationException", "required key [anthropic_version] not found"},
		{"Vertex AI's anthropic_version", id, `{"anthropic_version":"vertex-2023-10-16","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "ValidationException", "vertex-2023-10-16 is not a valid enum value"},
		{"betas not a list", id, `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":"x","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "ValidationException", "anthropic_beta"},
		{"not JSON", id, `{"anthropic_version":`, "ValidationException", ""},
		{"no max_tokens", id, `{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"user","content":"hi"}]}`, "ValidationException", "max_tokens"},
		{"unknown model", "anthropic.claude-nonesuch-v1:0", bedrockBody, "ValidationException", "The provided model identifier is invalid."},
	}
	for _, c := range cases {
		resp, b := do(t, bedrockReq(t, base, bedrockPath(c.id, false), c.body, nil))
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(b, &e)
		if resp.StatusCode != 400 || resp.Header.Get("x-amzn-errortype") != c.typ+":http://internal.amazon.com/coral/com.amazon.bedrock/" || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s: %d %q %s, want 400 %s %q", c.name, resp.StatusCode, resp.Header.Get("x-amzn-errortype"), b, c.typ, c.msg)
		}
	}
	// betas as a list pass; an API version's date passes (the Anthropic
	// SDK sends its own there)
	for _, ok := range []string{
		`{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14"],"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
		`{"anthropic_version":"2023-06-01","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		if resp, b := do(t, bedrockReq(t, base, bedrockPath(id, false), ok, nil)); resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", ok, resp.StatusCode, b)
		}
	}
	if st := srv.Snapshot().Models["bedrock/claude-nonesuch"]; st == nil || st.Rejected["model_not_found"] != 1 {
		t.Errorf("unknown model's stats %+v", st)
	}
}

func TestBedrockFaults(t *testing.T) {
	t.Parallel()
	srv, base := newCloudSim(t, sim.Options{})
	id, pool := "anthropic.claude-opus-5-5-v1:0", "bedrock/claude-opus-5-5"
	whole := []struct {
		fault  sim.Fault
		status int
		typ    string
		msg    string
	}{
		{sim.Fault{Kind: "capacity"}, 503, "ServiceUnavailableException", "Bedrock is unable to process your request."},
		{sim.Fault{Kind: "rate_limit"}, 429, "ThrottlingException", "Too many requests, please wait before trying again."},
		{sim.Fault{Kind: "usage_limit"}, 429, "ThrottlingException", "Too many tokens per day, please wait before trying again."},
		{sim.Fault{Kind: "server_error"}, 500, "InternalServerException", ""},
		{sim.Fault{Kind: "timeout"}, 408, "ModelTimeoutException", ""},
		{sim.Fault{Kind: "auth"}, 403, "UnrecognizedClientException", ""},
		{sim.Fault{Kind: "quota"}, 403, "AccessDeniedException", ""},
		{sim.Fault{Kind: "context_length"}, 400, "ValidationException", "Input is too long for requested model."},
		{sim.Fault{Kind: "bad_request", Message: "messages.0: bad"}, 400, "ValidationException", "messages.0: bad"},
	}
	for _, stream := range []bool{false, true} {
		for _, c := range whole {
			f := c.fault
			f.Model = pool
			if err := srv.AddFault(f); err != nil {
				t.Fatal(err)
			}
			resp, b := do(t, bedrockReq(t, base, bedrockPath(id, stream), bedrockBody, nil))
			var e struct {
				Message string `json:"message"`
			}
			json.Unmarshal(b, &e)
			if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("x-amzn-errortype"), c.typ+":") || !strings.Contains(e.Message, c.msg) || resp.Header.Get("x-amzn-RequestId") == "" {
				t.Errorf("%s (stream %v): %d %q %s, want %d %s %q", c.fault.Kind, stream, resp.StatusCode, resp.Header.Get("x-amzn-errortype"), b, c.status, c.typ, c.msg)
			}
		}
	}
	// in the stream: exception frames after some chunks
	inStream := []struct {
		fault sim.Fault
		typ   string
	}{
		{sim.Fault{Kind: "midstream"}, "serviceUnavailableException"},
		{sim.Fault{Kind: "midstream", Error: "rate_limit"}, "throttlingException"},
		{sim.Fault{Kind: "midstream", Error: "server_error"}, "internalServerException"},
		{sim.Fault{Kind: "midstream", Error: "timeout"}, "modelStreamErrorException"},
		{sim.Fault{Kind: "capacity", Style: "event"}, "serviceUnavailableException"},
	}
	for _, c := range inStream {
		f := c.fault
		f.Model = pool
		if err := srv.AddFault(f); err != nil {
			t.Fatal(err)
		}
		resp, b := do(t, bedrockReq(t, base, bedrockPath(id, true), bedrockBody, nil))
		frames, err := readFrames(t, b)
		if resp.StatusCode != 200 || err != nil || len(frames) == 0 {
			t.Fatalf("%+v: %d %v %d frames", c.fault, resp.StatusCode, err, len(frames))
		}
		last := frames[len(frames)-1]
		if last.messageType != "exception" || last.exceptionType != c.typ || last.message == "" {
			t.Errorf("%+v: last frame %+v, want a %s exception", c.fault, last, c.typ)
		}
	}
	// a malformed stream: a frame whose CRC is wrong
	srv.AddFault(sim.Fault{Model: pool, Kind: "malformed"})
	_, b := do(t, bedrockReq(t, base, bedrockPath(id, true), bedrockBody, nil))
	if _, err := readFrames(t, b); err == nil || !strings.Contains(strings.ToLower(err.Error()), "checksum") {
		t.Errorf("malformed: decoder error %v, want a checksum mismatch", err)
	}
	// a cut stream: chunks, and no message_stop
	srv.AddFault(sim.Fault{Model: pool, Kind: "truncated"})
	_, b = do(t, bedrockReq(t, base, bedrockPath(id, true), bedrockBody, nil))
	frames, err := readFrames(t, b)
	if err != nil || len(frames) == 0 || frames[len(frames)-1].event["type"] == "message_stop" {
		t.Errorf("truncated: %v, %d frames", err, len(frames))
	}
}

func TestBedrockOutageIsModelNotReady(t *testing.T) {
	t.Parallel()
	scn, _ := sim.Builtin("outage")
	start := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	_, base := newCloudSim(t, sim.Options{Scenario: scn, Clock: &sim.ManualClock{T: start}})
	resp, b := do(t, bedrockReq(t, base, bedrockPath("anthropic.claude-haiku-5-5-v1:0", false), bedrockBody, nil))
	if resp.StatusCode != 429 || !strings.HasPrefix(resp.Header.Get("x-amzn-errortype"), "ModelNotReadyException:") {
		t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("x-amzn-errortype"), b)
	}
}

func TestBedrockSignatures(t *testing.T) {
	t.Parallel()
	good := aws.Credentials{AccessKeyID: "AKIDSIMTEST", SecretAccessKey: "sim-secret-key", SessionToken: "sim-session-token"}
	srv, base := newCloudSim(t, sim.Options{Regions: []string{"us-east-1"}, Clouds: sim.CloudAuth{
		AWS: &sim.AWSCredentials{AccessKeyID: good.AccessKeyID, SecretAccessKey: good.SecretAccessKey, SessionToken: good.SessionToken}}})
	path := bedrockPath("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-5-5-v1:0", false)
	wrongSecret, wrongKey, noToken := good, good, good
	wrongSecret.SecretAccessKey = "not-the-secret"
	wrongKey.AccessKeyID = "AKIDSOMEONEELSE"
	noToken.SessionToken = ""

	tampered := bedrockReq(t, base, path, bedrockBody, &good)
	body := []byte(bedrockBody)
	body[len(body)-5] = 'X' // one byte, after signing
	tampered.Body = io.NopCloser(bytes.NewReader(body))

	wrongHeader := bedrockReq(t, base, path, bedrockBody, &good)
	wrongHeader.Header.Set("Accept", "text/plain") // a signed header changed

	cases := []struct {
		name   string
		req    *http.Request
		status int
		typ    string
	}{
		{"signed", bedrockReq(t, base, path, bedrockBody, &good), 200, ""},
		{"signed, in a region", bedrockReq(t, base+"/us-east-1", path, bedrockBody, &good), 200, ""},
		{"a byte tampered", tampered, 403, "InvalidSignatureException"},
		{"a signed header changed", wrongHeader, 403, "InvalidSignatureException"},
		{"wrong secret", bedrockReq(t, base, path, bedrockBody, &wrongSecret), 403, "InvalidSignatureException"},
		{"unknown access key", bedrockReq(t, base, path, bedrockBody, &wrongKey), 403, "UnrecognizedClientException"},
		{"no session token", bedrockReq(t, base, path, bedrockBody, &noToken), 403, "UnrecognizedClientException"},
		{"unsigned", bedrockReq(t, base, path, bedrockBody, nil), 403, "MissingAuthenticationTokenException"},
		{"a bearer", func() *http.Request {
			r := bedrockReq(t, base, path, bedrockBody, nil)
			r.Header.Set("Authorization", "Bearer some-key")
			return r
		}(), 403, "UnrecognizedClientException"},
	}
	for _, c := range cases {
		resp, b := do(t, c.req)
		if resp.StatusCode != c.status || (c.typ != "" && !strings.HasPrefix(resp.Header.Get("x-amzn-errortype"), c.typ+":")) {
			t.Errorf("%s: %d %q %s, want %d %s", c.name, resp.StatusCode, resp.Header.Get("x-amzn-errortype"), b, c.status, c.typ)
		}
		if strings.Contains(string(b), good.SecretAccessKey) || strings.Contains(string(b), good.SessionToken) {
			t.Errorf("%s: a secret in the answer: %s", c.name, b)
		}
	}
	if st := srv.Region("us-east-1").Snapshot().Models["bedrock/claude-sonnet-5-5"]; st == nil || st.Served != 1 || st.Credentials[sim.Fingerprint(good.AccessKeyID, "")] != 1 {
		t.Errorf("us-east-1 stats %+v, want the one signed request, by its access key", st)
	}
}

func TestBedrockAPIKey(t *testing.T) {
	t.Parallel()
	_, base := newCloudSim(t, sim.Options{Clouds: sim.CloudAuth{BedrockAPIKey: "ABSKsimtestkey"}})
	path := bedrockPath("anthropic.claude-sonnet-5-5-v1:0", false)
	for key, want := range map[string]int{"ABSKsimtestkey": 200, "ABSKwrong": 403, "": 403} {
		req := bedrockReq(t, base, path, bedrockBody, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if resp, b := do(t, req); resp.StatusCode != want {
			t.Errorf("key %q: %d %s, want %d", key, resp.StatusCode, b, want)
		}
	}
	// SigV4 without configured AWS credentials is refused
	creds := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "s"}
	if resp, _ := do(t, bedrockReq(t, base, path, bedrockBody, &creds)); resp.StatusCode != 403 {
		t.Errorf("SigV4 with only an API key configured: %d", resp.StatusCode)
	}
}

func TestBedrockPathErrors(t *testing.T) {
	t.Parallel()
	_, base := newCloudSim(t, sim.Options{})
	for _, p := range []string{"/model/x", "/model/anthropic.claude-sonnet-5-5-v1%3A0/converse"} {
		resp, b := do(t, bedrockReq(t, base, p, bedrockBody, nil))
		if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("x-amzn-errortype"), "UnknownOperationException:") {
			t.Errorf("%s: %d %q %s", p, resp.StatusCode, resp.Header.Get("x-amzn-errortype"), b)
		}
	}
}

// A scripted tool call through Bedrock: tool_use blocks in chunk frames,
// the stop reason, and the metrics at the end.
func TestBedrockToolCalls(t *testing.T) {
	t.Parallel()
	_, base := newCloudSim(t, sim.Options{})
	if code, b := script(t, base, `{"model":"bedrock/claude-opus-5-5","turns":[{"call":[{"tool":"get_weather","arguments":{"city":"Paris"}}]}]}`); code != 200 {
		t.Fatalf("script: %d %s", code, b)
	}
	body := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"tools":[{"name":"get_weather","description":"weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],"messages":[{"role":"user","content":"weather in Paris?"}]}`
	resp, b := do(t, bedrockReq(t, base, bedrockPath("anthropic.claude-opus-5-5-v1:0", true), body, nil))
	frames, err := readFrames(t, b)
	if resp.StatusCode != 200 || err != nil {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	var args strings.Builder
	var tool, stop string
	for _, f := range frames {
		switch f.event["type"] {
		case "content_block_start":
			if cb := f.event["content_block"].(map[string]any); cb["type"] == "tool_use" {
				tool = cb["name"].(string)
			}
		case "content_block_delta":
			if d := f.event["delta"].(map[string]any); d["type"] == "input_json_delta" {
				args.WriteString(d["partial_json"].(string))
			}
		case "message_delta":
			stop = f.event["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	last := frames[len(frames)-1].event
	if tool != "get_weather" || args.String() != `{"city":"Paris"}` || stop != "tool_use" || last["type"] != "message_stop" || last["amazon-bedrock-invocationMetrics"] == nil {
		t.Errorf("tool %q args %q stop %q last %v", tool, args.String(), stop, last)
	}
}

// A signature must be scoped to the region the request is for and to the
// date it says it was made, and must cover host and x-amz-date: AWS
// refuses any other, however well it is signed.
func TestBedrockSignatureScope(t *testing.T) {
	t.Parallel()
	good := aws.Credentials{AccessKeyID: "AKIDSIMTEST", SecretAccessKey: "sim-secret-key"}
	clouds := sim.CloudAuth{AWS: &sim.AWSCredentials{AccessKeyID: good.AccessKeyID, SecretAccessKey: good.SecretAccessKey}}
	_, base := newCloudSim(t, sim.Options{Regions: []string{"us-east-1", "us-west-2"}, Clouds: clouds})
	_, anyBase := newCloudSim(t, sim.Options{Clouds: clouds}) // no --regions: any region
	path := bedrockPath("anthropic.claude-sonnet-5-5-v1:0", false)

	signed := func(base, region, service string, edit func(authz string) string) *http.Request {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(bedrockBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		sum := sha256.Sum256([]byte(bedrockBody))
		if err := v4.NewSigner().SignHTTP(context.Background(), good, req, hex.EncodeToString(sum[:]), service, region, time.Now()); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			req.Header.Set("Authorization", edit(req.Header.Get("Authorization")))
		}
		return req
	}
	yesterday := func(authz string) string {
		today := time.Now().UTC().Format("20060102")
		return strings.Replace(authz, "/"+today+"/", "/"+time.Now().UTC().AddDate(0, 0, -1).Format("20060102")+"/", 1)
	}
	unsign := func(h string) func(string) string {
		return func(authz string) string {
			authz = strings.Replace(authz, "SignedHeaders="+h+";", "SignedHeaders=", 1)
			return strings.Replace(authz, ";"+h, "", 1)
		}
	}
	cases := []struct {
		name   string
		req    *http.Request
		status int
		words  string // in the refusal's message
	}{
		{"the prefix's region", signed(base+"/us-west-2", "us-west-2", "bedrock", nil), 200, ""},
		{"another region than the prefix's", signed(base+"/us-west-2", "us-east-1", "bedrock", nil), 403, "Credential should be scoped to a valid region"},
		{"a served region without a prefix", signed(base, "us-west-2", "bedrock", nil), 200, ""},
		{"a region not served, without a prefix", signed(base, "eu-west-3", "bedrock", nil), 403, "Credential should be scoped to a valid region"},
		{"any region when the sim runs none", signed(anyBase, "eu-west-3", "bedrock", nil), 200, ""},
		{"another service", signed(base, "us-west-2", "s3", nil), 403, "Credential should be scoped to correct service: 'bedrock'"},
		{"a scope dated another day", signed(base, "us-west-2", "bedrock", yesterday), 403, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP"},
		{"host unsigned", signed(base, "us-west-2", "bedrock", unsign("host")), 403, "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."},
		{"x-amz-date unsigned", signed(base, "us-west-2", "bedrock", unsign("x-amz-date")), 403, "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization."},
	}
	for _, c := range cases {
		resp, b := do(t, c.req)
		if resp.StatusCode != c.status || (c.words != "" && (!strings.HasPrefix(resp.Header.Get("x-amzn-errortype"), "InvalidSignatureException:") || !strings.Contains(string(b), c.words))) {
			t.Errorf("%s: %d %q %s, want %d InvalidSignatureException saying %q", c.name, resp.StatusCode, resp.Header.Get("x-amzn-errortype"), b, c.status, c.words)
		}
		if strings.Contains(string(b), good.SecretAccessKey) {
			t.Errorf("%s: the secret in the answer: %s", c.name, b)
		}
	}
}

// Bedrock's CountTokens: an InvokeModel body (base64) in CountTokens'
// input, signed like every Bedrock request, answered {"inputTokens":N};
// it costs nothing, and no pool counts it.
func TestBedrockCountTokens(t *testing.T) {
	t.Parallel()
	good := aws.Credentials{AccessKeyID: "AKIDSIMTEST", SecretAccessKey: "sim-secret-key"}
	srv, base := newCloudSim(t, sim.Options{Clouds: sim.CloudAuth{AWS: &sim.AWSCredentials{AccessKeyID: good.AccessKeyID, SecretAccessKey: good.SecretAccessKey}}})
	path := "/model/us.anthropic.claude-sonnet-5-5-v1%3A0/count-tokens"
	count := func(invoke string) string {
		return `{"input":{"invokeModel":{"body":"` + base64.StdEncoding.EncodeToString([]byte(invoke)) + `"}}}`
	}
	tampered := bedrockReq(t, base, path, count(bedrockBody), &good)
	b := []byte(count(bedrockBody))
	b[len(b)-6] ^= 1
	tampered.Body = io.NopCloser(bytes.NewReader(b))
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		typ    string
	}{
		{"signed", bedrockReq(t, base, path, count(bedrockBody), &good), 200, ""},
		{"a byte tampered", tampered, 403, "InvalidSignatureException"},
		{"unsigned", bedrockReq(t, base, path, count(bedrockBody), nil), 403, "MissingAuthenticationTokenException"},
		{"no invokeModel input", bedrockReq(t, base, path, `{"input":{}}`, &good), 400, "ValidationException"},
		{"not JSON", bedrockReq(t, base, path, `{"input":`, &good), 400, "ValidationException"},
		{"a body with its model", bedrockReq(t, base, path, count(`{"anthropic_version":"bedrock-2023-05-31","model":"m","max_tokens":1,"messages":[]}`), &good), 400, "ValidationException"},
		{"a body without anthropic_version", bedrockReq(t, base, path, count(`{"max_tokens":1,"messages":[]}`), &good), 400, "ValidationException"},
		{"an unknown model", bedrockReq(t, base, "/model/anthropic.claude-nonesuch-v1%3A0/count-tokens", count(bedrockBody), &good), 400, "ValidationException"},
	} {
		resp, body := do(t, c.req)
		if resp.StatusCode != c.status || (c.typ != "" && !strings.HasPrefix(resp.Header.Get("x-amzn-errortype"), c.typ+":")) {
			t.Errorf("%s: %d %q %s, want %d %s", c.name, resp.StatusCode, resp.Header.Get("x-amzn-errortype"), body, c.status, c.typ)
			continue
		}
		if c.status != 200 {
			continue
		}
		var n struct {
			InputTokens int `json:"inputTokens"`
		}
		if err := json.Unmarshal(body, &n); err != nil || n.InputTokens <= 0 {
			t.Errorf("%s: %s, want {\"inputTokens\":N}", c.name, body)
		}
	}
	if st := srv.Snapshot().Models["bedrock/claude-sonnet-5-5"]; st != nil && (st.Served != 0 || st.Received != 0) {
		t.Errorf("a count is no request of the pool: %+v", st)
	}
}
