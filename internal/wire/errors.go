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
	case Responses:
		code := "server_error"
		if class == classify.Capacity {
			code = "server_is_overloaded"
		}
		return responsesFailed(r, code, msg)
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

// GiveUpFrame is the event that ends a stream spillway gave up on before
// any output (every model full through the budget): StreamErrorFrame's,
// except that a Responses stream's code is invalid_prompt. Codex 0.169
// prints its own fixed text for server_is_overloaded ("Selected model is at
// capacity. Please try a different model.": wrong advice, spillway tried
// them all) and reconnects on other codes; invalid_prompt it prints as the
// message says, once (measured against the real client). The code tells a
// client not to retry, which is right: spillway did.
//
// A Responses give-up is a stream of its own: r names its response (an id
// of spillway's, the model asked for, the time), and it is response.created
// then response.failed (sequence numbers 0 and 1), a response's whole
// lifecycle as OpenAI streams one that fails before output (the OpenAI Node
// SDK reads no stream that does not open with response.created).
func GiveUpFrame(ep Endpoint, class classify.Class, msg string, r Responding) []byte {
	if ep.Kind == Responses {
		r.Next = 0
		out := responsesEvent("response.created", r, nil)
		r.Next = 1
		return append(out, responsesFailed(r, "invalid_prompt", msg)...)
	}
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
