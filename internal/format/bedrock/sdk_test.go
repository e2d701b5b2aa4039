package bedrock_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	abedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/spillway/spillway/internal/format/bedrock"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/internal/sse"
)

// relay is a Bedrock front end for the test: the InvokeModel request read
// as a Messages one (ClientRequest), sent to the simulator's Anthropic
// API, and its answer written back through Answer in small writes, as
// the gateway relays. sent keeps the Messages bytes the simulator sent.
type relay struct {
	sim string
	// answer, when set, writes the Messages answer instead of the
	// simulator
	answer func(w http.ResponseWriter)

	mu   sync.Mutex
	sent []byte
	body []byte // the Messages request
}

func (rl *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := bedrock.NewAnswer(w)
	defer a.Close()
	if rl.answer != nil {
		rl.answer(a)
		return
	}
	stream := strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream")
	in, _ := io.ReadAll(r.Body)
	body, _, err := bedrock.ClientRequest(in, "claude-sonnet-5-5", stream)
	if err != nil {
		http.Error(a, err.Error(), http.StatusBadRequest)
		return
	}
	rl.mu.Lock()
	rl.body = body
	rl.mu.Unlock()
	req, _ := http.NewRequestWithContext(r.Context(), "POST", rl.sim+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("x-api-key", "sk-ant-test")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(a, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		a.Header()[k] = v
	}
	a.WriteHeader(resp.StatusCode)
	buf := make([]byte, 37) // events split across writes
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			rl.mu.Lock()
			rl.sent = append(rl.sent, buf[:n]...)
			rl.mu.Unlock()
			a.Write(buf[:n])
			a.Flush()
		}
		if err != nil {
			return
		}
	}
}

// client is aws-sdk-go-v2's bedrockruntime client of url, signing with
// static test credentials (SigV4: its bearer token wants HTTPS, and its
// anonymous credentials fall to the bearer scheme), no retries.
func client(url string) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "test-secret"}, nil
		}),
		Retryer: aws.NopRetryer{},
	})
}

const invokeBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"Say hello"}],"anthropic_beta":["interleaved-thinking-2025-05-14"]}`

// aws-sdk-go-v2's bedrockruntime reads a streamed Messages answer through
// Answer chunk by chunk with its own event-stream reader: each chunk the
// Messages event the simulator sent, pings dropped. A whole answer is the
// simulator's.
func TestSDKStream(t *testing.T) {
	_, simURL := simtest.Start(t, nil)
	rl := &relay{sim: simURL}
	srv := httptest.NewServer(rl)
	defer srv.Close()
	c := client(srv.URL)
	ctx := context.Background()

	out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{
		ModelId:     aws.String("us.anthropic.claude-sonnet-5-5"),
		Body:        []byte(invokeBody),
		ContentType: aws.String("application/json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := out.GetStream()
	var got []string
	for ev := range st.Events() {
		chunk, ok := ev.(*types.ResponseStreamMemberChunk)
		if !ok {
			t.Fatalf("an event %T", ev)
		}
		got = append(got, string(chunk.Value.Bytes))
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if aws.ToString(out.ContentType) != "application/json" {
		t.Errorf("content type %q", aws.ToString(out.ContentType))
	}
	rl.mu.Lock()
	sent := rl.sent
	rl.mu.Unlock()
	var want []string
	r := sse.NewReader(bytes.NewReader(sent))
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if ev.Comment || ev.Name == "ping" {
			continue
		}
		want = append(want, string(ev.Data))
	}
	r.Release()
	if len(want) < 5 || !strings.Contains(want[0], "message_start") || !strings.Contains(want[len(want)-1], "message_stop") {
		t.Fatalf("the simulator sent %d events: %q", len(want), want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the SDK read\n%q\nwant\n%q", got, want)
	}
	if b := string(rl.body); !strings.HasSuffix(b, `"model":"claude-sonnet-5-5","stream":true}`) || strings.Contains(b, "anthropic_") {
		t.Errorf("the Messages request: %s", b)
	}

	whole, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{
		ModelId: aws.String("us.anthropic.claude-sonnet-5-5"),
		Body:    []byte(invokeBody),
	})
	if err != nil {
		t.Fatal(err)
	}
	rl.mu.Lock()
	sentWhole := rl.sent[len(sent):]
	rl.mu.Unlock()
	if !bytes.Contains(whole.Body, []byte(`"type":"message"`)) || !bytes.Equal(whole.Body, sentWhole) {
		t.Errorf("InvokeModel's answer %s, the simulator's %s", whole.Body, sentWhole)
	}
}

// An error in Messages' shape reaches the SDK as Bedrock's typed
// exception: the all-full 529 a ServiceUnavailableException, a rate limit
// a ThrottlingException; a stream's error event ends the SDK's stream
// with the exception of its type.
func TestSDKErrors(t *testing.T) {
	rl := &relay{}
	srv := httptest.NewServer(rl)
	defer srv.Close()
	c := client(srv.URL)
	ctx := context.Background()
	errorAnswer := func(status int, typ, msg string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Should-Retry", "false")
			w.WriteHeader(status)
			w.Write([]byte(`{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`))
		}
	}
	for _, tt := range []struct {
		name   string
		answer func(http.ResponseWriter)
		check  func(error) bool
	}{
		{"all full", errorAnswer(529, "overloaded_error", "spillway: every deployment is full"), func(err error) bool {
			var e *types.ServiceUnavailableException
			return errors.As(err, &e) && strings.Contains(e.ErrorMessage(), "every deployment is full")
		}},
		{"throttled", errorAnswer(429, "rate_limit_error", "slow down"), func(err error) bool {
			var e *types.ThrottlingException
			return errors.As(err, &e) && e.ErrorMessage() == "slow down"
		}},
		{"bad request", errorAnswer(400, "invalid_request_error", "max_tokens: Field required"), func(err error) bool {
			var e *types.ValidationException
			return errors.As(err, &e) && e.ErrorMessage() == "max_tokens: Field required"
		}},
		{"no model", errorAnswer(404, "not_found_error", "no model x"), func(err error) bool {
			var e *types.ResourceNotFoundException
			return errors.As(err, &e)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rl.answer = tt.answer
			_, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String("m"), Body: []byte(invokeBody)})
			if !tt.check(err) {
				t.Errorf("InvokeModel: %T %v", err, err)
			}
			_, err = c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String("m"), Body: []byte(invokeBody)})
			if !tt.check(err) {
				t.Errorf("InvokeModelWithResponseStream: %T %v", err, err)
			}
		})
	}

	for _, tt := range []struct {
		typ   string
		check func(error) bool
	}{
		{"overloaded_error", func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }},
		{"rate_limit_error", func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }},
		{"api_error", func(err error) bool { var e *types.ModelStreamErrorException; return errors.As(err, &e) }},
	} {
		t.Run("stream "+tt.typ, func(t *testing.T) {
			rl.answer = func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n: X-Spillway-Route: x\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n"))
				w.Write([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + tt.typ + "\",\"message\":\"spillway: cut\"}}\n\n"))
			}
			out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String("m"), Body: []byte(invokeBody)})
			if err != nil {
				t.Fatal(err)
			}
			st := out.GetStream()
			var n int
			for ev := range st.Events() {
				if c, ok := ev.(*types.ResponseStreamMemberChunk); !ok || !bytes.Contains(c.Value.Bytes, []byte("message_start")) {
					t.Errorf("event %d: %#v", n, ev)
				}
				n++
			}
			err = st.Err()
			st.Close()
			if n != 1 || !tt.check(err) || !strings.Contains(err.Error(), "spillway: cut") {
				t.Errorf("%d chunks, then %T %v", n, err, err)
			}
		})
	}
}

// anthropicBedrock is anthropic-sdk-go's Bedrock client of url (the
// Anthropic SDKs' Bedrock clients, as Claude Code's, read the event
// stream back as Messages SSE), with a bearer token, no retries.
func anthropicBedrock(url string) anthropic.Client {
	cfg := aws.Config{Region: "us-east-1", BearerAuthTokenProvider: abedrock.NewStaticBearerTokenProvider("sk-spillway-test"),
		AuthSchemePreference: []string{"httpBearerAuth"}}
	return anthropic.NewClient(abedrock.WithConfig(cfg), aoption.WithBaseURL(url), aoption.WithMaxRetries(0))
}

// anthropic-sdk-go's Bedrock client reads a stream through Answer as the
// Messages answer the simulator sent, and errors as its typed errors: the
// all-full 503, a stream's error event the stream's error.
func TestAnthropicSDKBedrock(t *testing.T) {
	_, simURL := simtest.Start(t, nil)
	rl := &relay{sim: simURL}
	srv := httptest.NewServer(rl)
	defer srv.Close()
	c := anthropicBedrock(srv.URL)
	ctx := context.Background()
	params := anthropic.MessageNewParams{Model: "us.anthropic.claude-sonnet-5-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))}}

	s := c.Messages.NewStreaming(ctx, params)
	msg := anthropic.Message{}
	var n int
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n < 4 || len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.StopReason == "" {
		t.Fatalf("%d events: %+v", n, msg)
	}
	whole, err := c.Messages.New(ctx, params)
	if err != nil || len(whole.Content) == 0 || whole.Content[0].Text == "" {
		t.Fatalf("%+v %v", whole, err)
	}

	rl.answer = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Should-Retry", "false")
		w.WriteHeader(529)
		w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"spillway: every deployment is full"}}`))
	}
	_, err = c.Messages.New(ctx, params)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Response.Header.Get("X-Amzn-Errortype") != "ServiceUnavailableException" || !strings.Contains(err.Error(), "every deployment is full") {
		t.Errorf("all full: %T %v", err, err)
	}

	rl.answer = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"))
		w.Write([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"spillway: cut\"}}\n\n"))
	}
	s = c.Messages.NewStreaming(ctx, params)
	n = 0
	for s.Next() {
		n++
	}
	err = s.Err()
	s.Close()
	if n != 1 || err == nil || !strings.Contains(err.Error(), "serviceUnavailableException") || !strings.Contains(err.Error(), "spillway: cut") {
		t.Errorf("%d events, then %v", n, err)
	}
}
