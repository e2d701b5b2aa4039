package bedrock

// The client's side of Bedrock's envelope: a Bedrock client (Claude Code
// with CLAUDE_CODE_USE_BEDROCK, aws-sdk-go-v2's bedrockruntime, the
// Anthropic SDKs' Bedrock clients) pointed at the gateway. Its request is
// read as the Messages request it stands for; the Messages answer the
// gateway makes goes back in Bedrock's envelope.

import (
	"errors"
	"net/http"
)

// ClientRequest is body, an InvokeModel request of a Bedrock client (a
// Messages body with anthropic_version, betas as anthropic_beta, no model,
// no stream), as the Messages request it stands for: "model" set to model
// and "stream" to stream (the path says both), anthropic_version and
// anthropic_beta taken out. betas are its anthropic_beta (nil when it has
// none): what the model is asked for (Claude Code keeps first-party betas
// in its anthropic-beta header, which Bedrock does not read). The other
// members keep their bytes and their order. A body that is not a JSON
// object is an error that says so.
func ClientRequest(body []byte, model string, stream bool) (messages []byte, betas []string, err error) {
	return nil, nil, errors.New("bedrock.ClientRequest: not yet")
}

// ClientCount is the Messages body of a Bedrock CountTokens request
// (POST /model/{id}/count-tokens: {"input": {"invokeModel": {"body":
// base64 of an InvokeModel body}}}), read as ClientRequest reads an
// InvokeModel body, without stream. A Converse input is refused (an error
// that says the gateway counts invokeModel inputs).
func ClientCount(body []byte, model string) (messages []byte, betas []string, err error) {
	return nil, nil, errors.New("bedrock.ClientCount: not yet")
}

// CountAnswer is a CountTokens answer for n input tokens: {"inputTokens": n}.
func CountAnswer(n int) []byte { return nil }

// Answer writes a Messages answer to a Bedrock client (w), in Bedrock's
// envelope, whatever the gateway writes through it:
//   - a stream (200, Content-Type text/event-stream) goes as an AWS event
//     stream (application/vnd.amazon.eventstream): each SSE event's data
//     one chunk (WriteChunk), an "error" event an exception message
//     (WriteException) typed by its error's type, SSE comments and pings
//     dropped (Bedrock's clients know no other event);
//   - a whole answer (2xx JSON) goes as it is (InvokeModel's answer is the
//     Messages answer);
//   - an error (status ≥ 400, a Messages error body
//     {"type":"error","error":{"type":T,"message":M}}, or any other body)
//     goes as Bedrock's: the status and x-amzn-errortype of the exception
//     that stands for T and the status (ErrorFor), body {"message": M}.
//     Other headers (Retry-After, X-Should-Retry, X-Spillway-*) are kept.
//
// Every buffer is bounded: an SSE event over the limit, or an error body
// over 1 MiB, ends the answer with an exception, never unbounded memory.
// It implements http.Flusher and Unwrap (http.ResponseController).
type Answer struct {
	w http.ResponseWriter
}

// NewAnswer makes w a Bedrock client's answer.
func NewAnswer(w http.ResponseWriter) *Answer { return &Answer{w: w} }

func (a *Answer) Header() http.Header         { return a.w.Header() }
func (a *Answer) WriteHeader(status int)      { a.w.WriteHeader(status) }
func (a *Answer) Write(b []byte) (int, error) { return a.w.Write(b) }

// Flush sends what is written so far (whole events) to the client.
func (a *Answer) Flush() {
	if f, ok := a.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is the client's response writer (http.ResponseController).
func (a *Answer) Unwrap() http.ResponseWriter { return a.w }

// Close ends the answer: a buffered error body goes out; a stream cut
// inside an event ends with an exception. The gateway calls it once its
// handler is done.
func (a *Answer) Close() error { return nil }

// ErrorFor is Bedrock's status and exception name (x-amzn-errortype) for a
// Messages error of type typ answered with status: overloaded_error (529)
// → 503 ServiceUnavailableException, rate_limit_error (429) → 429
// ThrottlingException, invalid_request_error and request_too_large → 400
// ValidationException, authentication_error and permission_error → 403
// AccessDeniedException, not_found_error → 404 ResourceNotFoundException,
// timeouts (408, 504) → 408 ModelTimeoutException, api_error and other 5xx
// → 500 InternalServerException (503 → ServiceUnavailableException).
func ErrorFor(status int, typ string) (int, string) { return status, "" }
