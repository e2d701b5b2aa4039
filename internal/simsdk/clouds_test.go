package simsdk_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/spillway/spillway/sim"
)

// The Anthropic Go SDK in its Bedrock mode (its own envelope, SigV4
// signer and event-stream reader) talks to the simulator's Bedrock as to
// Bedrock's: the signatures verify, the answers and streams read, the
// errors are Bedrock's. (Its Bedrock mode rewrites only /v1/messages, so
// the base URL can have no region prefix: the root's pools.)
func TestAnthropicSDKOnBedrock(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "AKIDSDKTEST", SecretAccessKey: "sdk-secret", SessionToken: "sdk-session"}
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0, Clouds: sim.CloudAuth{
		AWS: &sim.AWSCredentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := func(secret string) *anthropic.Client {
		c := creds
		c.SecretAccessKey = secret
		cfg := aws.Config{Region: "us-west-2", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return c, nil })}
		cl := anthropic.NewClient(bedrock.WithConfig(cfg), aoption.WithBaseURL(hs.URL), aoption.WithMaxRetries(0))
		return &cl
	}
	prompt := "stream me something"
	params := anthropic.MessageNewParams{
		Model:     "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-sonnet-5-5-v1:0",
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
	want := sim.Answer("bedrock/claude-sonnet-5-5", prompt, 16)

	msg, err := client(creds.SecretAccessKey).Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != want {
		t.Fatalf("whole: %+v, want %q", msg.Content, want)
	}

	stream := client(creds.SecretAccessKey).Messages.NewStreaming(ctx, params)
	acc := anthropic.Message{}
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != want || acc.StopReason != "end_turn" {
		t.Fatalf("streamed: %+v", acc)
	}
	if st := srv.Snapshot().Models["bedrock/claude-sonnet-5-5"]; st == nil || st.Served != 2 || st.Streamed != 1 {
		t.Fatalf("stats %+v", st)
	}

	// a wrong secret: Bedrock's 403
	_, err = client("not-the-secret").Messages.New(ctx, params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 {
		t.Fatalf("wrong secret: %v", err)
	}
	// a full pool: Bedrock's 503, whole and streamed
	if err := srv.AddFault(sim.Fault{Model: "bedrock/claude-sonnet-5-5", Kind: "capacity", Count: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err = client(creds.SecretAccessKey).Messages.New(ctx, params); !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("full pool: %v", err)
	}
	stream = client(creds.SecretAccessKey).Messages.NewStreaming(ctx, params)
	for stream.Next() {
	}
	if err := stream.Err(); !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("full pool, streamed: %v", err)
	}
	// an exception frame mid-stream ends the SDK's stream with an error
	if err := srv.AddFault(sim.Fault{Model: "bedrock/claude-sonnet-5-5", Kind: "midstream", Error: "rate_limit"}); err != nil {
		t.Fatal(err)
	}
	stream = client(creds.SecretAccessKey).Messages.NewStreaming(ctx, params)
	events := 0
	for stream.Next() {
		events++
	}
	if err := stream.Err(); err == nil || events == 0 {
		t.Fatalf("midstream: %d events, err %v", events, err)
	}
}
