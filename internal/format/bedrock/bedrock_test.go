package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/spillway/spillway/internal/wire"
)

// A model id is one path segment, escaped as the AWS SDK escapes it; the
// raw path and the escaped one make one URL.
func TestPath(t *testing.T) {
	tests := []struct {
		id      string
		stream  bool
		raw     string
		escaped string
	}{
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", false,
			"/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke",
			"/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", true,
			"/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream",
			"/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-1-20250805-v1:0", true,
			"/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-1-20250805-v1:0/invoke-with-response-stream",
			"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-opus-4-1-20250805-v1%3A0/invoke-with-response-stream"},
		{"a b+c~d_e", false, "/model/a b+c~d_e/invoke", "/model/a%20b%2Bc~d_e/invoke"},
	}
	for _, tt := range tests {
		raw, escaped := Path(tt.id, tt.stream)
		if raw != tt.raw || escaped != tt.escaped {
			t.Errorf("Path(%q, %v) = %q, %q; want %q, %q", tt.id, tt.stream, raw, escaped, tt.raw, tt.escaped)
		}
		u := url.URL{Scheme: "https", Host: "bedrock-runtime.us-east-1.amazonaws.com", Path: raw, RawPath: escaped}
		if u.EscapedPath() != escaped {
			t.Errorf("%q: the URL's path is %q, not the escaped one", tt.id, u.EscapedPath())
		}
	}
}

// A Messages body made Bedrock's: model and stream gone, the version and
// the betas in, every other field's bytes and order kept.
func TestBody(t *testing.T) {
	betas := http.Header{}
	betas.Add("Anthropic-Beta", "interleaved-thinking-2025-05-14, context-1m-2025-08-07")
	betas.Add("Anthropic-Beta", "fine-grained-tool-streaming-2025-05-14,,context-1m-2025-08-07")
	tests := []struct {
		name   string
		body   string
		header http.Header
		want   string
	}{
		{"whole", `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil,
			`{"max_tokens":1024,"messages":[{"role":"user","content":"hi"}],"anthropic_version":"bedrock-2023-05-31"}`},
		{"betas", `{"model":"m","messages":[]}`, betas,
			`{"messages":[],"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14","context-1m-2025-08-07","fine-grained-tool-streaming-2025-05-14"]}`},
		// Claude Code's header betas (Vertex AI mode, or /v1/messages): its
		// identity's and a login's stay out of Bedrock's body
		{"the Anthropic API's own betas", `{"messages":[]}`, http.Header{"Anthropic-Beta": {"claude-code-20250219,interleaved-thinking-2025-05-14,oauth-2025-04-20,effort-2025-11-24"}},
			`{"messages":[],"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14","effort-2025-11-24"]}`},
		{"only the Anthropic API's own betas", `{"messages":[]}`, http.Header{"Anthropic-Beta": {"claude-code-20250219"}},
			`{"messages":[],"anthropic_version":"bedrock-2023-05-31"}`},
		{"the body's own version and betas", `{"anthropic_beta":["x"],"messages":[],"anthropic_version":"bedrock-2023-05-31"}`, betas,
			`{"anthropic_beta":["x"],"messages":[],"anthropic_version":"bedrock-2023-05-31"}`},
		{"numbers and strings as they were", "{\n  \"max_tokens\": 1e3,\n  \"temperature\": 0.70000000000000001,\n  \"system\": \"\\u00e9t\\u00e9 <b>\",\n  \"metadata\": {\"z\": 1, \"a\": 2}\n}", nil,
			`{"max_tokens":1e3,"temperature":0.70000000000000001,"system":"\u00e9t\u00e9 <b>","metadata":{"z": 1, "a": 2},"anthropic_version":"bedrock-2023-05-31"}`},
		{"a model twice", `{"model":"a","x":1,"model":"b"}`, nil, `{"x":1,"anthropic_version":"bedrock-2023-05-31"}`},
		{"an escaped name", `{"mod\u0065l":"a","x":1}`, nil, `{"x":1,"anthropic_version":"bedrock-2023-05-31"}`},
		{"empty", `{}`, nil, `{"anthropic_version":"bedrock-2023-05-31"}`},
		// the Anthropic API's version, which Bedrock refuses, gives way to Bedrock's
		{"the Anthropic API's version", `{"anthropic_version":"2023-06-01","messages":[]}`, nil,
			`{"messages":[],"anthropic_version":"bedrock-2023-05-31"}`},
		{"Vertex AI's version", `{"messages":[],"anthropic_version":"vertex-2023-10-16"}`, nil,
			`{"messages":[],"anthropic_version":"bedrock-2023-05-31"}`},
		{"a version that is not a string", `{"anthropic_version":1}`, nil, `{"anthropic_version":"bedrock-2023-05-31"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Body([]byte(tt.body), tt.header)
			if err != nil || string(got) != tt.want {
				t.Errorf("Body:\n%s %v\nwant:\n%s", got, err, tt.want)
			}
		})
	}
}

// A body that is not one JSON object is an error that says so.
func TestBodyNotObject(t *testing.T) {
	for _, body := range []string{``, ` `, `[]`, `"x"`, `null`, `{"a":1`, `{"a":1}{}`, `{"a":}`, `{"a":1,}`} {
		_, err := Body([]byte(body), nil)
		if !errors.Is(err, wire.ErrNotObject) {
			t.Errorf("Body(%q): %v, want wire.ErrNotObject", body, err)
		}
	}
}

func TestErrorType(t *testing.T) {
	for in, want := range map[string]string{
		"throttlingException": "ThrottlingException",
		"ThrottlingException": "ThrottlingException",
		"internalFailure":     "InternalFailure",
		"":                    "Exception",
		"éclair":              "éclair",
		"x":                   "X",
	} {
		if got := ErrorType(in); got != want {
			t.Errorf("ErrorType(%q) = %q, want %q", in, got, want)
		}
	}
}

// CountTokens: the model escaped in the path as InvokeModel's, the
// InvokeModel body as a blob (base64) in the input's invokeModel.
func TestCountTokens(t *testing.T) {
	raw, esc := CountTokensPath("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0")
	if raw != "/model/arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0/count-tokens" ||
		esc != "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens" {
		t.Errorf("CountTokensPath = %s, %s", raw, esc)
	}
	invoke := []byte(`{"max_tokens":1,"messages":[{"role":"user","content":"ping \u00e9"}],"anthropic_version":"bedrock-2023-05-31"}`)
	var got struct {
		Input struct {
			InvokeModel struct {
				Body []byte `json:"body"` // base64, as encoding/json reads a []byte
			} `json:"invokeModel"`
		} `json:"input"`
	}
	b := CountTokensBody(invoke)
	if err := json.Unmarshal(b, &got); err != nil || !bytes.Equal(got.Input.InvokeModel.Body, invoke) {
		t.Errorf("CountTokensBody = %s (%v): the body does not come back", b, err)
	}
}
