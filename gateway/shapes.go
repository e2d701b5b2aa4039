package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/spillway/spillway/classify"
)

// endpoint is one proxied route.
type endpoint struct {
	path     string // as the client calls it, e.g. /v1/responses
	typ      string // wire format: openai, anthropic
	kind     string // responses, chat, embeddings, messages
	upstream string // path appended to the provider's base_url
}

var endpoints = []endpoint{
	{"/v1/responses", "openai", "responses", "/responses"},
	{"/v1/chat/completions", "openai", "chat", "/chat/completions"},
	{"/v1/embeddings", "openai", "embeddings", "/embeddings"},
	{"/v1/messages", "anthropic", "messages", "/v1/messages"},
}

// errorBody is the provider-shaped error for a failure spillway itself
// reports (after the chain, or for a bad request to the gateway).
func errorBody(ep endpoint, class classify.Class, msg string) (int, []byte) {
	status := http.StatusBadGateway
	oaType, oaCode := "server_error", "upstream_error"
	anType := "api_error"
	switch class {
	case classify.Capacity:
		status, oaType, oaCode, anType = http.StatusServiceUnavailable, "service_unavailable_error", "server_is_overloaded", "overloaded_error"
		if ep.typ == "anthropic" {
			status = 529
		}
	case classify.RateLimit:
		status, oaType, oaCode, anType = http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "rate_limit_error"
	case classify.Quota:
		status, oaType, oaCode, anType = http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota", "billing_error"
	case classify.Auth:
		status, oaType, oaCode, anType = http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "authentication_error"
	case classify.Timeout:
		status, oaType, oaCode, anType = http.StatusGatewayTimeout, "server_error", "upstream_timeout", "timeout_error"
	case classify.BadRequest, classify.ContextLength, classify.ModelNotFound, classify.ContentFilter:
		status, oaType, oaCode, anType = http.StatusBadRequest, "invalid_request_error", string(class), "invalid_request_error"
		if class == classify.ModelNotFound {
			status, anType = http.StatusNotFound, "not_found_error"
		}
	}
	var body any
	if ep.typ == "anthropic" {
		body = map[string]any{"type": "error", "error": map[string]any{"type": anType, "message": msg}}
	} else {
		body = map[string]any{"error": map[string]any{"message": msg, "type": oaType, "param": nil, "code": oaCode}}
	}
	b, _ := json.Marshal(body)
	return status, b
}

// streamErrorFrame is the protocol's own error event, sent when a stream
// that has already shown output breaks, so that it never looks complete.
func streamErrorFrame(ep endpoint, class classify.Class, msg string) []byte {
	var name string
	var data any
	switch ep.kind {
	case "responses":
		code := "server_error"
		if class == classify.Capacity {
			code = "server_is_overloaded"
		}
		name = "response.failed"
		data = map[string]any{"type": "response.failed", "response": map[string]any{
			"id": "resp_spillway", "object": "response", "created_at": time.Now().Unix(), "status": "failed",
			"error": map[string]any{"code": code, "message": msg}, "output": []any{}}}
	case "messages":
		t := "api_error"
		if class == classify.Capacity {
			t = "overloaded_error"
		}
		name = "error"
		data = map[string]any{"type": "error", "error": map[string]any{"type": t, "message": msg}}
	default:
		data = map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": "stream_interrupted"}}
	}
	b, _ := json.Marshal(data)
	out := make([]byte, 0, len(b)+64)
	if name != "" {
		out = append(out, "event: "+name+"\n"...)
	}
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
