package gateway_test

// The cloud front ends (/bedrock, /vertex) as any client reaches them: the
// model id of the path, in each shape a cloud client writes it, names the
// configured model; the request walks its chain, each step with its
// provider's own credentials (a cloud client has none of a vendor's); and
// no credential of the client's reaches an upstream.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
)

// clientCanary is a credential of the client's: finding it upstream is a
// leak.
const clientCanary = "CLIENTCANARYcred7d1f"

func TestCloudFrontEndsNameTheirModel(t *testing.T) {
	cr := newCloudRig(t, nil)
	body := `{"anthropic_version":"%s","max_tokens":32,"messages":[{"role":"user","content":"hello"}]}`
	bedrockBody := strings.Replace(body, "%s", "bedrock-2023-05-31", 1)
	vertexBody := strings.Replace(body, "%s", "vertex-2023-10-16", 1)
	cases := []struct {
		name, path, body string
		status           int
	}{
		{"bedrock, Claude Code's profile id", "/bedrock/model/us.anthropic.claude-sonnet-5-5/invoke", bedrockBody, 200},
		{"bedrock, a deployment's ARN, escaped", "/bedrock/model/" + url.PathEscape(bedrockARN) + "/invoke", bedrockBody, 200},
		{"bedrock, a foundation model id, escaped", "/bedrock/model/" + url.PathEscape("anthropic.claude-sonnet-5-5-20261001-v1:0") + "/invoke", bedrockBody, 200},
		{"bedrock, the model's name", "/bedrock/model/claude-sonnet-5-5/invoke", bedrockBody, 200},
		{"vertex, a deployment's id", "/vertex/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-5-5@20261001:rawPredict", vertexBody, 200},
		{"vertex without its API version", "/vertex/projects/p/locations/global/publishers/anthropic/models/claude-sonnet-5-5:rawPredict", vertexBody, 200},
		{"bedrock at the gateway's root (the Anthropic Go SDK's Bedrock client)", "/model/claude-sonnet-5-5/invoke", bedrockBody, 200},
		{"vertex at the gateway's root (its Vertex AI client)", "/v1/projects/p/locations/global/publishers/anthropic/models/claude-sonnet-5-5:rawPredict", vertexBody, 200},
		{"bedrock, a model no one serves", "/bedrock/model/us.anthropic.claude-opus-4-7/invoke", bedrockBody, 404},
		{"bedrock, Converse", "/bedrock/model/claude-sonnet-5-5/converse", `{}`, 404},
		{"vertex, Google's publisher", "/vertex/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro:generateContent", `{}`, 404},
		{"vertex, a path of no model", "/vertex/v1/projects/p/locations/global/endpoints/e:predict", `{}`, 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(cr.records())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// and a presigned URL's credentials, an access token
			query := "?X-Amz-Credential=AKID" + clientCanary + "&X-Amz-Security-Token=" + clientCanary + "&access_token=" + clientCanary + "&key=" + clientCanary
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cr.url+c.path+query, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			// what a SigV4-signing client sends, and a Google token
			req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID"+clientCanary+"/20261130/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc")
			req.Header.Set("X-Amz-Security-Token", clientCanary)
			req.Header.Set("X-Goog-User-Project", clientCanary)
			req.Header.Set("Api-Key", clientCanary)
			req.Header.Set("X-Api-Key", clientCanary)
			req.Header.Set("Cookie", "session="+clientCanary)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			if c.status != 200 {
				if !bytes.Contains(b, []byte("spillway:")) {
					t.Fatalf("refusal %s does not say why in spillway's words", b)
				}
				if len(cr.records()) != before {
					t.Fatalf("a refused request reached an upstream: %+v", cr.records()[before:])
				}
				return
			}
			var m struct {
				Content []struct{ Text string }
			}
			if json.Unmarshal(b, &m) != nil || len(m.Content) == 0 || !strings.Contains(m.Content[0].Text, "hello") {
				t.Fatalf("answer %s is not the model's Messages answer", b)
			}
			recs := cr.records()[before:]
			if len(recs) != 1 || recs[0].Model != cloudModel || recs[0].Deployment != "anthropic" || recs[0].Class != "ok" {
				t.Fatalf("records %+v: want one answer of %s on its first deployment (anthropic, with its own key)", recs, cloudModel)
			}
		})
	}
	cr.watch.mu.Lock()
	for _, h := range cr.watch.headers {
		if h.Get("Anthropic-Version") != "" && h.Get("X-Api-Key") != ownKeys["anthropic"] {
			t.Errorf("the Anthropic API was sent x-api-key %q, not the provider's own", h.Get("X-Api-Key"))
		}
	}
	cr.watch.mu.Unlock()
	cr.watch.mu.Lock()
	defer cr.watch.mu.Unlock()
	for _, u := range cr.watch.urls {
		if strings.Contains(u, clientCanary) {
			t.Errorf("the client's credential reached the simulator in a URL: %s", u)
		}
	}
	for _, h := range cr.watch.headers {
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, clientCanary) {
					t.Errorf("the client's credential reached the simulator in %s: %s", k, v)
				}
			}
		}
	}
}

// A cloud client's request goes to each step with its provider's own key,
// under auth: passthrough too; a step whose provider has none is passed
// over (no_key in the route) and the next answers.
func TestACloudClientTakesOnlyStepsWithAKeyOfTheirOwn(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		own := c.Providers["anthropic"]
		own.APIKey = config.Secret{Value: "sk-ant-own-cloudfront-0123"}
		c.Providers["anthropic-own"] = own
		bare := c.Providers["anthropic"]
		bare.APIKey = config.Secret{}
		c.Providers["anthropic"] = bare
		m := c.Models["claude-sonnet-5-5"]
		m.Deployments = []config.Deployment{{Name: "bare", Provider: "anthropic", Weight: 1_000_000}, {Name: "own", Provider: "anthropic-own", Weight: 1}}
		c.Models["claude-sonnet-5-5"] = m
	})
	req, _ := http.NewRequest(http.MethodPost, r.url+"/bedrock/model/us.anthropic.claude-sonnet-5-5/invoke",
		strings.NewReader(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+clientCanary)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	route := resp.Header.Get("X-Spillway-Route")
	if resp.StatusCode != 200 || route != "claude-sonnet-5-5@bare:no_key > claude-sonnet-5-5@own:ok" {
		t.Fatalf("status %d route %q: %s", resp.StatusCode, route, b)
	}
	if strings.Contains(r.logs.String(), clientCanary) {
		t.Fatal("the client's bearer is in the gateway's log")
	}
}
