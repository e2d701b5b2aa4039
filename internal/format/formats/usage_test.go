package formats

import (
	. "github.com/spillway/spillway/internal/wire"
	"testing"

	"github.com/spillway/spillway/internal/sse"
)

func TestIsDelta(t *testing.T) {
	cases := []struct {
		kind Kind
		name string
		data string
		want bool
	}{
		{Chat, "", `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, false},
		{Chat, "", `{"choices":[{"delta":{"content":"Hel"}}]}`, true},
		{Chat, "", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, true},
		{Chat, "", `{"choices":[{"delta":{},"finish_reason":"stop"}]}`, false},
		{Chat, "", `{"choices":[],"usage":{"completion_tokens":9}}`, false},
		{Responses, "response.output_text.delta", `{"delta":"Hel"}`, true},
		{Responses, "response.function_call_arguments.delta", `{"delta":"{"}`, true},
		{Responses, "response.output_text.done", `{"text":"Hello"}`, false},
		{Messages, "content_block_delta", `{"delta":{"type":"text_delta","text":"Hel"}}`, true},
		{Messages, "message_delta", `{"usage":{"output_tokens":3}}`, false},
		{StreamGenerateContent, "", `{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}`, true},
		{StreamGenerateContent, "", `{"usageMetadata":{"candidatesTokenCount":3}}`, false},
	}
	for _, c := range cases {
		if got := IsDelta(c.kind, sse.Event{Name: c.name, Data: []byte(c.data)}); got != c.want {
			t.Errorf("%s %s %s: %v", c.kind, c.name, c.data, got)
		}
	}
}
