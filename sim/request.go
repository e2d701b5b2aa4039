package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// prepare reads and checks a request body. On failure it has answered.
func (s *Server) prepare(w http.ResponseWriter, r *http.Request, p protocol, key string) (*call, map[string]any, bool) {
	c := &call{proto: p, key: key, id: s.nextID("")}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			p.writeError(w, c, failure{class: "too_large", message: fmt.Sprintf("Request body is larger than the limit of %d bytes.", s.maxBody)})
			return nil, nil, false
		}
		p.writeError(w, c, failure{class: "bad_request", message: "could not read the request body: " + err.Error()})
		return nil, nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		p.writeError(w, c, failure{class: "bad_json", message: jsonErrText(err)})
		return nil, nil, false
	}
	c.inTokens = EstimateTokens(body)
	if st, ok := m["stream"].(bool); ok {
		c.stream = st
	}
	return c, m, true
}

func jsonErrText(err error) string {
	if err == nil {
		return "the body is not a JSON object"
	}
	return err.Error()
}

// lookup finds the model for provider; on failure it has answered.
func (s *Server) lookup(w http.ResponseWriter, c *call, name, provider string) bool {
	m, ok := s.models[name]
	if !ok || m.provider != provider {
		c.model = modelInfo{name: name}
		if name == "" {
			c.proto.writeError(w, c, failure{class: "bad_request", message: "you must provide a model parameter"})
			return false
		}
		s.count(name, func(st *ModelStats) { st.Received++; st.Rejected["model_not_found"]++ })
		c.proto.writeError(w, c, failure{class: "model_not_found"})
		return false
	}
	c.model = m
	return true
}

// openaiKey is an OpenAI-format caller's key: Authorization: Bearer, or
// Azure OpenAI's api-key header.
func openaiKey(r *http.Request) string {
	if k := bearer(r); k != "" {
		return k
	}
	return strings.TrimSpace(r.Header.Get("Api-Key"))
}

func bearer(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// textOf joins the text of a content field: a string, or a list of parts
// with "text" fields. skipReminders drops Claude Code's <system-reminder> blocks.
func textOf(v any, skipReminders bool) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		last := ""
		for _, p := range x {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			t := str(pm["text"])
			if t == "" || (skipReminders && strings.HasPrefix(strings.TrimSpace(t), "<system-reminder>")) {
				continue
			}
			last = t
		}
		return last
	}
	return ""
}

// trailingAssistant is the text of an assistant turn that ends list (a
// prefill to continue from), "" when the last turn is another's.
func trailingAssistant(list any) string {
	items, _ := list.([]any)
	if len(items) == 0 {
		return ""
	}
	m, _ := items[len(items)-1].(map[string]any)
	if m == nil || str(m["role"]) != "assistant" {
		return ""
	}
	return textOf(m["content"], false)
}

// lastUser returns the text of the last user message in list.
func lastUser(list any, roleKey, contentKey string, skipReminders bool) string {
	items, _ := list.([]any)
	for i := len(items) - 1; i >= 0; i-- {
		m, ok := items[i].(map[string]any)
		if !ok {
			continue
		}
		role := str(m[roleKey])
		if role != "user" && !(role == "" && roleKey == "role" && contentKey == "parts") {
			continue
		}
		if t := textOf(m[contentKey], skipReminders); t != "" {
			return t
		}
	}
	return ""
}
