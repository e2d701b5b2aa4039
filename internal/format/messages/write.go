package messages

import (
	"net/http"
	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// DefaultMaxTokens is the max_tokens a Messages target gets when the
// client set no cap (Messages requires one).
const DefaultMaxTokens = 8192

// structuredBeta is the Anthropic beta a structured output needs.
const structuredBeta = "structured-outputs-2025-11-13"

// WriteRequest is t's request as Messages, for model.
func (Format) WriteRequest(t *format.Turn, model string) map[string]any {
	r := t.Req
	out := map[string]any{"model": model}
	if sys := r.SystemText(); sys != "" || r.JSONObject {
		if r.JSONObject {
			sys = strings.TrimSpace(sys + "\n\nAnswer with one JSON object.")
		}
		out["system"] = []any{map[string]any{"type": "text", "text": sys}}
	}
	out["messages"] = writeMessages(t)
	if len(r.Tools) > 0 {
		writeTools(t, out)
	}
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	// thinking only where the history allows it: a conversation with a
	// tool call has no thinking block of Anthropic's own before it (none
	// is ever forged), and Messages refuses that with thinking on
	thinking := false
	forced := r.Choice.Mode == "required" || r.Choice.Mode == "tool" // Messages refuses thinking with a forced tool
	if budget := max(r.Budget, format.EffortBudget(r.Effort)); budget >= 1024 && !r.HasHistory() && !forced {
		if r.MaxTokens <= 0 {
			maxTokens = budget + DefaultMaxTokens
		}
		if maxTokens > budget {
			out["thinking"] = map[string]any{"type": "enabled", "budget_tokens": budget}
			thinking = true
		}
	}
	out["max_tokens"] = maxTokens
	if !thinking { // thinking takes neither
		if r.Temperature != nil {
			out["temperature"] = min(*r.Temperature, 1)
		} else if r.TopP != nil {
			out["top_p"] = *r.TopP
		}
		if r.TopK != nil {
			out["top_k"] = *r.TopK
		}
	}
	if len(r.Stop) > 0 {
		out["stop_sequences"] = r.Stop
	}
	if r.Schema != nil {
		out["output_format"] = map[string]any{"type": "json_schema", "schema": r.Schema.Schema}
	}
	if r.Stream {
		out["stream"] = true
	}
	return out
}

// writeMessages is the conversation as Messages' messages: a user turn's
// tool results first, as Messages requires; a run of turns of one role is
// one message; the first is the user's.
func writeMessages(t *format.Turn) []map[string]any {
	var msgs []map[string]any
	for _, m := range t.Req.Messages {
		var blocks []any
		if m.Role == "user" {
			for _, p := range m.Parts {
				if p.Kind == format.Result {
					blocks = append(blocks, messagesResult(t, p))
				}
			}
		}
		for _, p := range m.Parts {
			switch p.Kind {
			case format.Result:
			case format.Call:
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": t.CallID(p.ID), "name": t.CallName(p), "input": format.ArgsObject(p.Args)})
			default:
				if b := messagesPart(p); b != nil {
					blocks = append(blocks, b)
				}
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1]["role"] == m.Role {
			msgs[n-1]["content"] = append(msgs[n-1]["content"].([]any), blocks...)
			continue
		}
		msgs = append(msgs, map[string]any{"role": m.Role, "content": blocks})
	}
	if len(msgs) > 0 && msgs[0]["role"] != "user" {
		msgs = append([]map[string]any{{"role": "user", "content": []any{map[string]any{"type": "text", "text": "(continued)"}}}}, msgs...)
	}
	return msgs
}

// writeTools sets the request's tools and its tool choice.
func writeTools(t *format.Turn, out map[string]any) {
	r := t.Req
	var tools []any
	for _, tl := range r.Tools {
		tools = append(tools, map[string]any{"name": format.TargetName(tl), "description": tl.Description, "input_schema": format.ToolSchema(tl)})
	}
	out["tools"] = tools
	var tc map[string]any
	switch r.Choice.Mode {
	case "none":
		tc = map[string]any{"type": "none"}
	case "required":
		tc = map[string]any{"type": "any"}
	case "tool":
		tc = map[string]any{"type": "tool", "name": t.NameOf(r.Choice.Name)}
	default:
		if r.NoParallel {
			tc = map[string]any{"type": "auto"}
		}
	}
	if tc != nil {
		if r.NoParallel && tc["type"] != "none" {
			tc["disable_parallel_tool_use"] = true
		}
		out["tool_choice"] = tc
	}
}

func messagesResult(t *format.Turn, p format.Part) map[string]any {
	var content []any
	for _, c := range p.Content {
		if b := messagesPart(c); b != nil {
			content = append(content, b)
		}
	}
	b := map[string]any{"type": "tool_result", "tool_use_id": t.CallID(p.ID)}
	if len(content) > 0 {
		b["content"] = content
	}
	if p.Error {
		b["is_error"] = true
	}
	return b
}

func messagesPart(p format.Part) map[string]any {
	switch p.Kind {
	case format.Text:
		if strings.TrimSpace(p.Text) == "" { // Messages refuses an empty text block
			return nil
		}
		return map[string]any{"type": "text", "text": p.Text}
	case format.Image, format.Document:
		typ := "image"
		if p.Kind == format.Document {
			typ = "document"
		}
		if p.URL != "" {
			return map[string]any{"type": typ, "source": map[string]any{"type": "url", "url": p.URL}}
		}
		return map[string]any{"type": typ, "source": map[string]any{"type": "base64", "media_type": p.MIME, "data": p.Data}}
	}
	return nil
}

// Header sets Anthropic's version and the betas the request needs.
func (Format) Header(t *format.Turn, h http.Header) {
	h.Set("Anthropic-Version", "2023-06-01")
	if t.Req.Schema != nil {
		h.Set("Anthropic-Beta", structuredBeta)
	}
}

// Query is none.
func (Format) Query(wire.Endpoint) string { return "" }
