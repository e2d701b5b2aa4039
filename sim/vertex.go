package sim

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Google Vertex AI: POST /v1/projects/{p}/locations/{r}/publishers/{pub}/models/{m}:{method}.
// Anthropic's models (publisher anthropic): rawPredict and
// streamRawPredict with a Messages body without model, anthropic_version
// vertex-2023-10-16, answered as the Messages API answers (SSE when
// streamed); count-tokens:rawPredict. Gemini's (publisher google):
// generateContent, streamGenerateContent (?alt=sse), countTokens, as the
// Gemini API. Errors of the platform are Google's
// {"error":{"code","message","status"}}; a model's own (a bad request)
// are relayed in the model's format.
//
// The pools: a request's locations/{r} is served by the simulator's
// region r when it runs one (--regions) and the request came without a
// region's prefix; else by the pools of the server it reached.

const vertexVersion2023 = "vertex-2023-10-16"

// vertexErrorOf is Vertex AI's own error for the failure f: its status,
// RPC status and message; ok is false for a failure the model answers
// itself (a bad request, a context too long).
func (s *Server) vertexErrorOf(c *call, cc *cloudCall, f failure) (status int, rpc, msg string, ok bool) {
	resource := fmt.Sprintf("projects/%s/locations/%s/publishers/%s/models/%s", cc.project, cc.location, cc.publisher, cc.modelID)
	switch f.class {
	case "capacity":
		status, rpc, msg = 429, "RESOURCE_EXHAUSTED", "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."
	case "rate_limit":
		status, rpc, msg = 429, "RESOURCE_EXHAUSTED", "Exceeded the Provisioned Throughput. Please try again later or purchase more Provisioned Throughput."
	case "usage_limit":
		status, rpc, msg = 429, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_day_per_project_per_base_model with base model: "+cc.modelID+". Please submit a quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai."
	case "quota":
		status, rpc, msg = 403, "PERMISSION_DENIED", "This API method requires billing to be enabled. Please enable billing on project #"+cc.project+" by visiting https://console.developers.google.com/billing/enable?project="+cc.project+" then retry."
	case "auth":
		status, rpc, msg = 401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	case "model_not_found":
		status, rpc, msg = 404, "NOT_FOUND", "Publisher Model `"+resource+"` not found."
	case "server_error":
		status, rpc, msg = 500, "INTERNAL", "Internal error encountered."
	case "timeout":
		status, rpc, msg = 504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."
	default:
		return 0, "", "", false
	}
	if f.message != "" && f.class != "rate_limit" {
		msg = f.message
	}
	return status, rpc, msg, true
}

func vertexBody(status int, rpc, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"code": status, "message": msg, "status": rpc}}
}

// vertexError writes Vertex AI's own error for f; it reports whether f is
// one (else the model answers in its own format).
func (s *Server) vertexError(w http.ResponseWriter, c *call, cc *cloudCall, f failure) bool {
	status, rpc, msg, ok := s.vertexErrorOf(c, cc, f)
	if !ok {
		return false
	}
	writeJSON(w, status, vertexBody(status, rpc, msg)) // no retry-after: Vertex AI sends none
	return true
}

// handleVertex routes a Vertex AI request by its publisher and method.
func (s *Server) handleVertex(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/projects/"), "/")
	if len(parts) != 7 || parts[1] != "locations" || parts[3] != "publishers" || parts[5] != "models" {
		writeJSON(w, http.StatusNotFound, vertexBody(404, "NOT_FOUND", fmt.Sprintf("The requested URL %s was not found on this server; the simulator serves /v1/projects/P/locations/R/publishers/{anthropic,google}/models/M:METHOD", r.URL.Path)))
		return
	}
	if rs := s.regions[parts[2]]; rs != nil {
		rs.handleVertex(w, r) // the location's own pools
		return
	}
	model, method, _ := strings.Cut(parts[6], ":")
	cc := &cloudCall{kind: "vertex", project: parts[0], location: parts[2], publisher: parts[4], modelID: model}
	key, ok := s.auth.vertex(r, s.clock.Now())
	if !ok {
		c := &call{id: s.nextID("")}
		s.vertexError(w, c, cc, failure{class: "auth"})
		return
	}
	switch cc.publisher {
	case "anthropic":
		s.vertexAnthropic(w, r, cc, method, key)
	case "google":
		s.vertexGemini(w, r, cc, method, key)
	default:
		s.vertexError(w, &call{id: s.nextID("")}, cc, failure{class: "model_not_found"})
	}
}

// vertexAnthropic serves Anthropic's models on Vertex AI.
func (s *Server) vertexAnthropic(w http.ResponseWriter, r *http.Request, cc *cloudCall, method, key string) {
	p := anthropicProto{s: s, cloud: cc}
	if cc.modelID == "count-tokens" && method == "rawPredict" {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
		if err != nil {
			p.writeError(w, &call{proto: p, id: s.nextID("")}, failure{class: "too_large"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": EstimateTokens(b)})
		return
	}
	if method != "rawPredict" && method != "streamRawPredict" {
		s.vertexError(w, &call{id: s.nextID("")}, cc, failure{class: "model_not_found", message: fmt.Sprintf("unknown method %q; Anthropic's models on Vertex AI serve rawPredict and streamRawPredict", method)})
		return
	}
	c, m, ok := s.prepare(w, r, p, key)
	if !ok {
		return
	}
	c.stream = method == "streamRawPredict"
	if c.model, ok = s.cloudModel(vertexPool, vertexVendor(cc.modelID), wireVertexAnthropic); !ok {
		c.model = modelInfo{name: vertexPool + vertexVendor(cc.modelID)}
		s.count(c.model.name, func(st *ModelStats) { st.Received++; st.Rejected["model_not_found"]++ })
		p.writeError(w, c, failure{class: "model_not_found"})
		return
	}
	msg := ""
	switch v, has := m["anthropic_version"]; {
	case !has:
		msg = "anthropic_version: Field required"
	case !cloudVersion(v, vertexVersion2023):
		msg = fmt.Sprintf("anthropic_version: Input should be '%s' (not %v)", vertexVersion2023, v)
	}
	if _, has := m["model"]; has {
		msg = "model: Extra inputs are not permitted (Vertex AI names the model in the path)"
	}
	if msg != "" {
		s.count(c.model.name, func(st *ModelStats) { st.Received++; st.Rejected["bad_request"]++ })
		p.writeError(w, c, failure{class: "bad_request", message: msg})
		return
	}
	betas := []string{r.Header.Get("anthropic-beta")} // the header, or the body's list
	if list, ok := m["anthropic_beta"].([]any); ok {
		for _, b := range list {
			betas = append(betas, str(b))
		}
	}
	s.runMessages(w, r, c, m, strings.Join(betas, ","))
}

// vertexGemini serves Gemini's models on Vertex AI, as the Gemini API does.
func (s *Server) vertexGemini(w http.ResponseWriter, r *http.Request, cc *cloudCall, method, key string) {
	p := geminiProto{s: s, sse: r.URL.Query().Get("alt") == "sse", cloud: cc}
	switch method {
	case "countTokens":
		b, _ := io.ReadAll(io.LimitReader(r.Body, s.maxBody))
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(b) / 4})
		return
	case "generateContent", "streamGenerateContent":
	default:
		p.writeError(w, &call{proto: p, id: s.nextID("")}, failure{class: "bad_request", message: fmt.Sprintf("unknown method %q; the simulator serves generateContent, streamGenerateContent and countTokens", method)})
		return
	}
	c, m, ok := s.prepare(w, r, p, key)
	if !ok {
		return
	}
	if c.model, ok = s.cloudModel(vertexPool, vertexVendor(cc.modelID), wireVertexGemini); !ok {
		c.model = modelInfo{name: vertexPool + cc.modelID}
		s.count(c.model.name, func(st *ModelStats) { st.Received++; st.Rejected["model_not_found"]++ })
		p.writeError(w, c, failure{class: "model_not_found"})
		return
	}
	s.runGemini(w, r, c, m, method == "streamGenerateContent")
}
