package wire

import (
	"encoding/json"
	"net/http"

	"github.com/spillway/spillway/classify"
)

// ErrorBody is the provider-shaped error for a failure spillway itself
// reports (after the chain, or for a bad request to the gateway): the status
// to answer with and the body, in ep's format.
func ErrorBody(ep Endpoint, class classify.Class, msg string) (int, []byte) {
	status := http.StatusBadGateway
	oaType, oaCode := "server_error", "upstream_error"
	anType, gStatus := "api_error", "INTERNAL"
	switch class {
	case classify.Capacity:
		status, oaType, oaCode, anType, gStatus = http.StatusServiceUnavailable, "service_unavailable_error", "server_is_overloaded", "overloaded_error", "UNAVAILABLE"
		if ep.Format == Anthropic {
			status = 529
		}
	case classify.RateLimit:
		status, oaType, oaCode, anType, gStatus = http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED"
	case classify.Quota:
		status, oaType, oaCode, anType, gStatus = http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota", "billing_error", "RESOURCE_EXHAUSTED"
	case classify.Auth:
		status, oaType, oaCode, anType, gStatus = http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "authentication_error", "UNAUTHENTICATED"
	case classify.Timeout:
		status, oaType, oaCode, anType, gStatus = http.StatusGatewayTimeout, "server_error", "upstream_timeout", "timeout_error", "DEADLINE_EXCEEDED"
	case classify.BadRequest, classify.ContextLength, classify.ModelNotFound, classify.ContentFilter:
		status, oaType, oaCode, anType, gStatus = http.StatusBadRequest, "invalid_request_error", string(class), "invalid_request_error", "INVALID_ARGUMENT"
		switch class {
		case classify.ModelNotFound:
			status, anType, gStatus = http.StatusNotFound, "not_found_error", "NOT_FOUND"
		case classify.ContextLength:
			oaCode = "context_length_exceeded" // OpenAI's own code
		case classify.ContentFilter:
			oaCode = "content_policy_violation"
		}
	}
	return status, shaped(ep, status, oaType, oaCode, anType, gStatus, msg)
}

// shaped is an error body in ep's provider's own shape: OpenAI's type and
// code, Anthropic's type, Gemini's status with the HTTP status as code.
func shaped(ep Endpoint, status int, oaType, oaCode, anType, gStatus, msg string) []byte {
	var body any
	switch ep.Format {
	case Anthropic:
		body = map[string]any{"type": "error", "error": map[string]any{"type": anType, "message": msg}}
	default:
		body = map[string]any{"error": map[string]any{"message": msg, "type": oaType, "param": nil, "code": oaCode}}
	}
	b, _ := json.Marshal(body)
	return b
}

// StatusBody is the provider-shaped answer of a refusal the gateway makes
// by itself with status: 403 (not permitted: a key outside its chains, a
// page of another origin), 404 (no such route) or 405 (a route of another
// method), each in the shape the provider gives that status (Anthropic
// permission_error and not_found_error, Gemini PERMISSION_DENIED and
// NOT_FOUND with the status as code), so that a client reads it as what it
// is and not as a bad key or a bad request.
func StatusBody(ep Endpoint, status int, msg string) []byte {
	oaType, oaCode, anType, gStatus := "invalid_request_error", "invalid_request", "invalid_request_error", "INVALID_ARGUMENT"
	switch status {
	case http.StatusForbidden:
		oaCode, anType, gStatus = "permission_denied", "permission_error", "PERMISSION_DENIED"
	case http.StatusNotFound:
		oaCode, anType, gStatus = "not_found", "not_found_error", "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		oaCode = "method_not_allowed"
	}
	return shaped(ep, status, oaType, oaCode, anType, gStatus, msg)
}

// BusyBody is the provider-shaped answer for a request the gateway has no
// room to take (gateway.max_inflight_mb): 503 with code spillway_busy in
// every format, never a code a client reads as the model at capacity
// (Codex shows server_is_overloaded as "Selected model is at capacity").
func BusyBody(ep Endpoint, msg string) (int, []byte) {
	var body any
	switch ep.Format {
	case Anthropic:
		body = map[string]any{"type": "error", "error": map[string]any{"type": "spillway_busy", "message": msg}}
	default:
		body = map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": "spillway_busy"}}
	}
	b, _ := json.Marshal(body)
	return http.StatusServiceUnavailable, b
}

// StreamErrorFrame is the protocol's own error event, sent when a stream
// that has already shown output breaks, so that it never looks complete.
// It continues the stream: for Responses, r is what the stream told its
// client of its response (Responding), whose id, model, created_at and next
// sequence_number the response.failed repeats; the other formats' error
// events carry nothing of the stream's (Messages' event: error, a Chat
// chunk's error object, Gemini's error object, each as its SDKs read it).
func StreamErrorFrame(ep Endpoint, class classify.Class, msg string, r Responding) []byte {
	var name string
	var data any
	switch ep.Kind {
	case Messages:
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

// GiveUpFrame is StreamErrorFrame's.
func GiveUpFrame(ep Endpoint, class classify.Class, msg string, r Responding) []byte {
	return StreamErrorFrame(ep, class, msg, r)
}

// ErrorStatus is the HTTP status spillway answers a failure of class with
// (each format's error names the class its own way): 503 for capacity,
// 429 for a rate or quota limit, 401 for a key refused, 504 for a
// timeout, 400 for what was asked, 404 for no such model, else 502.
func ErrorStatus(class classify.Class) int {
	switch class {
	case classify.Capacity:
		return http.StatusServiceUnavailable
	case classify.RateLimit, classify.Quota:
		return http.StatusTooManyRequests
	case classify.Auth:
		return http.StatusUnauthorized
	case classify.Timeout:
		return http.StatusGatewayTimeout
	case classify.BadRequest, classify.ContextLength, classify.ContentFilter:
		return http.StatusBadRequest
	case classify.ModelNotFound:
		return http.StatusNotFound
	}
	return http.StatusBadGateway
}

// SSE is one event of a stream: "event: name" (none when name is ""),
// then data as JSON.
func SSE(name string, data any) []byte {
	b, _ := json.Marshal(data)
	out := make([]byte, 0, len(b)+64)
	if name != "" {
		out = append(out, "event: "+name+"\n"...)
	}
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
