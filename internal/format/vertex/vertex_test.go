package vertex

import (
	"errors"
	"testing"

	"github.com/spillway/spillway/internal/wire"
)

func TestPath(t *testing.T) {
	tests := []struct {
		project, region, publisher, model, method string
		want                                      string
	}{
		{"my-project", "us-east5", "anthropic", "claude-sonnet-4-5@20250929", RawPredict,
			"/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"},
		{"my-project", "global", "anthropic", "claude-opus-4-1@20250805", StreamRawPredict,
			"/v1/projects/my-project/locations/global/publishers/anthropic/models/claude-opus-4-1@20250805:streamRawPredict"},
		{"p", "europe-west4", "google", "gemini-2.5-pro", GenerateContent,
			"/v1/projects/p/locations/europe-west4/publishers/google/models/gemini-2.5-pro:generateContent"},
		{"p", "us-central1", "google", "gemini-2.5-flash", StreamGenerateContent,
			"/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent"},
		// what is not a segment's stays in its segment
		{"a/b", "r?x", "anthropic", "m#1 2", RawPredict,
			"/v1/projects/a%2Fb/locations/r%3Fx/publishers/anthropic/models/m%231%202:rawPredict"},
	}
	for _, tt := range tests {
		if got := Path(tt.project, tt.region, tt.publisher, tt.model, tt.method); got != tt.want {
			t.Errorf("Path(%q, %q, %q, %q, %q) = %q, want %q", tt.project, tt.region, tt.publisher, tt.model, tt.method, got, tt.want)
		}
	}
}

func TestCountTokensPath(t *testing.T) {
	want := "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"
	if got := CountTokensPath("my-project", "us-east5"); got != want {
		t.Errorf("CountTokensPath = %q, want %q", got, want)
	}
}

// A Messages body made Vertex AI's: model gone, the version in unless the
// body has one, stream and every other field's bytes and order kept.
func TestBody(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"streamed", `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			`{"max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}],"anthropic_version":"vertex-2023-10-16"}`},
		{"the body's own version", `{"anthropic_version":"vertex-2023-10-16","messages":[]}`,
			`{"anthropic_version":"vertex-2023-10-16","messages":[]}`},
		// the Anthropic API's version, which Vertex AI refuses, gives way to Vertex AI's
		{"the Anthropic API's version", `{"anthropic_version":"2023-06-01","messages":[]}`,
			`{"messages":[],"anthropic_version":"vertex-2023-10-16"}`},
		{"Bedrock's version", `{"anthropic_version":"bedrock-2023-05-31"}`, `{"anthropic_version":"vertex-2023-10-16"}`},
		{"numbers as they were", `{"temperature": 1.0, "top_k": 5e0, "messages": [ ]}`,
			`{"temperature":1.0,"top_k":5e0,"messages":[ ],"anthropic_version":"vertex-2023-10-16"}`},
		{"betas stay where they are", `{"anthropic_beta":["context-1m-2025-08-07"],"model":"m"}`,
			`{"anthropic_beta":["context-1m-2025-08-07"],"anthropic_version":"vertex-2023-10-16"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Body([]byte(tt.body))
			if err != nil || string(got) != tt.want {
				t.Errorf("Body:\n%s %v\nwant:\n%s", got, err, tt.want)
			}
		})
	}
	for _, body := range []string{``, `[1]`, `{"a":`, `{} x`} {
		if _, err := Body([]byte(body)); !errors.Is(err, wire.ErrNotObject) {
			t.Errorf("Body(%q): %v, want wire.ErrNotObject", body, err)
		}
	}
}

func TestCountTokensBody(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"model":"claude-sonnet-4-5@20250929","max_tokens":1,"messages":[{"role":"user","content":"ping"}],"stream":false}`,
			`{"model":"claude-sonnet-4-5@20250929","messages":[{"role":"user","content":"ping"}],"anthropic_version":"vertex-2023-10-16"}`},
		{`{"anthropic_version":"2023-06-01","model":"m","messages":[]}`, `{"anthropic_version":"2023-06-01","model":"m","messages":[]}`},
	} {
		got, err := CountTokensBody([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("CountTokensBody(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := CountTokensBody([]byte(`[]`)); !errors.Is(err, wire.ErrNotObject) {
		t.Errorf("an array: %v", err)
	}
}
