package sim

import "net/http"

// keyOf is the caller's key, as each API carries it: x-api-key
// (Anthropic), Authorization: Bearer (OpenAI), x-goog-api-key or ?key=
// (Gemini).
func keyOf(r *http.Request) string {
	for _, k := range []string{r.Header.Get("x-api-key"), bearer(r), r.Header.Get("x-goog-api-key"), r.URL.Query().Get("key")} {
		if k != "" {
			return k
		}
	}
	return ""
}

// keyRefused answers a listing request (GET models) whose key the
// scenario refuses (invalid, out of quota) or that an auth or quota fault
// without a model (or for model) takes, in p's form; it reports whether it
// did. The listing endpoints cost nothing, so only key faults apply: a
// doctor's check reads them without spending a token.
func (s *Server) keyRefused(w http.ResponseWriter, r *http.Request, p protocol, model string) bool {
	c := &call{proto: p, model: modelInfo{name: model}, id: s.nextID("")}
	class := ""
	key := keyOf(r)
	switch s.keyState(key) {
	case "invalid":
		if key != "" { // a listing without a key is answered (curl, a quick look)
			class = "auth"
		}
	case "quota":
		class = "quota"
	}
	if class == "" {
		if f := s.takeFaultOf(model, false, "auth", "quota"); f != nil {
			class = f.Kind
		}
	}
	if class == "" {
		return false
	}
	p.writeError(w, c, failure{class: class})
	return true
}
