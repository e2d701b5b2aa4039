package gemini

import (
	"mime"
	"net/http"
	"net/url"
	"path"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// SkipSignature is the thought signature Gemini documents for a function
// call it did not make itself (a conversation begun with another model):
// it says there is no signature, rather than forging one.
const SkipSignature = "skip_thought_signature_validator"

// geminiMedia is an image or document part for Gemini: inline data, or a
// file by its URL.
func geminiMedia(p format.Part) map[string]any {
	if p.URL != "" {
		mt := p.MIME
		if mt == "" { // Gemini requires one: from the URL's extension, else an image's or a PDF's
			u, _ := url.Parse(p.URL)
			if u != nil {
				mt = mime.TypeByExtension(path.Ext(u.Path))
			}
			if mt == "" {
				mt = map[format.PartKind]string{format.Image: "image/jpeg", format.Document: "application/pdf"}[p.Kind]
			}
		}
		return map[string]any{"fileData": map[string]any{"mimeType": mt, "fileUri": p.URL}}
	}
	return map[string]any{"inlineData": map[string]any{"mimeType": p.MIME, "data": p.Data}}
}

// WriteRequest is t's request as Gemini's (the model is in the path).
func (Format) WriteRequest(t *format.Turn, _ string) map[string]any {
	r := t.Req
	out := map[string]any{}
	if sys := r.SystemText(); sys != "" {
		out["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": sys}}}
	}
	out["contents"] = writeContents(t)
	if len(r.Tools) > 0 {
		var decls []any
		for _, tl := range r.Tools {
			decls = append(decls, map[string]any{"name": format.TargetName(tl), "description": tl.Description, "parametersJsonSchema": format.ToolSchema(tl)})
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
	if gc := writeConfig(r); len(gc) > 0 {
		out["generationConfig"] = gc
	}
	return out
}

// writeContents is the conversation as Gemini's contents: a run of turns of
// one role is one content.
func writeContents(t *format.Turn) []map[string]any {
	names := map[string]string{} // a call's id: its tool's name at the target
	var contents []map[string]any
	for _, m := range t.Req.Messages {
		role := "user"
		if m.Role == "assistant" {
			role = "model"
		}
		var parts []any
		if role == "user" {
			parts = writeResults(t, m, names)
		}
		signed := false
		for _, p := range m.Parts {
			switch p.Kind {
			case format.Result:
			case format.Call:
				name := t.CallName(p)
				names[p.ID] = name
				part := map[string]any{"functionCall": map[string]any{"id": t.CallID(p.ID), "name": name, "args": format.ArgsObject(p.Args)}}
				if !signed {
					part["thoughtSignature"] = SkipSignature
					signed = true
				}
				parts = append(parts, part)
			case format.Text:
				if p.Text != "" {
					parts = append(parts, map[string]any{"text": p.Text})
				}
			case format.Image, format.Document:
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
	return contents
}

// writeResults is a user turn's tool results as functionResponse parts (by
// the name the call went out with, names[id]), then the results' images, as
// the turn's own parts (a functionResponse's response is JSON).
func writeResults(t *format.Turn, m format.Message, names map[string]string) []any {
	var parts []any
	for _, p := range m.Parts {
		if p.Kind != format.Result {
			continue
		}
		resp := map[string]any{"output": format.ResultText(p.Content)}
		if p.Error {
			resp = map[string]any{"error": format.ResultText(p.Content)}
		}
		name := names[p.ID]
		if name == "" {
			name = format.Safe(p.Name, 64)
		}
		parts = append(parts, map[string]any{"functionResponse": map[string]any{"id": t.CallID(p.ID), "name": name, "response": resp}})
	}
	for _, p := range m.Parts {
		if p.Kind != format.Result {
			continue
		}
		for _, c := range p.Content {
			if c.Kind == format.Image || c.Kind == format.Document {
				parts = append(parts, geminiMedia(c))
			}
		}
	}
	return parts
}

// writeConfig is the request's generationConfig (empty: none).
func writeConfig(r *format.Request) map[string]any {
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
	if budget := max(r.Budget, format.EffortBudget(r.Effort)); budget > 0 {
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
	return gc
}

// Header adds nothing.
func (Format) Header(*format.Turn, http.Header) {}

// Query is alt=sse for a stream: Gemini streams SSE only with it.
func (Format) Query(ep wire.Endpoint) string {
	if ep.Kind == wire.StreamGenerateContent {
		return "alt=sse"
	}
	return ""
}
