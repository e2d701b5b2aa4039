package format

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Header sets what the target requires of the translated request's
// headers (the credentials are the caller's to set): its content type, and
// what its format asks (Anthropic's version and the betas the request
// needs).
func (t *Turn) Header(h http.Header) {
	h.Set("Content-Type", "application/json")
	if t.Stream {
		h.Set("Accept", "text/event-stream")
	}
	t.target.Header(t, h)
}

// Query is the query the target's URL needs (Gemini streams SSE only with
// alt=sse).
func (t *Turn) Query() string { return t.target.Query(t.Target) }

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

// ---- to Anthropic Messages ----

// ---- to Gemini ----
