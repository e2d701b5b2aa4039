package chat

import (
	"net/http"
	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// WriteRequest is t's request as Chat Completions, for model.
func (Format) WriteRequest(t *format.Turn, model string) map[string]any {
	r := t.Req
	out := map[string]any{"model": model}
	var msgs []any
	sys := r.SystemText()
	if r.JSONObject {
		sys = strings.TrimSpace(sys + "\n\nAnswer with one JSON object.")
	}
	if sys != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": sys})
	}
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			msgs = append(msgs, assistant(t, m))
			continue
		}
		msgs = userTurn(t, m, msgs)
	}
	out["messages"] = msgs
	if len(r.Tools) > 0 {
		var tools []any
		for _, tl := range r.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": format.TargetName(tl), "description": tl.Description, "parameters": format.ToolSchema(tl)}})
		}
		out["tools"] = tools
		switch r.Choice.Mode {
		case "none", "required":
			out["tool_choice"] = r.Choice.Mode
		case "tool":
			out["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": t.NameOf(r.Choice.Name)}}
		}
		if r.NoParallel {
			out["parallel_tool_calls"] = false
		}
	}
	writeSettings(t, out)
	if r.Stream {
		out["stream"] = true
		out["stream_options"] = map[string]any{"include_usage": true}
	}
	return out
}

// writeSettings sets the answer's cap, sampling, effort and format.
func writeSettings(t *format.Turn, out map[string]any) {
	r := t.Req
	if r.MaxTokens > 0 {
		out["max_completion_tokens"] = r.MaxTokens
	}
	if !t.Takes().Reasoning { // a reasoning model takes no sampling settings (OpenAI refuses them)
		if r.Temperature != nil {
			out["temperature"] = *r.Temperature
		}
		if r.TopP != nil {
			out["top_p"] = *r.TopP
		}
		if len(r.Stop) > 0 {
			out["stop"] = r.Stop[:min(len(r.Stop), 4)]
		}
	}
	if e := r.Effort; e != "" && t.Takes().Reasoning {
		out["reasoning_effort"] = format.OpenAIEffort(e)
	}
	switch {
	case r.Schema != nil:
		name := r.Schema.Name
		if name == "" {
			name = "output"
		}
		out["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": format.Safe(name, 64), "schema": r.Schema.Schema, "strict": r.Schema.Strict}}
	case r.JSONObject:
		out["response_format"] = map[string]any{"type": "json_object"}
	}
}

// assistant is an assistant turn as a Chat message: its text, and its calls.
func assistant(t *format.Turn, m format.Message) map[string]any {
	msg := map[string]any{"role": "assistant"}
	var text strings.Builder
	var calls []any
	for _, p := range m.Parts {
		switch p.Kind {
		case format.Text:
			text.WriteString(p.Text)
		case format.Call:
			calls = append(calls, map[string]any{"id": t.CallID(p.ID), "type": "function",
				"function": map[string]any{"name": t.CallName(p), "arguments": p.Args}})
		}
	}
	msg["content"] = text.String()
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		if text.Len() == 0 {
			msg["content"] = nil
		}
	}
	return msg
}

// userTurn appends a user turn to msgs: its tool results first, each a tool
// message, then the rest (and a result's images: a tool message takes text
// only).
func userTurn(t *format.Turn, m format.Message, msgs []any) []any {
	var rest []any
	for _, p := range m.Parts {
		if p.Kind != format.Result {
			if c := chatPart(p); c != nil {
				rest = append(rest, c)
			}
			continue
		}
		text := format.ResultText(p.Content)
		if p.Error {
			text = "Error: " + text
		}
		msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": t.CallID(p.ID), "content": text})
		for _, c := range p.Content {
			if c.Kind != format.Text {
				rest = append(rest, chatPart(c))
			}
		}
	}
	if len(rest) > 0 {
		msgs = append(msgs, map[string]any{"role": "user", "content": rest})
	}
	return msgs
}

func chatPart(p format.Part) map[string]any {
	switch p.Kind {
	case format.Text:
		if p.Text == "" {
			return nil
		}
		return map[string]any{"type": "text", "text": p.Text}
	case format.Image:
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": urlOf(p)}}
	case format.Document:
		if p.Data == "" {
			return map[string]any{"type": "text", "text": "(a document at " + p.URL + ")"}
		}
		name := p.Filename
		if name == "" {
			name = "document.pdf"
		}
		return map[string]any{"type": "file", "file": map[string]any{"file_data": urlOf(p), "filename": name}}
	}
	return nil
}

// urlOf is an image's URL: its own, or a data: URL of its data.
func urlOf(p format.Part) string {
	if p.URL != "" {
		return p.URL
	}
	return "data:" + p.MIME + ";base64," + p.Data
}

// Header adds nothing.
func (Format) Header(*format.Turn, http.Header) {}

// Query is none.
func (Format) Query(wire.Endpoint) string { return "" }

// Native changes nothing.
func (Format) Native([]byte) ([]byte, bool) { return nil, false }
