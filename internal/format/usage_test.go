package format

import "testing"

func TestOutputTokens(t *testing.T) {
	cases := []struct {
		name string
		body string
		want int
	}{
		{"chat completions", `{"id":"c1","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`, 7},
		{"messages", `{"id":"m1","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5,"output_tokens":9}}`, 9},
		{"responses: usage inside the response", `{"id":"r1","output":[],"usage": {"input_tokens":3,"output_tokens":4}, "status":"completed"}`, 4},
		{"a quoted usage in the text is not the key", `{"choices":[{"message":{"content":"see \"usage\": {\"completion_tokens\": 99}"}}],"usage":{"completion_tokens":2}}`, 2},
		{"usage as a string value is skipped", `{"usage":{"completion_tokens":3},"note":"usage"}`, 3},
		{"no usage", `{"choices":[]}`, 0},
		{"broken usage", `{"usage":{"completion_tokens":`, 0},
		{"a later usage that is not an object", `{"usage":{"completion_tokens":4},"metadata":{"usage":"n/a"}}`, 4},
		{"not JSON", `<html>`, 0},
		{"a response.completed frame", `{"type":"response.completed","response":{"id":"r","output":[],"usage":{"input_tokens":3,"output_tokens":11}}}`, 11},
		{"a message_delta frame", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`, 15},
		{"a chat chunk with usage", `{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":8}}`, 8},
		{"nested details and braces in strings", `{"usage":{"prompt_tokens_details":{"cached_tokens":1},"note":"a } and a \" {","completion_tokens":6}}`, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := OutputTokens([]byte(c.body)); got != c.want {
				t.Fatalf("OutputTokens = %d, want %d", got, c.want)
			}
		})
	}
}

func BenchmarkOutputTokens(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-6-luna","choices":[{"index":0,"message":{"role":"assistant","content":"[gpt-6-luna] say hi and then some more words to make the answer a realistic length for a short reply"},"finish_reason":"stop"}],"usage":{"prompt_tokens":18,"completion_tokens":16,"total_tokens":34}}`)
	b.ReportAllocs()
	for b.Loop() {
		OutputTokens(body)
	}
}
