package wire

import (
	"encoding/json"
	"strings"
)

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
