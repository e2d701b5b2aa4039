package vertex

// The client's side of Vertex AI's envelope: a client of Anthropic's
// models on Vertex AI (Claude Code with CLAUDE_CODE_USE_VERTEX, the
// Anthropic SDKs' Vertex clients) pointed at the gateway.

import (
	"errors"
	"net/http"
)

// ClientRequest is body, a rawPredict or streamRawPredict request (a
// Messages body with anthropic_version vertex-…, no model; the SDKs send
// stream too), as the Messages request it stands for: "model" set to
// model, "stream" to stream (the method says it), anthropic_version taken
// out. Betas stay in the request's anthropic-beta header, as Vertex AI's
// clients send them. The other members keep their bytes and order.
func ClientRequest(body []byte, model string, stream bool) ([]byte, error) {
	return nil, errors.New("vertex.ClientRequest: not yet")
}

// ClientCount is the Messages body of a count-tokens rawPredict request
// (its model in the body, anthropic_version), with model set to model.
func ClientCount(body []byte, model string) ([]byte, error) {
	return nil, errors.New("vertex.ClientCount: not yet")
}

// Answer writes a Messages answer to a Vertex AI client (w): a stream and
// a whole answer go as they are (Vertex AI passes Anthropic's own on); an
// error (status ≥ 400, a Messages error body) goes in Google's shape,
// {"error": {"code": status, "message": M, "status": "RESOURCE_EXHAUSTED"}},
// with the status ErrorFor gives. Other headers are kept. Buffers are
// bounded (an error body over 1 MiB is cut). It implements http.Flusher
// and Unwrap.
type Answer struct {
	w http.ResponseWriter
}

// NewAnswer makes w a Vertex AI client's answer.
func NewAnswer(w http.ResponseWriter) *Answer { return &Answer{w: w} }

func (a *Answer) Header() http.Header         { return a.w.Header() }
func (a *Answer) WriteHeader(status int)      { a.w.WriteHeader(status) }
func (a *Answer) Write(b []byte) (int, error) { return a.w.Write(b) }

// Flush sends what is written so far to the client.
func (a *Answer) Flush() {
	if f, ok := a.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is the client's response writer (http.ResponseController).
func (a *Answer) Unwrap() http.ResponseWriter { return a.w }

// Close ends the answer: a buffered error body goes out.
func (a *Answer) Close() error { return nil }

// ErrorFor is Vertex AI's status and Google status name for a Messages
// error of type typ answered with status: overloaded_error and
// rate_limit_error → 429 RESOURCE_EXHAUSTED, invalid_request_error and
// request_too_large → 400 INVALID_ARGUMENT, authentication_error → 401
// UNAUTHENTICATED, permission_error → 403 PERMISSION_DENIED,
// not_found_error → 404 NOT_FOUND, timeouts → 504 DEADLINE_EXCEEDED,
// 503 → UNAVAILABLE, other 5xx → 500 INTERNAL.
func ErrorFor(status int, typ string) (int, string) { return status, "" }
