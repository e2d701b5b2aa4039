package gemini

import (
	"encoding/json"
	"net/http"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/wire"
)

// ErrorBody is Gemini's error for a failure of class spillway reports:
// {"error": {code, message, status}}, the HTTP status as code and
// Google's RPC status for the class.
func (Format) ErrorBody(class classify.Class, msg string) (int, []byte) {
	status := wire.ErrorStatus(class)
	rpc := "INTERNAL"
	switch class {
	case classify.Capacity:
		rpc = "UNAVAILABLE"
	case classify.RateLimit, classify.Quota:
		rpc = "RESOURCE_EXHAUSTED"
	case classify.Auth:
		rpc = "UNAUTHENTICATED"
	case classify.Timeout:
		rpc = "DEADLINE_EXCEEDED"
	case classify.BadRequest, classify.ContextLength, classify.ContentFilter:
		rpc = "INVALID_ARGUMENT"
	case classify.ModelNotFound:
		rpc = "NOT_FOUND"
	}
	return status, shaped(status, rpc, msg)
}

// StatusBody is Gemini's answer to a refusal of status: PERMISSION_DENIED
// (403), NOT_FOUND (404), else INVALID_ARGUMENT, the status as code.
func (Format) StatusBody(status int, msg string) []byte {
	rpc := "INVALID_ARGUMENT"
	switch status {
	case http.StatusForbidden:
		rpc = "PERMISSION_DENIED"
	case http.StatusNotFound:
		rpc = "NOT_FOUND"
	}
	return shaped(status, rpc, msg)
}

func shaped(status int, rpc, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": rpc}})
	return b
}

// BusyBody is 503 UNAVAILABLE with the reason spillway_busy in its details.
func (Format) BusyBody(msg string) (int, []byte) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": http.StatusServiceUnavailable, "message": msg, "status": "UNAVAILABLE", "details": []any{map[string]any{"reason": "spillway_busy"}}}})
	return http.StatusServiceUnavailable, b
}

// StreamErrorFrame is a chunk of Gemini's error object (500 INTERNAL, or
// 503 UNAVAILABLE for capacity), as its SDKs read it.
func (Format) StreamErrorFrame(class classify.Class, msg string, _ wire.Responding) []byte {
	code, status := 500, "INTERNAL"
	if class == classify.Capacity {
		code, status = 503, "UNAVAILABLE"
	}
	return wire.SSE("", map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

// GiveUpFrame is StreamErrorFrame's.
func (f Format) GiveUpFrame(class classify.Class, msg string, r wire.Responding) []byte {
	return f.StreamErrorFrame(class, msg, r)
}

// GivesUpInStream is false: a give-up is an HTTP error in this format.
func (Format) GivesUpInStream() bool { return false }
