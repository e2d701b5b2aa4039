package messages

import (
	"encoding/json"
	"net/http"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/wire"
)

// ErrorBody is Anthropic's error for a failure of class spillway reports:
// {"type": "error", "error": {type, message}}; capacity is 529
// overloaded_error, as Anthropic answers it.
func (Format) ErrorBody(class classify.Class, msg string) (int, []byte) {
	status, typ := wire.ErrorStatus(class), "api_error"
	switch class {
	case classify.Capacity:
		status, typ = 529, "overloaded_error"
	case classify.RateLimit:
		typ = "rate_limit_error"
	case classify.Quota:
		typ = "billing_error"
	case classify.Auth:
		typ = "authentication_error"
	case classify.Timeout:
		typ = "timeout_error"
	case classify.BadRequest, classify.ContextLength, classify.ContentFilter:
		typ = "invalid_request_error"
	case classify.ModelNotFound:
		typ = "not_found_error"
	}
	return status, shaped(typ, msg)
}

// StatusBody is Anthropic's answer to a refusal of status:
// permission_error (403), not_found_error (404), else
// invalid_request_error.
func (Format) StatusBody(status int, msg string) []byte {
	typ := "invalid_request_error"
	switch status {
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	}
	return shaped(typ, msg)
}

// BusyBody is 503 with the error type spillway_busy.
func (Format) BusyBody(msg string) (int, []byte) {
	return http.StatusServiceUnavailable, shaped("spillway_busy", msg)
}

func shaped(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	return b
}

// StreamErrorFrame is Messages' "event: error" (overloaded_error for
// capacity, else api_error), as its SDKs read it.
func (Format) StreamErrorFrame(class classify.Class, msg string, _ wire.Responding) []byte {
	t := "api_error"
	if class == classify.Capacity {
		t = "overloaded_error"
	}
	return wire.SSE("error", map[string]any{"type": "error", "error": map[string]any{"type": t, "message": msg}})
}

// GiveUpFrame is StreamErrorFrame's.
func (f Format) GiveUpFrame(class classify.Class, msg string, r wire.Responding) []byte {
	return f.StreamErrorFrame(class, msg, r)
}

// GivesUpInStream is false: a give-up is an HTTP error in this format.
func (Format) GivesUpInStream() bool { return false }
