package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"

	"github.com/spillway/spillway/sim"
)

// got is what an SDK's accumulator made of an answer.
type got struct {
	text   string
	calls  []string // name(arguments), in order
	ids    []string
	stop   string
	output int64
}

// twoCalls is a script of two parallel calls, then text quoting the results.
var twoCalls = sim.Script{Turns: []sim.ScriptTurn{
	{Call: sim.ScriptCalls{
		{Tool: "get_weather", Arguments: map[string]any{"city": "Zürich", "unit": "celsius"}},
		{Tool: "Get_Time", Arguments: map[string]any{"zone": "Europe/Zurich"}},
	}},
	{Text: "Done: {result}"},
}}

var weatherSchema = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"city"}}
var timeSchema = map[string]any{"type": "object", "properties": map[string]any{"zone": map[string]any{"type": "string"}}}

// The official SDKs read every translated stream with their own
// accumulators: both parallel calls, in order, with ids and their whole
// arguments, tool names as declared (case kept), the stop reason and
// usage; a whole answer too.
func TestSDKsAccumulateTranslatedStreams(t *testing.T) {
	chat := func(ctx context.Context, url string, stream bool) (got, error) {
		oa := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
		p := openai.ChatCompletionNewParams{Model: "gpt-6.1-sol", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather and time?")},
			Tools: []openai.ChatCompletionToolUnionParam{
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather", Parameters: weatherSchema}),
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "Get_Time", Parameters: timeSchema}),
			}}
		var cc *openai.ChatCompletion
		if stream {
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := oa.Chat.Completions.NewStreaming(ctx, p)
			acc := openai.ChatCompletionAccumulator{}
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				return got{}, err
			}
			cc = &acc.ChatCompletion
		} else {
			var err error
			if cc, err = oa.Chat.Completions.New(ctx, p); err != nil {
				return got{}, err
			}
		}
		var g got
		if len(cc.Choices) > 0 {
			m := cc.Choices[0].Message
			g.text, g.stop = m.Content, string(cc.Choices[0].FinishReason)
			for _, tc := range m.ToolCalls {
				g.calls = append(g.calls, tc.Function.Name+"("+tc.Function.Arguments+")")
				g.ids = append(g.ids, tc.ID)
			}
		}
		g.output = cc.Usage.CompletionTokens
		return g, nil
	}
	messages := func(ctx context.Context, url string, stream bool) (got, error) {
		an := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("sk-ant-api03-test"), aoption.WithMaxRetries(0))
		p := anthropic.MessageNewParams{Model: "claude-sonnet-5-5", MaxTokens: 256,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather and time?"))},
			Tools: []anthropic.ToolUnionParam{
				{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"city"}}}},
				{OfTool: &anthropic.ToolParam{Name: "Get_Time", InputSchema: anthropic.ToolInputSchemaParam{Properties: timeSchema["properties"]}}},
			}}
		msg := anthropic.Message{}
		if stream {
			s := an.Messages.NewStreaming(ctx, p)
			for s.Next() {
				if err := msg.Accumulate(s.Current()); err != nil {
					return got{}, err
				}
			}
			if err := s.Err(); err != nil {
				return got{}, err
			}
		} else {
			m, err := an.Messages.New(ctx, p)
			if err != nil {
				return got{}, err
			}
			msg = *m
		}
		g := got{stop: string(msg.StopReason), output: msg.Usage.OutputTokens}
		for _, b := range msg.Content {
			switch b.Type {
			case "text":
				g.text += b.Text
			case "tool_use":
				g.calls = append(g.calls, b.Name+"("+string(b.Input)+")")
				g.ids = append(g.ids, b.ID)
			}
		}
		return g, nil
	}
	responses := func(ctx context.Context, url string, stream bool) (got, error) {
		oa := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
		p := oresponses.ResponseNewParams{Model: "gpt-6.1-sol", Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("weather and time?")},
			Tools: []oresponses.ToolUnionParam{
				{OfFunction: &oresponses.FunctionToolParam{Name: "get_weather", Parameters: weatherSchema}},
				{OfFunction: &oresponses.FunctionToolParam{Name: "Get_Time", Parameters: timeSchema}},
			}}
		var r *oresponses.Response
		if stream {
			s := oa.Responses.NewStreaming(ctx, p)
			args := map[string]string{} // the deltas, by item: they must add up to the done item's
			for s.Next() {
				ev := s.Current()
				switch ev.Type {
				case "response.function_call_arguments.delta":
					args[ev.ItemID] += ev.Delta
				case "response.output_item.done":
					if it := ev.Item; it.Type == "function_call" && args[it.ID] != it.Arguments.OfString {
						return got{}, &mismatch{args[it.ID], it.Arguments.OfString}
					}
				case "response.completed":
					c := ev.Response
					r = &c
				}
			}
			if err := s.Err(); err != nil {
				return got{}, err
			}
		} else {
			var err error
			if r, err = oa.Responses.New(ctx, p); err != nil {
				return got{}, err
			}
		}
		if r == nil {
			return got{}, &mismatch{"response.completed", "none"}
		}
		g := got{text: r.OutputText(), stop: string(r.Status), output: r.Usage.OutputTokens}
		for _, it := range r.Output {
			if it.Type == "function_call" {
				g.calls = append(g.calls, it.Name+"("+it.Arguments.OfString+")")
				g.ids = append(g.ids, it.CallID)
			}
		}
		return g, nil
	}
	cases := []struct {
		name   string
		call   func(context.Context, string, bool) (got, error)
		target string
		stop   string
	}{
		{"chat → claude", chat, "claude-sonnet-5-5", "tool_calls"},
		{"chat → gemini", chat, "gemini-3-flash", "tool_calls"},
		{"messages → gpt", messages, "gpt-6.1-sol", "tool_use"},
		{"messages → gemini", messages, "gemini-3-flash", "tool_use"},
		{"responses → claude", responses, "claude-sonnet-5-5", "completed"},
		{"responses → gemini", responses, "gemini-3-flash", "completed"},
	}
	for _, c := range cases {
		for _, stream := range []bool{true, false} {
			name := c.name + ", whole"
			if stream {
				name = c.name + ", streamed"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t, nil, spillTo(c.target))
				for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} {
					if m != c.target && !strings.HasPrefix(c.target, m[:4]) {
						r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
					}
				}
				if err := r.sim.AddScript(twoCalls); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				g, err := c.call(ctx, r.url, stream)
				if err != nil {
					t.Fatal(err)
				}
				want := []string{`get_weather({"city":"Zürich","unit":"celsius"})`, `Get_Time({"zone":"Europe/Zurich"})`}
				if len(g.calls) != 2 || !sameJSONCalls(g.calls, want) {
					t.Fatalf("calls %q, want %q", g.calls, want)
				}
				if g.ids[0] == "" || g.ids[0] == g.ids[1] {
					t.Fatalf("call ids %q: each call needs its own", g.ids)
				}
				if g.stop != c.stop || g.output <= 0 {
					t.Fatalf("stop %q output tokens %d, want %q and the usage", g.stop, g.output, c.stop)
				}
				if st := r.servedStats(t, c.target, 1); st == nil || st.Served != 1 {
					t.Fatalf("%s's stats %+v", c.target, st)
				}
			})
		}
	}
}

type mismatch struct{ deltas, done string }

func (m *mismatch) Error() string { return "the deltas " + m.deltas + " do not add up to " + m.done }

// sameJSONCalls compares name(arguments) lists with the arguments as JSON.
func sameJSONCalls(got, want []string) bool {
	for i := range want {
		gn, ga, _ := strings.Cut(got[i], "(")
		wn, wa, _ := strings.Cut(want[i], "(")
		var g, w any
		if gn != wn || json.Unmarshal([]byte(strings.TrimSuffix(ga, ")")), &g) != nil || json.Unmarshal([]byte(strings.TrimSuffix(wa, ")")), &w) != nil {
			return false
		}
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			return false
		}
	}
	return true
}
