package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/sim"
)

// Gemini CLI's recorded requests (its first turn, and the turn with its
// shell call's result) are answered the same under /v1beta/, where Gemini
// CLI calls, and under /v1/, @google/genai 3.x's default version:
// gemini-3-pro full, gemini-3-flash answers, and the records name the
// path the client called.
func TestGeminiCLIRequestsUnderBothVersions(t *testing.T) {
	for _, version := range []string{"/v1beta/", "/v1/"} {
		for _, name := range []string{"gemini-0.61-first", "gemini-0.61-tool-result"} {
			t.Run(strings.Trim(version, "/")+" "+name, func(t *testing.T) {
				r := newRig(t, nil, nil)
				r.fault(t, sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
				if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
					t.Fatal(err)
				}
				rec := loadRecording(t, name)
				rec.Path = version + strings.TrimPrefix(rec.Path, "/v1beta/")
				resp, body := rec.send(t, r, rec.Body)
				if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "gemini-3-flash" || resp.Header.Get("X-Spillway-Route") != "gemini-3-pro:capacity > gemini-3-flash:streaming" {
					t.Fatalf("%s: %d %v\n%s", rec.Path, resp.StatusCode, resp.Header, body)
				}
				evs := sseEvents(t, []byte(body))
				if len(evs) == 0 || !strings.Contains(body, `"finishReason":"STOP"`) {
					t.Fatalf("no Gemini stream:\n%s", body)
				}
				want := map[string]string{"gemini-0.61-first": `"name":"run_shell_command"`, "gemini-0.61-tool-result": "The command printed"}[name]
				if !strings.Contains(body, want) && !strings.Contains(behaviour.Text([]byte(body)), want) {
					t.Fatalf("the answer has no %s:\n%s", want, body)
				}
				wantEndpoint := version + "models/{model}:streamGenerateContent"
				for _, rec := range r.records() {
					if rec.Endpoint != wantEndpoint {
						t.Errorf("a record's endpoint %q, want %q", rec.Endpoint, wantEndpoint)
					}
				}
			})
		}
	}
}

// genaiClient is Google's Go SDK at the gateway, on API version.
func genaiClient(t *testing.T, url, version, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url + "/", APIVersion: version}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Google's own Go SDK, on API version v1 as @google/genai 3.x calls by
// default, through the gateway: a whole answer, a stream, countTokens,
// and a model of the list, with gemini-3-pro full.
func TestGoogleGenAISDKOnV1(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := genaiClient(t, r.url, "v1", "AIza-gemini-test-0123")
	const prompt = "Reply with pong"
	want := sim.Answer("gemini-3-flash", prompt, 16)

	resp, err := c.Models.GenerateContent(ctx, "gemini-3-pro", genai.Text(prompt), nil)
	if err != nil || resp.Text() != want {
		t.Fatalf("generateContent: %v %q, want %q", err, textOf(resp), want)
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
	tokens, err := c.Models.CountTokens(ctx, "gemini-3-pro", genai.Text(prompt), nil)
	if err != nil || tokens.TotalTokens == 0 {
		t.Fatalf("countTokens: %v %+v", err, tokens)
	}
	m, err := c.Models.Get(ctx, "gemini-3-flash", nil)
	if err != nil || m.Name != "models/gemini-3-flash" {
		t.Fatalf("a model: %v %+v", err, m)
	}
	got := map[string]int{}
	for _, rec := range r.records() {
		got[rec.Endpoint+" "+rec.Model+" "+rec.Class]++
	}
	if got["/v1/models/{model}:generateContent gemini-3-flash ok"] != 1 || got["/v1/models/{model}:streamGenerateContent gemini-3-flash ok"] != 1 {
		t.Fatalf("records %v", got)
	}
}

func textOf(r *genai.GenerateContentResponse) string {
	if r == nil {
		return ""
	}
	return r.Text()
}

// Both SDKs list their models at /v1/models: OpenAI's gets OpenAI's list,
// Google's (on v1, with its key and client header) Gemini's; each gets a
// model of its list, and a model of another format's list is not found,
// in its own shape.
func TestBothSDKsListModelsAtV1(t *testing.T) {
	r := newRig(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	oa := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	var ids []string
	iter := oa.Models.ListAutoPaging(ctx)
	for iter.Next() {
		ids = append(ids, iter.Current().ID)
	}
	cfg := simtest.Config(r.simURL)
	of := func(f wire.Format, prefix string) []string {
		var names []string
		for n := range cfg.Models {
			if wire.Format(cfg.ModelType(n)) == f {
				names = append(names, prefix+n)
			}
		}
		slices.Sort(names)
		return names
	}
	if err := iter.Err(); err != nil || !slices.Equal(ids, of(wire.OpenAI, "")) {
		t.Fatalf("OpenAI's list: %v %v", err, ids)
	}
	if m, err := oa.Models.Get(ctx, "gpt-6-luna"); err != nil || m.ID != "gpt-6-luna" || m.Object != "model" {
		t.Fatalf("OpenAI's model: %v %+v", err, m)
	}
	var apiErr *openai.Error
	if _, err := oa.Models.Get(ctx, "gemini-3-flash"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "not_found" {
		t.Fatalf("a Gemini model from OpenAI's list: %v", err)
	}

	g := genaiClient(t, r.url, "v1", "AIza-gemini-test-0123")
	var names []string
	for m, err := range g.Models.All(ctx) {
		if err != nil {
			t.Fatalf("Gemini's list: %v", err)
		}
		names = append(names, m.Name)
	}
	if !slices.Equal(names, of(wire.Gemini, "models/")) || len(names) == 0 {
		t.Fatalf("Gemini's list: %v", names)
	}
	var gErr genai.APIError
	if _, err := g.Models.Get(ctx, "gpt-6-luna", nil); !errors.As(err, &gErr) || gErr.Code != 404 || gErr.Status != "NOT_FOUND" {
		t.Fatalf("an OpenAI model from Gemini's list: %v", err)
	}
}

// Every refusal the gateway makes on a path of a format is in that
// format's shape: under /v1/, a Gemini method's path is Gemini's, and on
// /v1/models the caller's headers say whose it is. Each body is compared
// whole.
func TestRefusalsInTheShapeOfThePath(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		c.Gateway.Keys = []config.GatewayKey{{Name: "alice", Hash: config.KeyHash("gw-alice-0123")}}
	})
	const serves = "the gateway serves POST /v1/responses, /v1/chat/completions, /v1/embeddings, /v1/messages, /v1beta/models/MODEL:generateContent, :streamGenerateContent and :countTokens (under /v1/ too), GET /v1/models[/MODEL] and /v1beta/models[/MODEL], and a ChatGPT plan's Codex backend under /backend-api/codex/"
	const noKey = "spillway: this gateway needs a gateway key (gateway.keys), sent where your SDK sends its API key; the one sent is missing or not known"
	gemini := map[string]string{"X-Goog-Api-Key": "gw-alice-0123"}
	for _, c := range []struct {
		name, method, path string
		header             map[string]string
		body               string
		status             int
		want               string
	}{
		{"a Gemini method's path under /v1/ asked with GET", "GET", "/v1/models/gemini-3-pro:generateContent", gemini, "", 405,
			`{"error":{"code":405,"message":"spillway: GET /v1/models/gemini-3-pro:generateContent: this route takes POST; ` + serves + `","status":"INVALID_ARGUMENT"}}`},
		{"a body that is not JSON, under /v1/", "POST", "/v1/models/gemini-3-pro:generateContent", gemini, `{"contents":`, 400,
			`{"error":{"code":400,"message":"spillway: the request body is not a JSON object (unexpected end of JSON at byte 12); nothing was sent upstream","status":"INVALID_ARGUMENT"}}`},
		{"no gateway key, Gemini under /v1/", "POST", "/v1/models/gemini-3-pro:generateContent", nil, `{"contents":[]}`, 401,
			`{"error":{"code":401,"message":"` + noKey + `","status":"UNAUTHENTICATED"}}`},
		{"a method the gateway does not serve, under /v1beta/", "POST", "/v1beta/models/gemini-3-pro:embedContent", gemini, `{}`, 404,
			`{"error":{"code":404,"message":"spillway: gemini-3-pro:embedContent: the gateway serves generateContent, streamGenerateContent and countTokens of /v1beta/models/MODEL and /v1/models/MODEL","status":"NOT_FOUND"}}`},
		{"a method the gateway does not serve, under /v1/, Google's SDK asking", "POST", "/v1/models/gemini-3-pro:embedContent", gemini, `{}`, 404,
			`{"error":{"code":404,"message":"spillway: gemini-3-pro:embedContent: the gateway serves generateContent, streamGenerateContent and countTokens of /v1beta/models/MODEL and /v1/models/MODEL","status":"NOT_FOUND"}}`},
		{"a method the gateway does not serve, under /v1/, OpenAI's SDK asking", "POST", "/v1/models/gemini-3-pro:embedContent", map[string]string{"Authorization": "Bearer gw-alice-0123"}, `{}`, 405,
			`{"error":{"code":"method_not_allowed","message":"spillway: POST /v1/models/gemini-3-pro:embedContent: this route takes GET; ` + serves + `","param":null,"type":"invalid_request_error"}}`},
		{"the model list without a key, Google's SDK asking", "GET", "/v1/models", map[string]string{"X-Goog-Api-Client": "google-genai-sdk/1.79.1 gl-go/go1.26.8"}, "", 401,
			`{"error":{"code":401,"message":"` + noKey + `","status":"UNAUTHENTICATED"}}`},
		{"the model list without a key, OpenAI's SDK asking", "GET", "/v1/models", nil, "", 401,
			`{"error":{"code":"invalid_api_key","message":"` + noKey + `","param":null,"type":"invalid_request_error"}}`},
		{"the model list without a key, Anthropic's SDK asking", "GET", "/v1/models", map[string]string{"Anthropic-Version": "2023-06-01"}, "", 401,
			`{"error":{"message":"` + noKey + `","type":"authentication_error"},"type":"error"}`},
		{"a model not in Gemini's list", "GET", "/v1/models/gpt-6-luna", gemini, "", 404,
			`{"error":{"code":404,"message":"spillway: model \"gpt-6-luna\" is not one of the gemini models this gateway serves you (GET /v1/models lists them)","status":"NOT_FOUND"}}`},
		{"a model not in OpenAI's list", "GET", "/v1/models/gemini-3-pro", map[string]string{"Authorization": "Bearer gw-alice-0123"}, "", 404,
			`{"error":{"code":"not_found","message":"spillway: model \"gemini-3-pro\" is not one of the openai models this gateway serves you (GET /v1/models lists them)","param":null,"type":"invalid_request_error"}}`},
		{"a model not in Gemini's list under /v1beta/", "GET", "/v1beta/models/claude-haiku-5-5", gemini, "", 404,
			`{"error":{"code":404,"message":"spillway: model \"claude-haiku-5-5\" is not one of the gemini models this gateway serves you (GET /v1beta/models lists them)","status":"NOT_FOUND"}}`},
		{"no route under /v1/, OpenAI's", "GET", "/v1/nothing", nil, "", 404,
			`{"error":{"code":"not_found","message":"spillway: no route for GET /v1/nothing; ` + serves + `","param":null,"type":"invalid_request_error"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, r.url+c.path, strings.NewReader(c.body))
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := strings.TrimSpace(string(b)); resp.StatusCode != c.status || got != c.want {
				t.Fatalf("%d %s\nwant %d %s", resp.StatusCode, got, c.status, c.want)
			}
		})
	}
	if len(r.records()) != 0 {
		t.Fatal("a refused request was sent upstream")
	}
}
