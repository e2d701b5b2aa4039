package formats

import (
	. "github.com/spillway/spillway/internal/wire"
	"testing"

	"github.com/spillway/spillway/internal/sse"
)

func TestFrameOf(t *testing.T) {
	cases := []struct {
		kind       Kind
		name, data string
		want       Frame
	}{
		{"responses", "response.created", `{}`, Hold},
		{"responses", "response.output_item.added", `{}`, Hold},
		{"responses", "response.output_text.delta", `{}`, Output},
		{"responses", "response.failed", `{}`, Error},
		{"responses", "response.completed", `{}`, Terminal},
		{"messages", "message_start", `{}`, Hold},
		{"messages", "content_block_start", `{}`, Hold},
		{"messages", "content_block_delta", `{}`, Output},
		{"messages", "error", `{}`, Error},
		{"messages", "message_stop", `{}`, Terminal},
		{"chat", "", `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, Hold},
		{"chat", "", `{"choices":[{"delta":{"content":"hi"}}]}`, Output},
		{"chat", "", `{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`, Output},
		{"chat", "", `{"error":{"message":"overloaded"}}`, Error},
		{"chat", "", `{"choices":[],"usage":{"completion_tokens":3}}`, Output},
		{"chat", "", `[DONE]`, Terminal},
		{"streamGenerateContent", "", `{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"}}]}`, Output},
		{"streamGenerateContent", "", `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"}}]}`, Hold},
		{"streamGenerateContent", "", `{"candidates":[{"content":{"parts":[{"text":"."}]},"finishReason":"STOP"}],"usageMetadata":{}}`, Terminal},
		{"streamGenerateContent", "", `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, Error},
		// Code Assist (Gemini CLI signed in with Google): the chunk under "response"
		{"streamGenerateContent", "", `{"response":{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"}}]},"traceId":"t1"}`, Output},
		{"streamGenerateContent", "", `{"response":{"candidates":[{"content":{"parts":[{"text":""}]}}]},"traceId":"t1"}`, Hold},
		{"streamGenerateContent", "", `{"response":{"candidates":[{"content":{"parts":[{"text":"."}]},"finishReason":"STOP"}],"usageMetadata":{}},"traceId":"t1"}`, Terminal},
		{"streamGenerateContent", "", `{"responseId":"r1","candidates":[{"content":{"parts":[{"text":"hi"}]}}]}`, Output},
		{"chat", "", `not json`, Output},
	}
	for _, c := range cases {
		if got := FrameOf(c.kind, sse.Event{Name: c.name, Data: []byte(c.data)}); got != c.want {
			t.Errorf("FrameOf(%s, %s %s) = %v, want %v", c.kind, c.name, c.data, got, c.want)
		}
	}
}

func FuzzFrameOf(f *testing.F) {
	f.Add("chat", "", `{"choices":[{"delta":{"content":"x"}}]}`)
	f.Add("responses", "response.failed", `{}`)
	f.Add("messages", "error", `{"type":"error"}`)
	f.Fuzz(func(t *testing.T, kind, name, data string) {
		k := FrameOf(Kind(kind), sse.Event{Name: name, Data: []byte(data)})
		if k < Hold || k > Error {
			t.Fatalf("frame kind %d", k)
		}
	})
}

func TestFrameOnceStarted(t *testing.T) {
	cases := []struct {
		kind       Kind
		name, data string
		want       Frame
	}{
		{"chat", "", `{"choices":[{"delta":{"content":"hi"}}]}`, Output},
		{"chat", "", `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, Output}, // no holding once started
		{"chat", "", `{"error":{"message":"overloaded"}}`, Error},
		{"chat", "", `{"choices":[{"delta":{"content":"error"}}]}`, Output}, // the word in the text is not an error
		{"chat", "", ` [DONE] `, Terminal},
		{"responses", "response.failed", `{}`, Error},
		{"responses", "response.completed", `{}`, Terminal},
		{"messages", "error", `{}`, Error},
		{"messages", "content_block_delta", `{}`, Output},
	}
	for _, c := range cases {
		if got := onceStarted(c.kind, Look(c.kind, sse.Event{Name: c.name, Data: []byte(c.data)})); got != c.want {
			t.Errorf("Look(%s, %q, %s).OnceStarted = %v, want %v", c.kind, c.name, c.data, got, c.want)
		}
	}
}

// An event may be passed on when its name has no control characters and
// its data is JSON (or [DONE], or nothing), in every protocol: the
// official SDKs fail on anything else.
func TestLookValid(t *testing.T) {
	for _, c := range []struct {
		ev   sse.Event
		want bool
	}{
		{sse.Event{Name: "response.output_text.delta", Data: []byte(`{"delta":"hi"}`)}, true},
		{sse.Event{Data: []byte("[DONE]")}, true},
		{sse.Event{Comment: true, Raw: []byte(": keep-alive\n")}, true},
		{sse.Event{Name: "ping"}, true},
		{sse.Event{Name: "response.output_text.delta", Data: []byte(`{"type":"response.output_text.delta","delta":"unterminated`)}, false},
		{sse.Event{Name: "\x00garbage", Data: []byte(`{}`)}, false},
		{sse.Event{Data: []byte("}{")}, false},
	} {
		for _, k := range []Kind{Chat, Responses, Messages, StreamGenerateContent} {
			if got := Look(k, c.ev).Valid; got != c.want {
				t.Errorf("%s %q %q: valid %v", k, c.ev.Name, c.ev.Data, got)
			}
		}
	}
}
