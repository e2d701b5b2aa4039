package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

type geminiProto struct {
	s     *Server
	sse   bool       // streamGenerateContent?alt=sse
	cloud *cloudCall // Vertex AI's, when not nil
}

func (p geminiProto) provider() string { return "gemini" }

func (p geminiProto) writeError(w http.ResponseWriter, c *call, f failure) {
	if p.cloud != nil && p.s.vertexError(w, c, p.cloud, f) {
		return // else the model's own, as the Gemini API's
	}
	status, rpc, msg := 500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	var details []any
	switch f.class {
	case "capacity":
		status, rpc, msg = 503, "UNAVAILABLE", "The model is overloaded. Please try again later."
	case "rate_limit":
		status, rpc = 429, "RESOURCE_EXHAUSTED"
		msg = fmt.Sprintf("You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\nPlease retry in %s.", formatProtoDuration(f.retryAfter))
		details = []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
				"quotaDimensions": map[string]any{"location": "global", "model": c.model.name}}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": formatProtoDuration(f.retryAfter)},
		}
	case "quota": // billing: out of credit (a per-day quota is a usage limit, which resets)
		status, rpc, msg = 429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details."
	case "usage_limit": // a daily quota (modelled, not observed): it comes back at the reset
		status, rpc, msg = 429, "RESOURCE_EXHAUSTED", "You have exhausted your daily quota on this model."
		details = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
			"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests", "quotaId": "GenerateRequestsPerDayPerProjectPerModel"}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": formatProtoDuration(f.resetsAt.Sub(p.s.clock.Now()).Round(time.Second))}}
	case "auth":
		status, rpc, msg = 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."
		details = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}
	case "model_not_found":
		status, rpc, msg = 404, "NOT_FOUND", fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", c.model.name)
	case "context_length":
		status, rpc, msg = 400, "INVALID_ARGUMENT", fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", c.inTokens, c.model.context)
	case "bad_json", "bad_request":
		status, rpc, msg = 400, "INVALID_ARGUMENT", "Invalid JSON payload received."
	case "content_filter":
		status, rpc, msg = 400, "INVALID_ARGUMENT", "The request was blocked by the content filter (blockReason: SAFETY)."
	case "too_large":
		status, rpc, msg = 413, "INVALID_ARGUMENT", "Request payload size exceeds the limit."
	}
	if f.message != "" && f.class != "rate_limit" && f.class != "bad_json" {
		msg = f.message
	}
	e := map[string]any{"code": status, "message": msg, "status": rpc}
	if details != nil {
		e["details"] = details
	}
	if f.class != "rate_limit" {
		retryHeaders(w.Header(), f.retryAfter)
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func formatProtoDuration(d time.Duration) string {
	if d <= 0 {
		d = time.Second
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".") + "s"
}

func (s *Server) handleGemini(w http.ResponseWriter, r *http.Request) {
	target := r.PathValue("target")
	model, action, _ := strings.Cut(target, ":")
	p := geminiProto{s: s, sse: r.URL.Query().Get("alt") == "sse"}
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key == "" {
		key = bearer(r) // an OAuth token (Code Assist, Vertex-style callers)
	}
	if action == "countTokens" {
		// the tokens of the request, as the simulator counts them (bytes / 4)
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(b) / 4})
		return
	}
	if action != "generateContent" && action != "streamGenerateContent" {
		p.writeError(w, &call{proto: p, id: s.nextID("")}, failure{class: "bad_request", message: fmt.Sprintf("unknown method %q; the simulator serves generateContent, streamGenerateContent and countTokens", action)})
		return
	}
	c, m, ok := s.prepare(w, r, p, key)
	if !ok || !s.lookup(w, c, model, "gemini") {
		return
	}
	s.runGemini(w, r, c, m, action == "streamGenerateContent")
}

// runGemini answers a Gemini call, streamed or not.
func (s *Server) runGemini(w http.ResponseWriter, r *http.Request, c *call, m map[string]any, stream bool) {
	p := c.proto.(geminiProto)
	c.stream = stream
	c.prompt = lastUser(m["contents"], "role", "parts", false)
	c.convo = geminiConvo(m)
	if !c.stream || p.sse {
		s.run(w, r, c)
		return
	}
	// streamGenerateContent without alt=sse answers one JSON array
	c.stream = false
	c.proto = geminiArray{p}
	s.run(w, r, c)
}

// handleGeminiModels lists the Gemini models served, as ListModels does.
func (s *Server) handleGeminiModels(w http.ResponseWriter, r *http.Request) {
	if s.keyRefused(w, r, geminiProto{s: s}, "") {
		return
	}
	names := make([]string, 0, len(s.models))
	for n, m := range s.models {
		if m.provider == "gemini" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	models := make([]any, 0, len(names))
	for _, n := range names {
		models = append(models, map[string]any{"name": "models/" + n, "displayName": n, "inputTokenLimit": s.models[n].context,
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

func (p geminiProto) chunk(c *call, text string, finish string, u *usage) map[string]any {
	cand := map[string]any{"content": map[string]any{"parts": []any{map[string]any{"text": text}}, "role": "model"}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": c.vendorModel(), "responseId": c.id}
	if u != nil {
		out["usageMetadata"] = map[string]any{"promptTokenCount": u.in, "candidatesTokenCount": u.out, "totalTokenCount": u.in + u.out}
	}
	return out
}

func (p geminiProto) open(sw *stream, c *call) error { sw.begin(); return nil }

func (p geminiProto) token(sw *stream, c *call, _ int, tok string) error {
	return sw.event("", p.chunk(c, tok, "", nil))
}

func (p geminiProto) streamError(sw *stream, c *call, f failure) error {
	if p.cloud != nil {
		if status, rpc, msg, ok := p.s.vertexErrorOf(c, p.cloud, f); ok {
			return sw.event("", vertexBody(status, rpc, msg))
		}
	}
	return sw.event("", map[string]any{"error": map[string]any{"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})
}

func (p geminiProto) failEarly(sw *stream, c *call, f failure) error { return p.streamError(sw, c, f) }

func (p geminiProto) close(sw *stream, c *call, _ string, u usage) error {
	return sw.event("", p.chunk(c, "", "STOP", &u))
}

func (p geminiProto) complete(w http.ResponseWriter, c *call, text string, u usage) {
	writeJSON(w, http.StatusOK, p.chunk(c, text, "STOP", &u))
}

// geminiArray answers streamGenerateContent without alt=sse: a JSON array of chunks.
type geminiArray struct{ geminiProto }

func (p geminiArray) complete(w http.ResponseWriter, c *call, text string, u usage) {
	var chunks []any
	for _, t := range Tokens(text) {
		chunks = append(chunks, p.chunk(c, t, "", nil))
	}
	chunks = append(chunks, p.chunk(c, "", "STOP", &u))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(chunks)
}
