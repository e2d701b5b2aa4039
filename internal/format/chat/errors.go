package chat

import (
	"encoding/json"
	"net/http"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/wire"
)

// ErrorBody is the OpenAI API's error for a failure of class spillway
// reports: {"error": {message, type, param, code}}, every OpenAI route's
// shape (Responses' and embeddings' too).
func (Format) ErrorBody(class classify.Class, msg string) (int, []byte) {
	typ, code := "server_error", "upstream_error"
	switch class {
	case classify.Capacity:
		typ, code = "service_unavailable_error", "server_is_overloaded"
	case classify.RateLimit:
		typ, code = "requests", "rate_limit_exceeded"
	case classify.Quota:
		typ, code = "insufficient_quota", "insufficient_quota"
	case classify.Auth:
		typ, code = "invalid_request_error", "invalid_api_key"
	case classify.Timeout:
		typ, code = "server_error", "upstream_timeout"
	case classify.BadRequest, classify.ModelNotFound:
		typ, code = "invalid_request_error", string(class)
	case classify.ContextLength:
		typ, code = "invalid_request_error", "context_length_exceeded" // OpenAI's own code
	case classify.ContentFilter:
		typ, code = "invalid_request_error", "content_policy_violation"
	}
	return wire.ErrorStatus(class), Shaped(typ, code, msg)
}

// StatusBody is the OpenAI API's answer to a refusal of status:
// invalid_request_error with code permission_denied (403), not_found
// (404), method_not_allowed (405), else invalid_request.
func (Format) StatusBody(status int, msg string) []byte {
	code := "invalid_request"
	switch status {
	case http.StatusForbidden:
		code = "permission_denied"
	case http.StatusNotFound:
		code = "not_found"
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	}
	return Shaped("invalid_request_error", code, msg)
}

// BusyBody is 503, type server_error, code spillway_busy.
func (Format) BusyBody(msg string) (int, []byte) {
	return http.StatusServiceUnavailable, Shaped("server_error", "spillway_busy", msg)
}

// Shaped is an error body of the OpenAI API: its type and code, a null
// param.
func Shaped(typ, code, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return b
}

// StreamErrorFrame is a chunk of the OpenAI API's error object, code
// stream_interrupted, as its SDKs read it.
func (Format) StreamErrorFrame(_ classify.Class, msg string, _ wire.Responding) []byte {
	return wire.SSE("", map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": "stream_interrupted"}})
}

// GiveUpFrame is StreamErrorFrame's.
func (f Format) GiveUpFrame(class classify.Class, msg string, r wire.Responding) []byte {
	return f.StreamErrorFrame(class, msg, r)
}

// GivesUpInStream is false: a give-up is an HTTP error in this format.
func (Format) GivesUpInStream() bool { return false }
