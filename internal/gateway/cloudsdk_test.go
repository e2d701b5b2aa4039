package gateway_test

// Issue 49's proof with the clouds' own SDKs as clients: aws-sdk-go-v2's
// bedrockruntime and bedrock (control plane) clients, and the Anthropic Go
// SDK's Bedrock and Vertex AI clients, pointed at the gateway's /bedrock
// and /vertex routes, are answered through the model's chain (here:
// Anthropic's pool full, Bedrock us-east-1 answers), read whole and
// streamed, count tokens, and get the cloud's own error when every pool
// is full. Their credentials (a SigV4 signature, a Google token) are
// never checked and never forwarded.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	abedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	avertex "github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsbedrock "github.com/aws/aws-sdk-go-v2/service/bedrock"
	bedrocktypes "github.com/aws/aws-sdk-go-v2/service/bedrock/types"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/sim"
)

// The clients' own credentials: canaries that must reach no upstream.
const (
	clientKeyID  = "AKIDCLIENTSDK0000001"
	clientSecret = "CANARYclientAwsSecret7d1f"
	clientToken  = "ya29.CANARYclientGoogleToken3b9"
)

// awsClientCreds are the static AWS credentials the SDK clients sign with.
var awsClientCreds = credentials.NewStaticCredentialsProvider(clientKeyID, clientSecret, "")

// runtimeOf is aws-sdk-go-v2's bedrockruntime client at the gateway's
// /bedrock, signing with the client's own credentials, not retrying.
func runtimeOf(cr *cloudRig) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(cr.url + "/bedrock"), Credentials: awsClientCreds,
		HTTPClient: cr.client(), Retryer: aws.NopRetryer{},
	})
}

// invokeBody is an InvokeModel body for prompt, as Bedrock's clients send it.
func invokeBody(prompt string) []byte {
	b, _ := json.Marshal(map[string]any{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
		"messages": []map[string]any{{"role": "user", "content": prompt}}})
	return b
}

// lastCloudRecord is the last record of an answer to a request of a cloud
// client (its endpoint under /bedrock or /vertex).
func lastCloudRecord(t *testing.T, cr *cloudRig, cloud string) events.Record {
	t.Helper()
	var last events.Record
	for _, rec := range cr.records() {
		if rec.Class == "ok" && strings.HasPrefix(rec.Endpoint, "/"+cloud+"/") {
			last = rec
		}
	}
	if last.Endpoint == "" {
		t.Fatalf("no record of an answer to a %s client", cloud)
	}
	return last
}

// ownAnthropicKey gives the rig's Anthropic API provider a key of
// spillway's own: a cloud client sends none the gateway could pass on, so
// only then is Anthropic's pool a step of its requests.
func ownAnthropicKey(o *gateway.Options) {
	p := o.Config.Providers["anthropic"]
	p.Auth, p.APIKey = config.AuthKey, config.Secret{Value: "sk-ant-api03-spillway-own-key"}
	o.Config.Providers["anthropic"] = p
}

// fellBack is the route of an answer from Bedrock us-east-1 with
// Anthropic's pool full.
const fellBack = cloudModel + "@anthropic:capacity > " + cloudModel + "@bedrock-east:ok"

// noClientCredentials fails t when a client's credential reached a pool
// of the simulator, or anything the clients read back.
func noClientCredentials(t *testing.T, cr *cloudRig) {
	t.Helper()
	for _, srv := range []*sim.Server{cr.sim, cr.sim.Region("us-east-1"), cr.sim.Region("us-west-2")} {
		for pool, st := range srv.Snapshot().Models {
			for _, k := range []string{clientKeyID, clientToken, "Bearer " + clientToken} {
				if st.Credentials[sim.Fingerprint(k, "")] > 0 {
					t.Errorf("pool %s saw the client's credential %s", pool, k)
				}
			}
		}
	}
	cr.mu.Lock()
	answers := cr.answers.String()
	cr.mu.Unlock()
	for _, k := range []string{clientKeyID, clientSecret, clientToken, cloudKeyID, cloudSecret, cloudSession, cloudBedrockKey, "CANARYwrongBedrockKey", "123456789012"} {
		if strings.Contains(answers, k) {
			i := strings.Index(answers, k)
			t.Errorf("an answer carries %s: …%s…", k, answers[max(0, i-300):min(len(answers), i+100)])
		}
	}
}

// aws-sdk-go-v2's bedrockruntime client: InvokeModel and
// InvokeModelWithResponseStream (its event-stream reader, to the end) by
// every kind of id (a profile, its ARN, a configured name, a profile the
// gateway lists) are answered by Bedrock us-east-1 with Anthropic's pool
// full; CountTokens counts; with every pool full the SDK's typed
// ServiceUnavailableException carries spillway's words.
func TestCloudSDKBedrockRuntime(t *testing.T) {
	cr := newCloudRig(t, ownAnthropicKey)
	cr.fault(t, sim.Fault{Model: cloudModel, Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := runtimeOf(cr)
	const pool = "bedrock/" + cloudModel
	for i, id := range []string{bedrockProfile, bedrockARN, cloudModel, "global.anthropic.claude-sonnet-5-5"} {
		t.Run("invoke "+id, func(t *testing.T) {
			prompt := fmt.Sprint("invoke by id ", i) // (the answer echoes it: no account in it)
			out, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(id), Body: invokeBody(prompt),
				ContentType: aws.String("application/json"), Accept: aws.String("application/json")})
			if err != nil {
				t.Fatal(err)
			}
			var msg anthropic.Message
			if err := json.Unmarshal(out.Body, &msg); err != nil || len(msg.Content) == 0 {
				t.Fatalf("InvokeModel's answer %s: %v", out.Body, err)
			}
			if want := sim.Answer(pool, prompt, 16); msg.Content[0].Text != want || msg.Model == "" {
				t.Errorf("answer %q (model %q), want %q", msg.Content[0].Text, msg.Model, want)
			}
			if rec := lastCloudRecord(t, cr, "bedrock"); rec.Route != fellBack || rec.Deployment != "bedrock-east" {
				t.Errorf("record: route %q deployment %q", rec.Route, rec.Deployment)
			}
		})
		t.Run("stream "+id, func(t *testing.T) {
			prompt := fmt.Sprint("stream by id ", i)
			out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(id),
				Body: invokeBody(prompt), ContentType: aws.String("application/json")})
			if err != nil {
				t.Fatal(err)
			}
			stream := out.GetStream()
			defer stream.Close()
			text, types_ := "", []string{}
			for ev := range stream.Events() {
				chunk, ok := ev.(*types.ResponseStreamMemberChunk)
				if !ok {
					t.Fatalf("an event of type %T", ev)
				}
				var e struct {
					Type  string `json:"type"`
					Delta struct {
						Text string `json:"text"`
					} `json:"delta"`
				}
				if err := json.Unmarshal(chunk.Value.Bytes, &e); err != nil {
					t.Fatalf("a chunk that is no Messages event: %s", chunk.Value.Bytes)
				}
				types_ = append(types_, e.Type)
				text += e.Delta.Text
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if want := sim.Answer(pool, prompt, 16); text != want {
				t.Errorf("streamed %q, want %q", text, want)
			}
			if len(types_) < 4 || types_[0] != "message_start" || types_[len(types_)-1] != "message_stop" {
				t.Errorf("the events: %v", types_)
			}
			if rec := lastCloudRecord(t, cr, "bedrock"); rec.Route != fellBack {
				t.Errorf("record: route %q", rec.Route)
			}
		})
	}
	t.Run("count tokens", func(t *testing.T) {
		short, err := c.CountTokens(ctx, &bedrockruntime.CountTokensInput{ModelId: aws.String(bedrockProfile),
			Input: &types.CountTokensInputMemberInvokeModel{Value: types.InvokeModelTokensRequest{Body: invokeBody("count me")}}})
		if err != nil {
			t.Fatal(err)
		}
		long, err := c.CountTokens(ctx, &bedrockruntime.CountTokensInput{ModelId: aws.String(cloudModel),
			Input: &types.CountTokensInputMemberInvokeModel{Value: types.InvokeModelTokensRequest{Body: invokeBody(strings.Repeat("count me too ", 50))}}})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToInt32(short.InputTokens) <= 0 || aws.ToInt32(long.InputTokens) <= aws.ToInt32(short.InputTokens) {
			t.Errorf("counts %d and %d", aws.ToInt32(short.InputTokens), aws.ToInt32(long.InputTokens))
		}
	})
	t.Run("count of an unknown model", func(t *testing.T) {
		_, err := c.CountTokens(ctx, &bedrockruntime.CountTokensInput{ModelId: aws.String("us.anthropic.claude-nonesuch-1"),
			Input: &types.CountTokensInputMemberInvokeModel{Value: types.InvokeModelTokensRequest{Body: invokeBody("x")}}})
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) || !strings.Contains(nf.ErrorMessage(), "spillway: ") {
			t.Errorf("%T %v", err, err)
		}
	})
	t.Run("all full", func(t *testing.T) {
		// (the chain goes on to claude-haiku-5-5: every pool of every cloud full)
		for _, srv := range []*sim.Server{cr.sim, cr.sim.Region("us-east-1"), cr.sim.Region("us-west-2")} {
			if err := srv.AddFault(sim.Fault{Model: "*", Kind: "capacity", Count: -1}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockProfile), Body: invokeBody("no room"),
			ContentType: aws.String("application/json")})
		var unavailable *types.ServiceUnavailableException
		if !errors.As(err, &unavailable) {
			t.Fatalf("%T %v, want a ServiceUnavailableException (the last answer's route %q)", err, err, lastCloudRecord(t, cr, "bedrock").Route)
		}
		if msg := unavailable.ErrorMessage(); !strings.HasPrefix(msg, "spillway: ") || !strings.Contains(msg, cloudModel) {
			t.Errorf("the exception's message %q", msg)
		}
		out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(bedrockProfile),
			Body: invokeBody("no room"), ContentType: aws.String("application/json")})
		if err == nil { // the stream's exception, when the answer had begun
			for range out.GetStream().Events() {
			}
			err = out.GetStream().Err()
		}
		if !errors.As(err, &unavailable) || !strings.HasPrefix(unavailable.ErrorMessage(), "spillway: ") {
			t.Errorf("stream: %T %v, want a ServiceUnavailableException", err, err)
		}
	})
	noClientCredentials(t, cr)
}

// The Anthropic Go SDK's Bedrock client (SigV4 with the client's static
// credentials, which the gateway neither checks nor forwards) and its
// Vertex AI client (a token source of the client's) read a whole and a
// streamed answer through the gateway, from Bedrock us-east-1 with
// Anthropic's pool full; the Vertex AI client counts tokens.
func TestCloudSDKAnthropic(t *testing.T) {
	cr := newCloudRig(t, ownAnthropicKey)
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "") // (the SDK's Bedrock client would take it over SigV4)
	cr.fault(t, sim.Fault{Model: cloudModel, Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bedrockClient := anthropic.NewClient(
		abedrock.WithConfig(aws.Config{Region: "us-east-1", Credentials: awsClientCreds}),
		aoption.WithBaseURL(cr.url), // (its paths at the gateway's root: the client replaces a base URL's path)
		aoption.WithHTTPClient(cr.client()), aoption.WithMaxRetries(0))
	vertexClient := anthropic.NewClient(
		aoption.WithHTTPClient(cr.client()), // (before the Vertex AI option, which wraps it with its token)
		avertex.WithCredentials(ctx, "us-east5", "my-proj", &google.Credentials{ProjectID: "my-proj",
			TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: clientToken, TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)})}),
		aoption.WithBaseURL(cr.url), aoption.WithMaxRetries(0))
	const pool = "bedrock/" + cloudModel
	for _, c := range []struct {
		name, cloud string
		client      anthropic.Client
		model       string
	}{
		{"bedrock profile", "bedrock", bedrockClient, bedrockProfile},
		{"bedrock name", "bedrock", bedrockClient, cloudModel},
		{"vertex versioned", "vertex", vertexClient, vertexClaude},
		{"vertex name", "vertex", vertexClient, cloudModel},
	} {
		params := func(prompt string) anthropic.MessageNewParams {
			p := claudeParams(prompt)
			p.Model = anthropic.Model(c.model)
			return p
		}
		t.Run(c.name+" whole", func(t *testing.T) {
			prompt := "whole " + c.name
			m, err := c.client.Messages.New(ctx, params(prompt))
			if err != nil {
				t.Fatal(err)
			}
			if want := sim.Answer(pool, prompt, 16); len(m.Content) == 0 || m.Content[0].Text != want {
				t.Errorf("answer %+v, want %q", m.Content, want)
			}
			if rec := lastCloudRecord(t, cr, c.cloud); rec.Route != fellBack {
				t.Errorf("record: route %q", rec.Route)
			}
		})
		t.Run(c.name+" stream", func(t *testing.T) {
			prompt := "stream " + c.name
			s := c.client.Messages.NewStreaming(ctx, params(prompt))
			msg := anthropic.Message{}
			for s.Next() {
				if err := msg.Accumulate(s.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if want := sim.Answer(pool, prompt, 16); len(msg.Content) == 0 || msg.Content[0].Text != want || msg.StopReason == "" {
				t.Errorf("streamed %+v (stop %q), want %q", msg.Content, msg.StopReason, want)
			}
			if rec := lastCloudRecord(t, cr, c.cloud); rec.Route != fellBack {
				t.Errorf("record: route %q", rec.Route)
			}
		})
	}
	t.Run("vertex count tokens", func(t *testing.T) {
		n, err := vertexClient.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: vertexClaude,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count these words"))}})
		if err != nil {
			t.Fatal(err)
		}
		if n.InputTokens <= 0 {
			t.Errorf("count %d", n.InputTokens)
		}
	})
	noClientCredentials(t, cr)
}

// aws-sdk-go-v2's bedrock (control plane) client lists the gateway's
// inference profiles (SYSTEM_DEFINED, a page at a time), each of which
// maps back to a configured model, GetInferenceProfile gets one, and an
// unknown id is its typed ResourceNotFoundException.
func TestCloudSDKInferenceProfiles(t *testing.T) {
	cr := newCloudRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := awsbedrock.New(awsbedrock.Options{Region: "us-east-1", BaseEndpoint: aws.String(cr.url + "/bedrock"), Credentials: awsClientCreds,
		HTTPClient: cr.client(), Retryer: aws.NopRetryer{}})
	cfg := cr.gw.Engine().Config()
	pages := awsbedrock.NewListInferenceProfilesPaginator(c, &awsbedrock.ListInferenceProfilesInput{TypeEquals: bedrocktypes.InferenceProfileTypeSystemDefined, MaxResults: aws.Int32(4)})
	var ids []string
	n := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n++; len(page.InferenceProfileSummaries) > 4 {
			t.Fatalf("a page of %d", len(page.InferenceProfileSummaries))
		}
		for _, p := range page.InferenceProfileSummaries {
			id := aws.ToString(p.InferenceProfileId)
			ids = append(ids, id)
			model, ok := cfg.CloudModel(id)
			if !ok || !strings.Contains(id, "anthropic") || p.Status != bedrocktypes.InferenceProfileStatusActive || len(p.Models) != 1 {
				t.Errorf("profile %s (model %q)", id, model)
			}
		}
	}
	if n < 2 || len(ids) < 8 {
		t.Fatalf("%d pages, ids %v", n, ids)
	}
	for _, want := range []string{bedrockProfile, "eu.anthropic." + cloudModel, "us.anthropic.claude-opus-5-5", "global.anthropic.claude-haiku-5-5"} {
		found := false
		for _, id := range ids {
			found = found || id == want
		}
		if !found {
			t.Errorf("%s not listed: %v", want, ids)
		}
	}
	got, err := c.GetInferenceProfile(ctx, &awsbedrock.GetInferenceProfileInput{InferenceProfileIdentifier: aws.String(bedrockARN)})
	if err != nil || aws.ToString(got.InferenceProfileId) != bedrockProfile || len(got.Models) != 1 ||
		!strings.HasSuffix(aws.ToString(got.Models[0].ModelArn), "/anthropic.claude-sonnet-5-5-20261001-v1:0") {
		t.Errorf("GetInferenceProfile: %v %+v", err, got)
	}
	_, err = c.GetInferenceProfile(ctx, &awsbedrock.GetInferenceProfileInput{InferenceProfileIdentifier: aws.String("us.anthropic.claude-nonesuch-1")})
	var nf *bedrocktypes.ResourceNotFoundException
	if !errors.As(err, &nf) || !strings.Contains(nf.ErrorMessage(), "spillway: ") {
		t.Errorf("an unknown profile: %T %v", err, err)
	}
}

// A cloud client's token count through the gateway's routes: counted by
// the model's first deployment that counts and answers (Bedrock's
// CountTokens, Vertex AI's count-tokens rawPredict), the next when one
// cannot be reached; a model none of whose deployments counts is the
// cloud's 404, one whose counters all fail its 503, a body it cannot read
// its 400, each in spillway's words.
func TestCloudCount(t *testing.T) {
	invoke := func(prompt string) string {
		b, _ := json.Marshal(map[string]any{"input": map[string]any{"invokeModel": map[string]any{"body": invokeBody(prompt)}}})
		return string(b)
	}
	vertexBody := func(model string) string {
		return `{"model":"` + model + `","anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":"count these words"}]}`
	}
	const vertexCount = "/vertex/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"
	bedrockCount := func(id string) string { return "/bedrock/model/" + url.PathEscape(id) + "/count-tokens" }
	unreachable := func(names ...string) func(*gateway.Options) {
		return func(o *gateway.Options) {
			for _, n := range names {
				p := o.Config.Providers[n]
				p.BaseURL = "http://127.0.0.1:1" // (nothing listens there)
				o.Config.Providers[n] = p
			}
		}
	}
	wrongKey := func(name string) func(*gateway.Options) {
		return func(o *gateway.Options) {
			p := o.Config.Providers[name]
			p.APIKey = config.Secret{Value: "CANARYwrongBedrockKey"}
			o.Config.Providers[name] = p
		}
	}
	throttled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-Errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"message":"Too many requests, please wait before trying again."}`))
	}))
	t.Cleanup(throttled.Close)
	full := func(names ...string) func(*gateway.Options) {
		return func(o *gateway.Options) {
			for _, n := range names {
				p := o.Config.Providers[n]
				p.BaseURL = throttled.URL
				o.Config.Providers[n] = p
			}
		}
	}
	both := func(a, b func(*gateway.Options)) func(*gateway.Options) {
		return func(o *gateway.Options) { a(o); b(o) }
	}
	for _, c := range []struct {
		name      string
		opt       func(*gateway.Options)
		path      string
		body      string
		status    int
		errType   string // x-amzn-errortype, or Google's status
		answer    string // a member of the answer, or words of the error
		countedBy string
	}{
		{"bedrock profile", nil, bedrockCount(bedrockProfile), invoke("count me"), 200, "", `"inputTokens":`, "bedrock-east"},
		{"bedrock arn", nil, bedrockCount(bedrockARN), invoke("count me"), 200, "", `"inputTokens":`, "bedrock-east"},
		{"vertex", nil, vertexCount, vertexBody(vertexClaude), 200, "", `"input_tokens":`, "bedrock-east"},
		{"the next counts", unreachable("bedrock-east"), bedrockCount(cloudModel), invoke("count me"), 200, "", `"inputTokens":`, "bedrock-west"},
		{"vertex counts last", unreachable("bedrock-east", "bedrock-west"), vertexCount, vertexBody(cloudModel), 200, "", `"input_tokens":`, "vertex"},
		{"bedrock, none counts", nil, bedrockCount("claude-haiku-5-5"), invoke("count me"), 404, "ResourceNotFoundException", "spillway: no deployment of claude-haiku-5-5 counts tokens", ""},
		{"vertex, none counts", nil, vertexCount, vertexBody("claude-haiku-5-5"), 404, "NOT_FOUND", "spillway: no deployment of claude-haiku-5-5 counts tokens", ""},
		{"all fail", unreachable("bedrock-east", "bedrock-west", "vertex-global"), bedrockCount(bedrockProfile), invoke("count me"), 500, "InternalServerException", "spillway: no deployment of claude-sonnet-5-5 could count tokens: bedrock-east: ", ""}, // (api_error: Bedrock's 500)
		// every counter full for now: the cloud's "full", which a client may retry later
		{"all full", full("bedrock-east", "bedrock-west", "vertex-global"), bedrockCount(bedrockProfile), invoke("count me"), 503, "ServiceUnavailableException", "spillway: no deployment of claude-sonnet-5-5 could count tokens: bedrock-east: HTTP 429", ""},
		{"vertex, all full", full("bedrock-east", "bedrock-west", "vertex-global"), vertexCount, vertexBody(cloudModel), 429, "RESOURCE_EXHAUSTED", "spillway: no deployment of claude-sonnet-5-5 could count tokens: ", ""},
		{"vertex, all fail", unreachable("bedrock-east", "bedrock-west", "vertex-global"), vertexCount, vertexBody(cloudModel), 500, "INTERNAL", "spillway: no deployment of claude-sonnet-5-5 could count tokens: ", ""},
		{"a refusal passes on", both(unreachable("bedrock-east"), wrongKey("bedrock-west")), bedrockCount(bedrockProfile), invoke("count me"), 200, "", `"inputTokens":`, "vertex"},
		{"a refusal named", both(unreachable("bedrock-east", "vertex-global"), wrongKey("bedrock-west")), bedrockCount(bedrockProfile), invoke("count me"), 500, "InternalServerException",
			"bedrock-west: HTTP 403: provider bedrock-west's own cloud credentials were refused", ""},
		{"converse", nil, bedrockCount(bedrockProfile), `{"input":{"converse":{"messages":[]}}}`, 400, "ValidationException", "spillway: ", ""},
		{"vertex, not json", nil, vertexCount, `[1]`, 400, "INVALID_ARGUMENT", "spillway: ", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := newCloudRig(t, c.opt)
			req, _ := http.NewRequest("POST", cr.url+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+clientToken)
			resp, err := cr.client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !strings.Contains(string(b), c.answer) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if c.status == 200 {
				var n map[string]int
				if err := json.Unmarshal(b, &n); err != nil || len(n) != 1 || (n["inputTokens"] <= 0 && n["input_tokens"] <= 0) {
					t.Errorf("the count %s", b)
				}
				cr.mu.Lock()
				logs := cr.logs.String()
				cr.mu.Unlock()
				if !strings.Contains(logs, `"counted_by":"`+c.countedBy+`"`) {
					t.Errorf("not counted by %s: %s", c.countedBy, grep(logs, "counted_by"))
				}
				return
			}
			got := resp.Header.Get("X-Amzn-Errortype")
			if strings.HasPrefix(c.path, "/vertex/") {
				var g struct {
					Error struct {
						Status string `json:"status"`
					} `json:"error"`
				}
				_ = json.Unmarshal(b, &g)
				got = g.Error.Status
			}
			if !strings.HasPrefix(got, c.errType) {
				t.Errorf("error type %q, want %s: %s", got, c.errType, b)
			}
			noClientCredentials(t, cr)
		})
	}
}

// On a gateway with keys, a cloud client's other calls need one of them
// too, as Claude Code sends it (AWS_BEARER_TOKEN_BEDROCK: Authorization:
// Bearer KEY): the inference profiles and a token count answer with the
// key, refuse without it in the cloud's shape, and a key may count and
// list only the models of its chains.
func TestCloudCallsNeedAGatewayKey(t *testing.T) {
	const alice, bob = "gw-alice-cloud-0123", "gw-bob-cloud-0123"
	cr := newCloudRig(t, func(o *gateway.Options) {
		o.Config.Gateway.Keys = []config.GatewayKey{
			{Name: "alice", Hash: config.KeyHash(alice)},
			{Name: "bob", Hash: config.KeyHash(bob), Chains: []string{"codex"}},
		}
	})
	count := `{"input":{"invokeModel":{"body":"` + base64.StdEncoding.EncodeToString(invokeBody("count me")) + `"}}}`
	for _, c := range []struct {
		name, method, path, body, key string
		status                        int
		errType                       string
	}{
		{"profiles", "GET", "/bedrock/inference-profiles?type=SYSTEM_DEFINED", "", alice, 200, ""},
		{"profiles, no key", "GET", "/bedrock/inference-profiles?type=SYSTEM_DEFINED", "", "", 403, "AccessDeniedException"}, // (Bedrock has no 401)
		{"profile", "GET", "/bedrock/inference-profiles/" + url.PathEscape(bedrockProfile), "", alice, 200, ""},
		{"profile, unknown key", "GET", "/bedrock/inference-profiles/" + url.PathEscape(bedrockProfile), "", "gw-nobody", 403, "AccessDeniedException"}, // (Bedrock has no 401)
		{"count", "POST", "/bedrock/model/" + url.PathEscape(bedrockProfile) + "/count-tokens", count, alice, 200, ""},
		{"count, no key", "POST", "/bedrock/model/" + url.PathEscape(bedrockProfile) + "/count-tokens", count, "", 403, "AccessDeniedException"}, // (Bedrock has no 401)
		{"profiles, another chain's key: none of this chain's", "GET", "/bedrock/inference-profiles?type=SYSTEM_DEFINED", "", bob, 200, ""},
		{"profile, another chain's key", "GET", "/bedrock/inference-profiles/" + url.PathEscape(bedrockProfile), "", bob, 404, "ResourceNotFoundException"},
		{"count, another chain's key", "POST", "/bedrock/model/" + url.PathEscape(bedrockProfile) + "/count-tokens", count, bob, 403, "AccessDeniedException"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, cr.url+c.path, strings.NewReader(c.body))
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			resp, err := cr.client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || resp.Header.Get("X-Amzn-Errortype") != c.errType {
				t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), b)
			}
			if c.status != 200 && !strings.Contains(string(b), `"message":"spillway: `) {
				t.Errorf("the refusal %s", b)
			}
			if strings.Contains(string(b), alice) || strings.Contains(string(b), bob) {
				t.Errorf("a key in the answer: %s", b)
			}
			if c.method == "GET" && c.status == 200 && strings.Contains(string(b), cloudModel) != (c.key == alice) {
				t.Errorf("the list for key %q names %s: %v, want %v (bob's chain is codex)", c.key, cloudModel, !(c.key == alice), c.key == alice)
			}
		})
	}
}
