package wire

import (
	"bytes"
	"encoding/json"
	"strings"
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

// AnswerText takes the text out of a whole answer of any format: Chat
// Completions, Messages, Responses or Gemini. A body it cannot read comes
// back as it is.
func AnswerText(b []byte) string {
	var a struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		OutputText *string `json:"output_text"`
		Output     []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if json.Unmarshal(b, &a) != nil {
		return string(b)
	}
	var parts []string
	switch {
	case len(a.Choices) > 0:
		return a.Choices[0].Message.Content
	case a.OutputText != nil:
		return *a.OutputText
	case len(a.Output) > 0:
		for _, o := range a.Output {
			for _, c := range o.Content {
				parts = append(parts, c.Text)
			}
		}
	case len(a.Candidates) > 0:
		for _, p := range a.Candidates[0].Content.Parts {
			parts = append(parts, p.Text)
		}
	default:
		for _, c := range a.Content {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "")
}

// ContentText is the text of a message's content as the providers and the
// agents' files write it: a string (OpenAI, Anthropic's short form), or a
// list of blocks or parts with text (Anthropic, Gemini); other blocks add
// nothing.
func ContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
