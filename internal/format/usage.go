package format

import (
	"bytes"
	"encoding/json"
)

// OutputTokens reads the output tokens of a whole JSON answer or of a
// stream frame (a Chat chunk, a message_delta, a response.completed whose
// usage sits inside "response"), whichever protocol, for the event log.
// Only the "usage" object is decoded: decoding the whole answer to find it
// was the largest cost of the gateway's own code in a profile at 1000
// req/s (BENCHMARKS.md). The object's key is searched from the end (usage
// follows the content in every provider's answer); a "usage" inside a
// string cannot match, as its quotes would be escaped.
func OutputTokens(body []byte) int {
	var u struct {
		OutputTokens     int `json:"output_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		Candidates       int `json:"candidatesTokenCount"`
	}
	for _, key := range [][]byte{[]byte(`"usage"`), []byte(`"usageMetadata"`)} {
		for end := len(body); ; {
			i := bytes.LastIndex(body[:end], key)
			if i < 0 {
				break
			}
			rest := bytes.TrimLeft(body[i+len(key):], " \t\r\n")
			if len(rest) > 0 && rest[0] == ':' {
				obj := bytes.TrimLeft(rest[1:], " \t\r\n")
				if n := objectLen(obj); n > 0 && json.Unmarshal(obj[:n], &u) == nil {
					return max(u.OutputTokens, u.CompletionTokens, u.Candidates)
				}
			}
			end = i
		}
	}
	return 0
}

// objectLen is the length of the JSON object b starts with, or 0 when b
// does not start with a complete one (strings and escapes respected).
func objectLen(b []byte) int {
	if len(b) == 0 || b[0] != '{' {
		return 0
	}
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}
