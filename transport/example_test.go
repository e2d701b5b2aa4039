package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/sim"
	"github.com/spillway/spillway/transport"
)

// The OpenAI SDK with spillway as its HTTP transport. The simulator stands
// in for the provider, with its heavy model full: the answer comes from the
// next model of the chain, and the SDK never sees the capacity error.
func ExampleNew() {
	srv, _ := sim.New(sim.Options{TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})

	client := openai.NewClient(
		option.WithBaseURL(hs.URL+"/v1/"),
		option.WithAPIKey("sk-example"),
		option.WithHTTPClient(&http.Client{Transport: transport.New(config.Default())}),
		option.WithMaxRetries(0), // spillway does the retrying
	)
	var resp *http.Response
	c, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-6-astra",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Choices[0].Message.Content)
	fmt.Println(resp.Header.Get("X-Spillway-Route"))
	// Output:
	// [gpt-6.1-sol] hello spill over the weir and keep flowing spill over the weir and keep flowing
	// gpt-6-astra:capacity > gpt-6.1-sol:ok
}

// The Anthropic SDK, streaming: the opening events of the full model's
// attempt are held back, so the stream the SDK reads is the fallback's.
func Example_anthropic() {
	srv, _ := sim.New(sim.Options{TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	srv.AddFault(sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})

	client := anthropic.NewClient(
		aoption.WithBaseURL(hs.URL),
		aoption.WithAPIKey("sk-ant-example"),
		aoption.WithHTTPClient(&http.Client{Transport: transport.New(config.Default())}),
		aoption.WithMaxRetries(0),
	)
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-opus-5-5",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))},
	})
	defer stream.Close()
	msg := anthropic.Message{}
	for stream.Next() {
		msg.Accumulate(stream.Current())
	}
	if err := stream.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(msg.Model)
	fmt.Println(msg.Content[0].Text)
	// Output:
	// claude-sonnet-5-5
	// [claude-sonnet-5-5] hello spill over the weir and keep flowing spill over the weir and keep flowing
}

// Call for scripts: one JSON request, the answer's bytes, or an error that
// says what happened along the whole chain.
func ExampleTransport_Call() {
	srv, _ := sim.New(sim.Options{TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
		srv.AddFault(sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}

	// a budget too small for any wait: one walk down the chain, then give up
	t := transport.New(config.Default(), transport.WithBudget(time.Millisecond))
	header := http.Header{"Authorization": {"Bearer sk-example"}}
	body := map[string]any{
		"model":    "gpt-6-astra",
		"messages": []map[string]string{{"role": "user", "content": "hello"}},
	}
	_, err := t.Call(context.Background(), hs.URL+"/v1/chat/completions", header, body)
	fmt.Println(err)
	var f *classify.Failure
	if errors.As(err, &f) {
		fmt.Println(f.Verdict.Class)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		fmt.Println(te.Status)
	}
	// Output:
	// spillway: capacity: every model of the chain is at capacity; tried gpt-6-astra (capacity), gpt-6.1-sol (capacity), gpt-6-luna (capacity) in 3 attempts; waited 0s; last upstream message: Our servers are currently overloaded. Please try again later. (route: gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity)
	// capacity
	// 503
}

// The library's example in docs/library.md, exactly as it stands there
// (TestReadmeExampleIsThisExample keeps the two the same). It talks to the
// real API, so it is compiled, not run.
func Example_readme() {
	ctx := context.Background()

	// a chain of your own, declared in code (or in spillway.yaml)
	cfg := config.Default()
	if err := cfg.AddChain("mine",
		config.ChainModel{Name: "gpt-6-astra", Provider: "openai", Tier: config.Heavy},
		config.ChainModel{Name: "gpt-6.1-sol", Provider: "openai", Tier: config.Medium},
		config.ChainModel{Name: "gpt-6-luna", Provider: "openai", Tier: config.Light},
	); err != nil {
		panic(err)
	}
	// never below medium; every attempt in spillway's event log
	eventLog, err := events.NewWriter(events.DefaultPath(os.Getenv), 50<<20, 5)
	if err != nil {
		panic(err)
	}
	defer eventLog.Close(ctx)
	tr := transport.New(cfg, transport.WithMinTier(config.Medium), transport.WithEvents(eventLog))

	// the OpenAI SDK on spillway's transport: its own retries off
	client := openai.NewClient(
		option.WithHTTPClient(&http.Client{Transport: tr}),
		option.WithMaxRetries(0),
	)
	var resp *http.Response
	c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-6-astra",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Refactor the parser")},
	}, option.WithResponseInto(&resp))
	var f *classify.Failure
	switch {
	case errors.As(err, &f) && (f.Verdict.Class == classify.Quota || f.Verdict.Class == classify.Auth):
		panic("a person has to act: " + err.Error())
	case err != nil:
		panic(err) // spillway's account: the models tried, their classes, the time waited
	}
	fmt.Println(c.Choices[0].Message.Content)
	fmt.Println(resp.Header.Get("X-Spillway-Route")) // e.g. gpt-6-astra:capacity > gpt-6.1-sol:ok

	// or, for a script, one JSON request along the chain
	answer, err := tr.Call(ctx, "https://api.openai.com/v1/chat/completions",
		http.Header{"Authorization": {"Bearer " + os.Getenv("OPENAI_API_KEY")}},
		map[string]any{"model": "gpt-6-astra", "messages": []map[string]string{{"role": "user", "content": "hello"}}})
	if err == nil {
		fmt.Println(answer.Model, answer.Route, string(answer.Body))
	}
}
