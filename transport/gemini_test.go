package transport_test

import (
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/spillway/spillway/sim"
)

// Google's own Go SDK on API version v1 (@google/genai 3.x's default)
// through the library: formats.EndpointFor knows /v1/models/MODEL:METHOD as
// it knows /v1beta/, so gemini-3-pro full, gemini-3-flash answers, whole
// and streamed, at the path the caller used.
func TestGoogleGenAISDKOnV1(t *testing.T) {
	r := newRig(t, nil)
	r.fault(t, sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
	ctx := testCtx(t)
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "AIza-test-key-0123456789", Backend: genai.BackendGeminiAPI,
		HTTPClient:  &http.Client{Transport: r.tr},
		HTTPOptions: genai.HTTPOptions{BaseURL: r.url + "/", APIVersion: "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "fall back please"
	want := sim.Answer("gemini-3-flash", prompt, 16)
	resp, err := c.Models.GenerateContent(ctx, "gemini-3-pro", genai.Text(prompt), nil)
	if err != nil || resp.Text() != want {
		t.Fatalf("generateContent: %v, want %q", err, want)
	}
	var text strings.Builder
	for chunk, err := range c.Models.GenerateContentStream(ctx, "gemini-3-pro", genai.Text(prompt), nil) {
		if err != nil {
			t.Fatalf("streamGenerateContent: %v", err)
		}
		text.WriteString(chunk.Text())
	}
	if text.String() != want {
		t.Fatalf("streamGenerateContent: %q, want %q", text.String(), want)
	}
	if got := r.route(); got != "gemini-3-pro:capacity > gemini-3-flash:ok > gemini-3-pro:capacity > gemini-3-flash:ok" {
		t.Fatalf("route %q", got)
	}
	for _, rec := range r.records() {
		if !strings.HasPrefix(rec.Endpoint, "/v1/models/gemini-3-pro:") {
			t.Fatalf("a record's endpoint %q: not the path the caller used", rec.Endpoint)
		}
	}
}
