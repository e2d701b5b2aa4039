package vertex

// The client's side of Vertex AI's envelope: a client of Anthropic's
// models on Vertex AI (Claude Code with CLAUDE_CODE_USE_VERTEX, the
// Anthropic SDKs' Vertex clients) pointed at the gateway.

import (
	"net/http"
	"strconv"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/jsonw"
)

// ClientRequest is body, a rawPredict or streamRawPredict request (a
// Messages body with anthropic_version vertex-…, no model; the SDKs send
// stream too), as the Messages request it stands for: "model" set to
// model, "stream" to stream (the method says it; a body's own are
// replaced), anthropic_version taken out. Betas stay in the request's
// anthropic-beta header, as Vertex AI's clients send them. The other
// members keep their bytes and order; model and stream come last. A body
// that is not a JSON object is an error that says so (wire.ErrNotObject).
func ClientRequest(body []byte, model string, stream bool) ([]byte, error) {
	return format.Reshape(body, []string{"anthropic_version", "model", "stream"},
		format.Member{Name: "model", Value: jsonw.String(nil, model, false)},
		format.Member{Name: "stream", Value: strconv.AppendBool(nil, stream)})
}

// ClientCount is the Messages body of a count-tokens rawPredict request
// (its model in the body, anthropic_version), with model set to model
// (last) and anthropic_version taken out; the rest as it is.
func ClientCount(body []byte, model string) ([]byte, error) {
	return format.Reshape(body, []string{"anthropic_version", "model"},
		format.Member{Name: "model", Value: jsonw.String(nil, model, false)})
}

// Answer writes a Messages answer to a Vertex AI client (w): a stream and
// a whole answer go as they are (Vertex AI passes Anthropic's own on, its
// error events too); an error (status ≥ 400, a Messages error body, or
// any other) is held until Close or a Flush, then goes in Google's shape,
// {"error": {"code": S, "message": M, "status": "RESOURCE_EXHAUSTED"}},
// with the status S and name ErrorFor gives (M the Messages error's
// message, or a short text of another body). Other headers are kept;
// Content-Type and Content-Length are its. Buffers are bounded (an error
// body past format.MaxErrorBody is cut). It implements http.Flusher,
// FlushError and Unwrap (http.ResponseController).
type Answer struct {
	w       http.ResponseWriter
	decided bool
	held    format.HeldError
	err     error
}

// NewAnswer makes w a Vertex AI client's answer.
func NewAnswer(w http.ResponseWriter) *Answer { return &Answer{w: w} }

// Header is the answer's header, w's.
func (a *Answer) Header() http.Header { return a.w.Header() }

// WriteHeader writes status, unless it is an error's (≥ 400), which is
// held until Close or Flush. A second call is ignored; an informational
// status (1xx) goes as it is.
func (a *Answer) WriteHeader(status int) {
	if a.decided {
		return
	}
	if status < 200 {
		a.w.WriteHeader(status)
		return
	}
	a.decided = true
	if status >= 400 {
		a.held.Hold(status)
		return
	}
	a.w.WriteHeader(status)
}

// Write writes b, or holds it when the answer is an error.
func (a *Answer) Write(b []byte) (int, error) {
	if !a.decided {
		a.WriteHeader(http.StatusOK)
	}
	if a.err != nil {
		return 0, a.err
	}
	if a.held.Held() {
		a.held.Write(b)
		return len(b), nil
	}
	n, err := a.w.Write(b)
	return n, a.keep(err)
}

// Flush sends what is written so far to the client; a held error goes
// out whole.
func (a *Answer) Flush() { _ = a.FlushError() }

// FlushError is Flush, with what the client's writer said (an
// http.ResponseController calls it).
func (a *Answer) FlushError() error {
	if !a.decided {
		a.WriteHeader(http.StatusOK) // as net/http's Flush does
	}
	if err := a.sendError(); err != nil {
		return err
	}
	return http.NewResponseController(a.w).Flush()
}

// Unwrap is the client's response writer (http.ResponseController).
func (a *Answer) Unwrap() http.ResponseWriter { return a.w }

// Close ends the answer: a held error goes out.
func (a *Answer) Close() error { return a.sendError() }

// sendError writes the held error out, in Google's shape (once); nothing
// when the answer is none.
func (a *Answer) sendError() error { return a.keep(a.held.Send(a.w, errorAnswer)) }

// keep is err, the client's writer's, kept (when not nil) for Write to
// return again.
func (a *Answer) keep(err error) error {
	if err != nil {
		a.err = err
	}
	return err
}

// errorAnswer is Google's error answer (format.ErrorShape): ErrorFor's
// status and name, body {"error": {"code": S, "message": msg, "status":
// name}}.
func errorAnswer(h http.Header, status int, typ, msg string) (int, []byte) {
	status, name := ErrorFor(status, typ)
	out := append(strconv.AppendInt([]byte(`{"error":{"code":`), int64(status), 10), `,"message":`...)
	out = jsonw.String(out, msg, false)
	out = append(jsonw.String(append(out, `,"status":`...), name, false), "}}"...)
	h.Set("Content-Type", "application/json; charset=UTF-8")
	return status, out
}

// ErrorFor is Vertex AI's status and Google status name for a Messages
// error of type typ answered with status: overloaded_error,
// rate_limit_error and billing_error → 429 RESOURCE_EXHAUSTED, invalid_request_error and
// request_too_large → 400 INVALID_ARGUMENT, authentication_error → 401
// UNAUTHENTICATED, permission_error → 403 PERMISSION_DENIED,
// not_found_error → 404 NOT_FOUND, timeout_error → 504
// DEADLINE_EXCEEDED, api_error → 500 INTERNAL. Any other type goes by
// status: 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND, 409
// ABORTED, 429 and 529 → 429 RESOURCE_EXHAUSTED, timeouts (408, 504) →
// 504 DEADLINE_EXCEEDED, other 4xx → 400 INVALID_ARGUMENT, 503 →
// UNAVAILABLE, other 5xx → 500 INTERNAL. A status below 400 is no error:
// it stays, with no name.
func ErrorFor(status int, typ string) (int, string) {
	switch typ {
	case "overloaded_error", "rate_limit_error", "billing_error":
		return http.StatusTooManyRequests, "RESOURCE_EXHAUSTED" // (Google's quota status too)
	case "invalid_request_error", "request_too_large":
		return http.StatusBadRequest, "INVALID_ARGUMENT"
	case "authentication_error":
		return http.StatusUnauthorized, "UNAUTHENTICATED"
	case "permission_error":
		return http.StatusForbidden, "PERMISSION_DENIED"
	case "not_found_error":
		return http.StatusNotFound, "NOT_FOUND"
	case "timeout_error":
		return http.StatusGatewayTimeout, "DEADLINE_EXCEEDED"
	case "api_error":
		return http.StatusInternalServerError, "INTERNAL"
	}
	switch {
	case status < 400:
		return status, ""
	case status == http.StatusUnauthorized:
		return status, "UNAUTHENTICATED"
	case status == http.StatusForbidden:
		return status, "PERMISSION_DENIED"
	case status == http.StatusNotFound:
		return status, "NOT_FOUND"
	case status == http.StatusConflict:
		return status, "ABORTED"
	case status == http.StatusTooManyRequests, status == 529:
		return http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return http.StatusGatewayTimeout, "DEADLINE_EXCEEDED"
	case status < 500:
		return http.StatusBadRequest, "INVALID_ARGUMENT"
	case status == http.StatusServiceUnavailable:
		return status, "UNAVAILABLE"
	}
	return http.StatusInternalServerError, "INTERNAL"
}
