package simsdk_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spillway/spillway/sim"
)

// The SDKs' own accumulators put the simulator's scripted tool-call streams
// together: two parallel calls with ids and whole arguments, the stop
// reason and usage; the results sent back get the scripted text.

var weather = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}

const twoCalls = `{"turns":[{"call":[{"tool":"get_weather","arguments":{"city":"Paris"}},{"tool":"get_weather","arguments":{"city":"Oslo, Norway \"north\""}}]},{"text":"Both: {result}"}]}`

func wantArgs(t *testing.T, got string, city string) {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(got), &a); err != nil || !reflect.DeepEqual(a, map[string]any{"city": city}) {
		t.Fatalf("arguments %q, want city %q (%v)", got, city, err)
	}
}

func TestOpenAIGoToolCalls(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	if err := addScript(srv, twoCalls); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test-sdk"), option.WithMaxRetries(0))

	t.Run("chat completions", func(t *testing.T) {
		params := openai.ChatCompletionNewParams{
			Model:         "gpt-6.1-sol",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Paris and Oslo?")},
			Tools:         []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather", Parameters: weather})},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		acc := openai.ChatCompletionAccumulator{}
		finished := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			if _, ok := acc.JustFinishedToolCall(); ok {
				finished++
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		msg := acc.Choices[0].Message
		if len(msg.ToolCalls) != 2 || finished != 2 || acc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("tool calls %+v (finished %d), finish %q", msg.ToolCalls, finished, acc.Choices[0].FinishReason)
		}
		wantArgs(t, msg.ToolCalls[0].Function.Arguments, "Paris")
		wantArgs(t, msg.ToolCalls[1].Function.Arguments, `Oslo, Norway "north"`)
		if msg.ToolCalls[0].ID == "" || msg.ToolCalls[0].ID == msg.ToolCalls[1].ID || msg.ToolCalls[0].Function.Name != "get_weather" {
			t.Fatalf("ids and names %+v", msg.ToolCalls)
		}
		if acc.Usage.CompletionTokens == 0 || acc.Usage.PromptTokens == 0 {
			t.Fatalf("usage %+v", acc.Usage)
		}
		params.Messages = append(params.Messages, msg.ToParam(),
			openai.ToolMessage("sunny", msg.ToolCalls[0].ID), openai.ToolMessage("snow", msg.ToolCalls[1].ID))
		done, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := done.Choices[0].Message.Content; got != "Both: sunny\nsnow" || done.Choices[0].FinishReason != "stop" {
			t.Fatalf("answer %q %q", got, done.Choices[0].FinishReason)
		}
	})

	t.Run("responses", func(t *testing.T) {
		params := responses.ResponseNewParams{
			Model: "gpt-6-astra",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Paris and Oslo?")},
			Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: weather}}},
		}
		stream := client.Responses.NewStreaming(ctx, params)
		var final responses.Response
		args := map[string]string{}
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.function_call_arguments.delta":
				args[ev.ItemID] += ev.Delta
			case "response.function_call_arguments.done":
				if args[ev.ItemID] != ev.Arguments {
					t.Fatalf("deltas %q, done %q", args[ev.ItemID], ev.Arguments)
				}
			case "response.completed":
				final = ev.Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		var calls []responses.ResponseFunctionToolCall
		for _, it := range final.Output {
			if it.Type == "function_call" {
				calls = append(calls, it.AsFunctionCall())
			}
		}
		if len(calls) != 2 || final.Status != "completed" || final.Usage.OutputTokens == 0 || len(args) != 2 {
			t.Fatalf("calls %+v status %q usage %+v", calls, final.Status, final.Usage)
		}
		wantArgs(t, calls[0].Arguments, "Paris")
		wantArgs(t, calls[1].Arguments, `Oslo, Norway "north"`)
		items := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("weather in Paris and Oslo?", responses.EasyInputMessageRoleUser)}
		for i, c := range calls {
			items = append(items, responses.ResponseInputItemParamOfFunctionCall(c.Arguments, c.CallID, c.Name))
			out := responses.ResponseInputItemParamOfFunctionCallOutput([]string{"sunny", "snow"}[i])
			out.OfFunctionCallOutput.CallID = openai.String(c.CallID)
			items = append(items, out)
		}
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
		done, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if done.OutputText() != "Both: sunny\nsnow" {
			t.Fatalf("answer %q", done.OutputText())
		}
	})
}

func TestAnthropicGoToolCalls(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	if err := addScript(srv, twoCalls); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-5-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather in Paris and Oslo?"))},
		Tools:     []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: weather["properties"]}}}},
	}
	stream := client.Messages.NewStreaming(ctx, params)
	msg := anthropic.Message{}
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.StopReason != "tool_use" || msg.Usage.OutputTokens == 0 || msg.Usage.InputTokens == 0 {
		t.Fatalf("message %+v", msg)
	}
	for i, city := range []string{"Paris", `Oslo, Norway "north"`} {
		b := msg.Content[i]
		if b.Type != "tool_use" || b.Name != "get_weather" || b.ID == "" {
			t.Fatalf("block %d: %+v", i, b)
		}
		wantArgs(t, string(b.Input), city)
	}
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(
		anthropic.NewToolResultBlock(msg.Content[0].ID, "sunny", false), anthropic.NewToolResultBlock(msg.Content[1].ID, "snow", false)))
	done, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Content) != 1 || done.Content[0].Text != "Both: sunny\nsnow" || done.StopReason != "end_turn" {
		t.Fatalf("answer %+v", done)
	}
}

func addScript(srv *sim.Server, js string) error {
	var sc sim.Script
	if err := json.Unmarshal([]byte(js), &sc); err != nil {
		return err
	}
	return srv.AddScript(sc)
}
