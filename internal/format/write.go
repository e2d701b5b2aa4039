package format

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// DefaultMaxTokens is the max_tokens a Messages target gets when the
// client set no cap (Messages requires one).
const DefaultMaxTokens = 8192

// skipSignature is the thought signature Gemini documents for a function
// call it did not make itself (a conversation begun with another model):
// it says there is no signature, rather than forging one.
const skipSignature = "skip_thought_signature_validator"

// structuredBeta is the Anthropic beta a structured output needs.
const structuredBeta = "structured-outputs-2025-11-13"

// Header sets what the target requires of the translated request's
// headers (the credentials are the caller's to set): its content type and
// Anthropic's version and the betas the request needs.
func (t *Turn) Header(h http.Header) {
	h.Set("Content-Type", "application/json")
	if t.Stream {
		h.Set("Accept", "text/event-stream")
	}
	if t.Target.Kind == "messages" {
		h.Set("Anthropic-Version", "2023-06-01")
		if t.req.Schema != nil {
			h.Set("Anthropic-Beta", structuredBeta)
		}
	}
}

// Query is the query the target's URL needs (Gemini streams SSE only with
// alt=sse).
func (t *Turn) Query() string {
	if t.Target.Kind == "streamGenerateContent" {
		return "alt=sse"
	}
	return ""
}

// ToolSchema is the arguments' schema a target gets for tl, by one rule
// (docs/gateway.md, "Spilling across vendors"): a freeform tool's one string; a schema as the
// client gave it, but with an object at its top (Chat and Messages require
// one: a schema of another type, or none, becomes an object of no
// properties) and without the top-level "$schema" and "$id" (which
// Messages and Gemini refuse).
func ToolSchema(tl Tool) json.RawMessage {
	if tl.Custom {
		return CustomSchema
	}
	var m map[string]any
	if json.Unmarshal(tl.Schema, &m) != nil || m == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if t, ok := m["type"]; ok && t != "object" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	_, s1 := m["$schema"]
	_, s2 := m["$id"]
	_, typed := m["type"]
	if !s1 && !s2 && typed {
		return tl.Schema
	}
	delete(m, "$schema")
	delete(m, "$id")
	m["type"] = "object"
	b, _ := json.Marshal(m)
	return b
}

// CallName is the target's name for a call of the client's tool name.
func (t *Turn) CallName(p Part) string {
	return TargetName(Tool{Name: p.Name, Namespace: p.Namespace})
}

// HasHistory reports a tool call in the conversation so far.
func (r *Request) HasHistory() bool {
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Kind == Call || p.Kind == Result {
				return true
			}
		}
	}
	return false
}

func (r *Request) SystemText() string { return strings.Join(r.System, "\n\n") }

// ---- to OpenAI Chat Completions ----

func (t *Turn) writeChat(model string) map[string]any {
	r := t.req
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
			msg := map[string]any{"role": "assistant"}
			var text strings.Builder
			var calls []any
			for _, p := range m.Parts {
				switch p.Kind {
				case Text:
					text.WriteString(p.Text)
				case Call:
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
			msgs = append(msgs, msg)
			continue
		}
		// a user turn: its tool results first, each a tool message, then
		// the rest (and a result's images: a tool message takes text only)
		var rest []any
		for _, p := range m.Parts {
			if p.Kind != Result {
				if c := chatPart(p); c != nil {
					rest = append(rest, c)
				}
				continue
			}
			text := ResultText(p.Content)
			if p.Error {
				text = "Error: " + text
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": t.CallID(p.ID), "content": text})
			for _, c := range p.Content {
				if c.Kind != Text {
					rest = append(rest, chatPart(c))
				}
			}
		}
		if len(rest) > 0 {
			msgs = append(msgs, map[string]any{"role": "user", "content": rest})
		}
	}
	out["messages"] = msgs
	if len(r.Tools) > 0 {
		var tools []any
		for _, tl := range r.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": TargetName(tl), "description": tl.Description, "parameters": ToolSchema(tl)}})
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
	if r.MaxTokens > 0 {
		out["max_completion_tokens"] = r.MaxTokens
	}
	if !t.takes.Reasoning { // a reasoning model takes no sampling settings (OpenAI refuses them)
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
	if e := r.Effort; e != "" && t.takes.Reasoning {
		out["reasoning_effort"] = OpenAIEffort(e)
	}
	switch {
	case r.Schema != nil:
		name := r.Schema.Name
		if name == "" {
			name = "output"
		}
		out["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": Safe(name, 64), "schema": r.Schema.Schema, "strict": r.Schema.Strict}}
	case r.JSONObject:
		out["response_format"] = map[string]any{"type": "json_object"}
	}
	if r.Stream {
		out["stream"] = true
		out["stream_options"] = map[string]any{"include_usage": true}
	}
	return out
}

// OpenAIEffort is an effort OpenAI takes: low, medium or high.
func OpenAIEffort(e string) string {
	switch e {
	case "minimal", "low", "medium", "high":
		return e
	case "none":
		return "low"
	}
	return "high"
}

// NameOf is the target's name of the client's tool called name.
func (t *Turn) NameOf(name string) string {
	for tn, tl := range t.tools {
		if tl.Name == name {
			return tn
		}
	}
	return Safe(name, 64)
}

func chatPart(p Part) map[string]any {
	switch p.Kind {
	case Text:
		if p.Text == "" {
			return nil
		}
		return map[string]any{"type": "text", "text": p.Text}
	case Image:
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": urlOf(p)}}
	case Document:
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
func urlOf(p Part) string {
	if p.URL != "" {
		return p.URL
	}
	return "data:" + p.MIME + ";base64," + p.Data
}

// ---- to Anthropic Messages ----

func (t *Turn) writeMessages(model string) map[string]any {
	r := t.req
	out := map[string]any{"model": model}
	if sys := r.SystemText(); sys != "" || r.JSONObject {
		if r.JSONObject {
			sys = strings.TrimSpace(sys + "\n\nAnswer with one JSON object.")
		}
		out["system"] = []any{map[string]any{"type": "text", "text": sys}}
	}
	var msgs []map[string]any
	for _, m := range r.Messages {
		var blocks []any
		if m.Role == "user" { // tool results first, as Messages requires
			for _, p := range m.Parts {
				if p.Kind == Result {
					blocks = append(blocks, t.messagesResult(p))
				}
			}
		}
		for _, p := range m.Parts {
			switch p.Kind {
			case Result:
			case Call:
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": t.CallID(p.ID), "name": t.CallName(p), "input": ArgsObject(p.Args)})
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
	out["messages"] = msgs
	if len(r.Tools) > 0 {
		var tools []any
		for _, tl := range r.Tools {
			tools = append(tools, map[string]any{"name": TargetName(tl), "description": tl.Description, "input_schema": ToolSchema(tl)})
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
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	// thinking only where the history allows it: a conversation with a
	// tool call has no thinking block of Anthropic's own before it (none
	// is ever forged), and Messages refuses that with thinking on
	thinking := false
	forced := r.Choice.Mode == "required" || r.Choice.Mode == "tool" // Messages refuses thinking with a forced tool
	if budget := max(r.Budget, EffortBudget(r.Effort)); budget >= 1024 && !r.HasHistory() && !forced {
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

func (t *Turn) messagesResult(p Part) map[string]any {
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

func messagesPart(p Part) map[string]any {
	switch p.Kind {
	case Text:
		if strings.TrimSpace(p.Text) == "" { // Messages refuses an empty text block
			return nil
		}
		return map[string]any{"type": "text", "text": p.Text}
	case Image, Document:
		typ := "image"
		if p.Kind == Document {
			typ = "document"
		}
		if p.URL != "" {
			return map[string]any{"type": typ, "source": map[string]any{"type": "url", "url": p.URL}}
		}
		return map[string]any{"type": typ, "source": map[string]any{"type": "base64", "media_type": p.MIME, "data": p.Data}}
	}
	return nil
}

// ---- to Gemini ----

// geminiMedia is an image or document part for Gemini: inline data, or a
// file by its URL.
func geminiMedia(p Part) map[string]any {
	if p.URL != "" {
		mt := p.MIME
		if mt == "" { // Gemini requires one: from the URL's extension, else an image's or a PDF's
			u, _ := url.Parse(p.URL)
			if u != nil {
				mt = mime.TypeByExtension(path.Ext(u.Path))
			}
			if mt == "" {
				mt = map[PartKind]string{Image: "image/jpeg", Document: "application/pdf"}[p.Kind]
			}
		}
		return map[string]any{"fileData": map[string]any{"mimeType": mt, "fileUri": p.URL}}
	}
	return map[string]any{"inlineData": map[string]any{"mimeType": p.MIME, "data": p.Data}}
}

func (t *Turn) writeGemini() map[string]any {
	r := t.req
	out := map[string]any{}
	if sys := r.SystemText(); sys != "" {
		out["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": sys}}}
	}
	names := map[string]string{} // a call's id: its tool's name at the target
	var contents []map[string]any
	for _, m := range r.Messages {
		role := "user"
		if m.Role == "assistant" {
			role = "model"
		}
		var parts []any
		signed := false
		if role == "user" {
			for _, p := range m.Parts {
				if p.Kind != Result {
					continue
				}
				resp := map[string]any{"output": ResultText(p.Content)}
				if p.Error {
					resp = map[string]any{"error": ResultText(p.Content)}
				}
				name := names[p.ID]
				if name == "" {
					name = Safe(p.Name, 64)
				}
				parts = append(parts, map[string]any{"functionResponse": map[string]any{"id": t.CallID(p.ID), "name": name, "response": resp}})
			}
			// a result's images follow the responses, as the turn's own
			// parts (a functionResponse's response is JSON)
			for _, p := range m.Parts {
				if p.Kind != Result {
					continue
				}
				for _, c := range p.Content {
					if c.Kind == Image || c.Kind == Document {
						parts = append(parts, geminiMedia(c))
					}
				}
			}
		}
		for _, p := range m.Parts {
			switch p.Kind {
			case Result:
			case Call:
				name := t.CallName(p)
				names[p.ID] = name
				part := map[string]any{"functionCall": map[string]any{"id": t.CallID(p.ID), "name": name, "args": ArgsObject(p.Args)}}
				if !signed {
					part["thoughtSignature"] = skipSignature
					signed = true
				}
				parts = append(parts, part)
			case Text:
				if p.Text != "" {
					parts = append(parts, map[string]any{"text": p.Text})
				}
			case Image, Document:
				parts = append(parts, geminiMedia(p))
			}
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(contents); n > 0 && contents[n-1]["role"] == role {
			contents[n-1]["parts"] = append(contents[n-1]["parts"].([]any), parts...)
			continue
		}
		contents = append(contents, map[string]any{"role": role, "parts": parts})
	}
	out["contents"] = contents
	if len(r.Tools) > 0 {
		var decls []any
		for _, tl := range r.Tools {
			decls = append(decls, map[string]any{"name": TargetName(tl), "description": tl.Description, "parametersJsonSchema": ToolSchema(tl)})
		}
		out["tools"] = []any{map[string]any{"functionDeclarations": decls}}
		switch r.Choice.Mode {
		case "none":
			out["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "NONE"}}
		case "required":
			out["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY"}}
		case "tool":
			out["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY", "allowedFunctionNames": []string{t.NameOf(r.Choice.Name)}}}
		}
	}
	gc := map[string]any{}
	if r.MaxTokens > 0 {
		gc["maxOutputTokens"] = r.MaxTokens
	}
	if r.Temperature != nil {
		gc["temperature"] = *r.Temperature
	}
	if r.TopP != nil {
		gc["topP"] = *r.TopP
	}
	if r.TopK != nil {
		gc["topK"] = *r.TopK
	}
	if len(r.Stop) > 0 {
		gc["stopSequences"] = r.Stop[:min(len(r.Stop), 5)]
	}
	if budget := max(r.Budget, EffortBudget(r.Effort)); budget > 0 {
		// at most 24 576 tokens, the smallest of Gemini's models' caps
		gc["thinkingConfig"] = map[string]any{"thinkingBudget": min(budget, 24576), "includeThoughts": false}
	}
	switch {
	case r.Schema != nil:
		gc["responseMimeType"] = "application/json"
		gc["responseJsonSchema"] = r.Schema.Schema
	case r.JSONObject:
		gc["responseMimeType"] = "application/json"
	}
	if len(gc) > 0 {
		out["generationConfig"] = gc
	}
	return out
}
