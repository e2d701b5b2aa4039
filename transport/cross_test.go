package transport_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// A Go OpenAI client on spillway's transport, every OpenAI model of its
// chain full, is answered by an Anthropic model through the chain's
// overflow: the tool call comes back as a Chat tool call, with its
// arguments whole, and the Anthropic provider got its own key.
func TestOpenAIClientAnsweredByAnthropic(t *testing.T) {
	r := openAIFullToClaude(t, nil)
	if err := r.sim.AddScript(sim.Script{Turns: []sim.ScriptTurn{{Call: sim.ScriptCalls{{Tool: "get_weather", Arguments: map[string]any{"city": "Bern"}}}}, {Text: "ok"}}}); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		params := openai.ChatCompletionNewParams{Model: "gpt-6.1-sol", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather",
				Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})}}
		var cc *openai.ChatCompletion
		if stream {
			s := r.openai().Chat.Completions.NewStreaming(testCtx(t), params)
			acc := openai.ChatCompletionAccumulator{}
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			cc = &acc.ChatCompletion
		} else {
			var err error
			if cc, err = r.openai().Chat.Completions.New(testCtx(t), params); err != nil {
				t.Fatalf("%v (route %s)", err, r.route())
			}
		}
		if len(cc.Choices) != 1 || len(cc.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("stream %v: %+v (route %s)", stream, cc, r.route())
		}
		tc := cc.Choices[0].Message.ToolCalls[0]
		if tc.Function.Name != "get_weather" || strings.ReplaceAll(tc.Function.Arguments, " ", "") != `{"city":"Bern"}` || tc.ID == "" || cc.Choices[0].FinishReason != "tool_calls" || cc.Model != "claude-sonnet-5-5" {
			t.Fatalf("stream %v: the call %+v, finish %q, model %q", stream, tc, cc.Choices[0].FinishReason, cc.Model)
		}
	}
	st := r.sim.Snapshot().Models["claude-sonnet-5-5"]
	if st == nil || st.Served != 2 || st.Credentials[sim.Fingerprint("sk-ant-own-0123456789", "")] != 2 {
		t.Fatalf("claude-sonnet-5-5's stats %+v: want both answers, with the provider's own key", st)
	}
	if !strings.Contains(r.route(), "claude-sonnet-5-5:ok") {
		t.Fatalf("route %s", r.route())
	}
}

// The library's overflow step, every model of the chain's own with its
// breaker open and its lane under pressure, waits nothing: its pace is its
// own lane's (the driver the gateway shares).
func TestAnOverflowStepWaitsNothingInTheLibrary(t *testing.T) {
	r := openAIFullToClaude(t, func(c *config.Config) {
		c.Pacing = config.Default().Pacing
		c.Breaker.Failures, c.Breaker.Consecutive = 5, 1
		c.Breaker.Cooldown, c.Breaker.MaxCooldown = config.Duration(time.Hour), config.Duration(time.Hour)
	})
	params := openai.ChatCompletionNewParams{Model: "gpt-6.1-sol", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	for i := range 4 {
		if _, err := r.openai().Chat.Completions.New(testCtx(t), params); err != nil {
			t.Fatalf("request %d: %v (route %s)", i, err, r.route())
		}
	}
	recs := r.records()
	if got := r.route(); got != "gpt-6.1-sol:capacity > gpt-6-luna:capacity > claude-sonnet-5-5:ok > claude-sonnet-5-5:ok > claude-sonnet-5-5:ok > claude-sonnet-5-5:ok" {
		t.Fatalf("route %s", got)
	}
	for _, rec := range recs {
		if rec.WaitMS != 0 {
			t.Fatalf("record %+v waited", rec)
		}
	}
	if slept := r.clk.Slept(); len(slept) != 0 {
		t.Fatalf("the requests waited %v", slept)
	}
}

// A Go OpenAI client on spillway's transport, answered by an Anthropic
// model, gets an id that says so (resp_spw_MODEL_…); continuing it by
// previous_response_id is answered at once with OpenAI's own 400 naming
// the model, and nothing goes upstream: OpenAI never had that answer.
func TestTranslatedResponsesAreNotStored(t *testing.T) {
	r := openAIFullToClaude(t, nil)
	first, err := r.openai().Responses.New(testCtx(t), responses.ResponseNewParams{Model: "gpt-6.1-sol", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil || !regexp.MustCompile(`^resp_spw_claude-sonnet-5-5_[0-9a-f]{24}$`).MatchString(first.ID) {
		t.Fatalf("a translated answer: %v %+v", err, first)
	}
	attempts := len(r.records())
	_, err = r.openai().Responses.New(testCtx(t), responses.ResponseNewParams{Model: "gpt-6.1-sol", PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and then?")}})
	var apiErr *openai.Error
	want := `{"message":"spillway: previous response ` + first.ID + ` was answered by claude-sonnet-5-5, another vendor's model, through spillway, and stored nowhere; send the conversation whole instead (its earlier input and output items, as with store: false); nothing was sent upstream","param":"previous_response_id","type":"invalid_request_error","code":"previous_response_not_found"}`
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !sameJSON(apiErr.RawJSON(), want) {
		t.Fatalf("continuing a translated answer: %v\nwant 400 %s", err, want)
	}
	if n := len(r.records()); n != attempts {
		t.Fatalf("%d attempts went upstream", n-attempts)
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// openAIFullToClaude is a rig whose codex chain overflows into claude
// (Anthropic with a key of its own, both providers at the simulator, the
// URL the client calls OpenAI's), with gpt-6.1-sol and gpt-6-luna full;
// mut, when set, changes the configuration further.
func openAIFullToClaude(t *testing.T, mut func(*config.Config)) *rig {
	t.Helper()
	r := newRigAt(t, func(c *config.Config, url string) {
		c.ChainRules = map[string]config.ChainRules{"codex": {Overflow: "claude"}}
		anth := c.Providers["anthropic"]
		anth.BaseURL, anth.APIKey = url, config.Secret{Value: "sk-ant-own-0123456789"}
		c.Providers["anthropic"] = anth
		oa := c.Providers["openai"]
		oa.BaseURL = url + "/v1"
		c.Providers["openai"] = oa
		if mut != nil {
			mut(c)
		}
	})
	for _, m := range []string{"gpt-6.1-sol", "gpt-6-luna"} {
		r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}
	return r
}
