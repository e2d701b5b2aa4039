// Package simsdk_test drives the simulator with the official Go SDKs. It
// lives apart from package sim's tests so that fuzzing sim does not have to
// instrument the SDKs.
package simsdk_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spillway/spillway/sim"
)

// The official Go SDKs stream from the simulator like from the real APIs.

func TestOpenAIGoStreams(t *testing.T) {
	_, base := newSim(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test-sdk"), option.WithMaxRetries(0))
	prompt := "stream me something"

	t.Run("chat completions", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "gpt-6.1-sol",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := sim.Answer("gpt-6.1-sol", prompt, 16)
		if got := acc.Choices[0].Message.Content; got != want {
			t.Fatalf("content %q, want %q", got, want)
		}
		if chunks < 16 || acc.Usage.CompletionTokens != int64(len(sim.Tokens(want))) {
			t.Fatalf("chunks %d usage %+v", chunks, acc.Usage)
		}
	})

	t.Run("responses", func(t *testing.T) {
		stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model: "gpt-6-astra",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		})
		text, completed := "", false
		var outTokens int64
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.output_text.delta":
				text += ev.Delta
			case "response.completed":
				completed = true
				outTokens = ev.Response.Usage.OutputTokens
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := sim.Answer("gpt-6-astra", prompt, 16)
		if text != want || !completed || outTokens != int64(len(sim.Tokens(want))) {
			t.Fatalf("text %q completed %v tokens %d", text, completed, outTokens)
		}
	})

	t.Run("capacity error reaches the SDK", func(t *testing.T) {
		srv, base := newSim(t, nil, nil)
		srv.AddFault(sim.Fault{Model: "gpt-6-luna", Kind: "capacity", Count: 1})
		c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-6-luna", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "server_is_overloaded" {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestAnthropicGoStreams(t *testing.T) {
	_, base := newSim(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
	prompt := "hello claude"
	stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model:     "claude-sonnet-5-5",
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	})
	msg := anthropic.Message{}
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := sim.Answer("claude-sonnet-5-5", prompt, 16)
	if len(msg.Content) != 1 || msg.Content[0].Text != want || msg.StopReason != "end_turn" {
		t.Fatalf("message %+v", msg)
	}
	if msg.Usage.OutputTokens != int64(len(sim.Tokens(want))) || msg.Usage.InputTokens == 0 {
		t.Fatalf("usage %+v", msg.Usage)
	}

	t.Run("overloaded mid-stream reaches the SDK", func(t *testing.T) {
		srv, base := newSim(t, nil, nil)
		srv.AddFault(sim.Fault{Model: "claude-sonnet-5-5", Kind: "midstream"})
		c := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
		s := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-5-5", MaxTokens: 8,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}})
		for s.Next() {
		}
		if err := s.Err(); err == nil {
			t.Fatal("a stream that broke must not end without error")
		}
	})
}

func newSim(t *testing.T, scn *sim.Scenario, clock sim.Clock) (*sim.Server, string) {
	t.Helper()
	srv, err := sim.New(sim.Options{Scenario: scn, Clock: clock, Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return srv, hs.URL
}
