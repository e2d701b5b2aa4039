package wire

import (
	"encoding/json"
	"net/http"

	"github.com/spillway/spillway/classify"
)

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
