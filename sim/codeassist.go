package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// The Code Assist API, as Gemini CLI 0.61 signed in with Google calls it at
// CODE_ASSIST_ENDPOINT (docs/client-notes.md): POST /v1internal:METHOD with
// Authorization: Bearer <its access token>. generateContent and
// streamGenerateContent carry the Gemini request wrapped, {model, project,
// user_prompt_id, request: {…}}, and answer each chunk wrapped,
// {response: {…}, traceId}; the simulator serves them with its Gemini
// answers (the same pools, faults, scripts and rules). loadCodeAssist says
// the user is set up with a project; its other methods (onboardUser,
// countTokens, retrieveUserQuota, listExperiments,
// recordCodeAssistMetrics, …) answer as a signed-up user's would.

// CodeAssistProject is the project loadCodeAssist gives every user.
const CodeAssistProject = "spillway-sim-project"

func (s *Server) handleCodeAssist(w http.ResponseWriter, r *http.Request) {
	method, _ := strings.CutPrefix(r.URL.Path, "/v1internal:")
	if bearer(r) == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "message": "Request is missing required authentication credential. Expected OAuth 2 access token.", "status": "UNAUTHENTICATED"}})
		return
	}
	switch method {
	case "loadCodeAssist":
		writeJSON(w, http.StatusOK, map[string]any{"currentTier": map[string]any{"id": "standard-tier", "name": "Gemini Code Assist", "hasOnboardedPreviously": true},
			"cloudaicompanionProject": CodeAssistProject})
	case "onboardUser":
		writeJSON(w, http.StatusOK, map[string]any{"done": true, "response": map[string]any{"cloudaicompanionProject": map[string]any{"id": CodeAssistProject}}})
	case "countTokens":
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(b) / 4})
	case "generateContent", "streamGenerateContent":
		s.codeAssistGenerate(w, r, method)
	default:
		writeJSON(w, http.StatusOK, map[string]any{})
	}
}

// codeAssistGenerate unwraps the request, answers it as the Gemini API
// does, and wraps what is answered.
func (s *Server) codeAssistGenerate(w http.ResponseWriter, r *http.Request, method string) {
	var req struct {
		Model   string          `json:"model"`
		Project string          `json:"project"`
		Request json.RawMessage `json:"request"`
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil || json.Unmarshal(b, &req) != nil || req.Model == "" || len(req.Request) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "message": "Invalid JSON payload: a Code Assist request is {model, project, request: {contents, …}}", "status": "INVALID_ARGUMENT"}})
		return
	}
	inner := r.Clone(r.Context())
	inner.URL.Path = "/v1beta/models/" + req.Model + ":" + method
	inner.SetPathValue("target", req.Model+":"+method)
	inner.Body = io.NopCloser(bytes.NewReader(req.Request))
	inner.ContentLength = int64(len(req.Request))
	cw := &codeAssistWriter{ResponseWriter: w, trace: s.nextID("")}
	s.handleGemini(cw, inner)
	cw.finish()
}

// codeAssistWriter wraps a Gemini answer's chunks as Code Assist does:
// each SSE data line, or a whole 200 body, under "response". Errors pass
// as they are.
type codeAssistWriter struct {
	http.ResponseWriter
	trace  string
	status int
	whole  bytes.Buffer // a whole 200 answer, wrapped at finish
	sse    bool
}

func (cw *codeAssistWriter) WriteHeader(status int) {
	cw.status = status
	cw.sse = strings.HasPrefix(cw.Header().Get("Content-Type"), "text/event-stream")
	if status == http.StatusOK && !cw.sse {
		cw.Header().Del("Content-Length")
	}
	cw.ResponseWriter.WriteHeader(status)
}

func (cw *codeAssistWriter) Write(b []byte) (int, error) {
	if cw.status == 0 {
		cw.WriteHeader(http.StatusOK)
	}
	switch {
	case cw.status != http.StatusOK:
		return cw.ResponseWriter.Write(b)
	case !cw.sse:
		return cw.whole.Write(b)
	}
	// the simulator writes whole frames: "data: {…}\n\n"
	var out bytes.Buffer
	for line := range strings.SplitAfterSeq(string(b), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(data, "{") {
			out.WriteString(`data: {"response":` + strings.TrimRight(data, "\r\n") + `,"traceId":"` + cw.trace + "\"}\n")
			continue
		}
		out.WriteString(line)
	}
	if _, err := cw.ResponseWriter.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (cw *codeAssistWriter) Flush() {
	if f, ok := cw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (cw *codeAssistWriter) finish() {
	if cw.status == http.StatusOK && !cw.sse {
		body := bytes.TrimSpace(cw.whole.Bytes())
		cw.ResponseWriter.Write([]byte(`{"response":` + string(body) + `,"traceId":"` + cw.trace + "\"}\n"))
	}
}

// Unwrap gives http.ResponseController the connection's writer.
func (cw *codeAssistWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }
