package bedrock

// The client's side of Bedrock's envelope: a Bedrock client (Claude Code
// with CLAUDE_CODE_USE_BEDROCK, aws-sdk-go-v2's bedrockruntime, the
// Anthropic SDKs' Bedrock clients) pointed at the gateway. Its request is
// read as the Messages request it stands for; the Messages answer the
// gateway makes goes back in Bedrock's envelope.

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/jsonw"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// ClientRequest is body, an InvokeModel request of a Bedrock client (a
// Messages body with anthropic_version, betas as anthropic_beta, no model,
// no stream), as the Messages request it stands for: "model" set to model
// and "stream" to stream (the path says both; a body's own are replaced),
// anthropic_version and anthropic_beta taken out. betas are its
// anthropic_beta (nil when it has none or it is null): what the model is
// asked for (Claude Code keeps first-party betas in its anthropic-beta
// header, which Bedrock does not read). The other members keep their bytes
// and their order; model and stream come last. A body that is not a JSON
// object is an error that says so (wire.ErrNotObject), and so is an
// anthropic_beta that is not an array of strings.
func ClientRequest(body []byte, model string, stream bool) (messages []byte, betas []string, err error) {
	return clientRequest(body, model, strconv.AppendBool(nil, stream))
}

// clientRequest is ClientRequest's, with stream the raw value of "stream"
// (nil: none).
func clientRequest(body []byte, model string, stream []byte) ([]byte, []string, error) {
	add := []format.Member{{Name: "model", Value: jsonw.String(nil, model, false)}}
	if stream != nil {
		add = append(add, format.Member{Name: "stream", Value: stream})
	}
	out, err := format.Reshape(body, []string{"anthropic_version", "anthropic_beta", "model", "stream"}, add...)
	if err != nil {
		return nil, nil, err
	}
	betas, err := bodyBetas(body) // (body is a JSON object: Reshape read it)
	if err != nil {
		return nil, nil, err
	}
	return out, betas, nil
}

// bodyBetas is the anthropic_beta of body, a JSON object (the last one,
// as a JSON reader takes it, when it has several): nil for none or null.
func bodyBetas(body []byte) ([]string, error) {
	w := wire.NewWalker(body)
	var betas []string
	var bad string
	for name := range w.Fields() {
		if string(name) != "anthropic_beta" {
			w.Skip()
			continue
		}
		betas, bad = nil, ""
		switch w.Peek() {
		case 'n':
			w.Skip()
			continue
		case '[':
		default:
			bad = kind(w.Peek())
			w.Skip()
			continue
		}
		for i := range w.Elems() {
			if w.Peek() != '"' {
				if bad == "" {
					bad = fmt.Sprintf("its element %d is %s", i, kind(w.Peek()))
				}
				w.Skip()
				continue
			}
			betas = append(betas, string(w.Text()))
		}
	}
	if w.Err() != nil { // (Reshape read it whole: not expected)
		return nil, fmt.Errorf("%w (%v)", wire.ErrNotObject, w.Err())
	}
	if bad != "" {
		return nil, fmt.Errorf(`the request body's anthropic_beta is not an array of strings (%s): Bedrock's betas are "anthropic_beta": ["name", ...]`, bad)
	}
	return betas, nil
}

// kind is what a JSON value starting with c is, in words.
func kind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// ClientCount is the Messages body of a Bedrock CountTokens request
// (POST /model/{id}/count-tokens: {"input": {"invokeModel": {"body":
// base64 of an InvokeModel body}}}), read as ClientRequest reads an
// InvokeModel body, without stream (a body's own is taken out). A Converse
// input is refused (an error that says the gateway counts invokeModel
// inputs only), and so is any other shape, with an error that says which.
// The decoded body is smaller than body, which the gateway bounds.
func ClientCount(body []byte, model string) (messages []byte, betas []string, err error) {
	var in struct {
		Input *struct {
			InvokeModel *struct {
				Body []byte `json:"body"` // base64
			} `json:"invokeModel"`
			Converse jsontext.Value `json:"converse"`
		} `json:"input"`
	}
	const shape = `{"input": {"invokeModel": {"body": "<an InvokeModel body, base64>"}}}`
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, nil, fmt.Errorf("a CountTokens request body is %s: %v", shape, shortErr(err))
	}
	switch {
	case in.Input == nil:
		return nil, nil, fmt.Errorf("a CountTokens request body is %s: this one has no input", shape)
	case in.Input.Converse != nil && in.Input.InvokeModel == nil:
		return nil, nil, errors.New("spillway counts the tokens of invokeModel inputs only, not converse ones: send {\"input\": {\"invokeModel\": {\"body\": \"<base64>\"}}}")
	case in.Input.InvokeModel == nil || in.Input.InvokeModel.Body == nil:
		return nil, nil, fmt.Errorf("a CountTokens request body is %s: this one has no input.invokeModel.body", shape)
	}
	return clientRequest(in.Input.InvokeModel.Body, model, nil)
}

// shortErr is err's text, at most a line.
func shortErr(err error) string {
	return format.Cut(strings.ReplaceAll(err.Error(), "\n", " "), 200)
}

// CountAnswer is a CountTokens answer for n input tokens: {"inputTokens": n}.
func CountAnswer(n int) []byte {
	return append(strconv.AppendInt([]byte(`{"inputTokens":`), int64(n), 10), '}')
}

// Answer writes a Messages answer to a Bedrock client (w), in Bedrock's
// envelope, whatever the gateway writes through it:
//   - a stream (2xx, Content-Type text/event-stream) goes as an AWS event
//     stream (Content-Type application/vnd.amazon.eventstream, its
//     Content-Length and Content-Encoding dropped): each SSE event's data
//     one chunk (WriteChunk), an "error" event an exception message
//     (WriteException, StreamException's type, the error's message) that
//     ends the stream, SSE comments and pings dropped (Bedrock's clients
//     know no other event). Events may come several in a write, or split
//     across writes;
//   - a whole answer (any other 2xx) goes as it is (InvokeModel's answer
//     is the Messages answer);
//   - an error (status ≥ 400, a Messages error body
//     {"type":"error","error":{"type":T,"message":M}}, or any other body)
//     is held until Close or a Flush, then goes as Bedrock's: the status
//     and x-amzn-errortype of the exception that stands for T and the
//     status (ErrorFor), body {"message": M} (for another body, a short
//     text of it). Other headers (Retry-After, X-Should-Retry,
//     X-Spillway-*) are kept; Content-Type and Content-Length are its.
//
// Every buffer is bounded: an SSE event over sse.DefaultMaxFrame ends the
// stream with an internalServerException (and Write returns an error); an
// error body past format.MaxErrorBody is cut. A stream that ends (Close)
// inside an event ends with an internalServerException that says so. It
// implements http.Flusher, FlushError and Unwrap (http.ResponseController).
// One goroutine writes through it, as through any http.ResponseWriter.
type Answer struct {
	w        http.ResponseWriter
	mode     mode
	maxEvent int   // the largest SSE event a stream may hold
	err      error // what ended the answer for its writer, returned again
	closed   bool

	// a stream
	pending []byte   // the bytes of the event being read (its lines so far)
	scan    int      // where pending's next line starts
	data    []byte   // an event's data when it has several lines
	ended   bool     // an exception went out: the client reads no more
	enc     *Encoder // made with the stream's first message, its buffers kept

	held format.HeldError // an error
}

// mode is what an Answer makes of what is written through it.
type mode int

const (
	undecided mode = iota // no status yet
	passing               // as it is
	streaming             // SSE into an event stream
	failing               // an error, held
)

// NewAnswer makes w a Bedrock client's answer.
func NewAnswer(w http.ResponseWriter) *Answer {
	return &Answer{w: w, maxEvent: sse.DefaultMaxFrame}
}

// Header is the answer's header, w's: what the gateway sets goes out,
// re-shaped as its status says.
func (a *Answer) Header() http.Header { return a.w.Header() }

// WriteHeader decides what the answer is: a stream, a whole answer, or
// an error (held: nothing goes to w until Close or Flush). A second call
// is ignored; an informational status (1xx) goes as it is.
func (a *Answer) WriteHeader(status int) {
	if a.mode != undecided {
		return
	}
	h := a.w.Header()
	switch {
	case status < 200:
		a.w.WriteHeader(status)
		return
	case status >= 400:
		a.mode = failing
		a.held.Hold(status)
		return
	case status < 300 && isSSE(h.Get("Content-Type")):
		a.mode = streaming
		h.Set("Content-Type", ContentType)
		h.Set("X-Amzn-Bedrock-Content-Type", "application/json")
		h.Del("Content-Length")
		h.Del("Content-Encoding")
	default:
		a.mode = passing
	}
	a.w.WriteHeader(status)
}

// isSSE reports whether ct is an event stream's content type.
func isSSE(ct string) bool {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(ct), "text/event-stream")
}

// Write writes b, as the answer's status says (WriteHeader; 200 when it
// has none yet).
func (a *Answer) Write(b []byte) (int, error) {
	if a.mode == undecided {
		a.WriteHeader(http.StatusOK)
	}
	if a.err != nil {
		return 0, a.err
	}
	switch a.mode {
	case streaming:
		return a.stream(b)
	case failing:
		a.held.Write(b)
		return len(b), nil
	}
	n, err := a.w.Write(b)
	if err != nil {
		a.err = err
	}
	return n, err
}

// ErrEventTooLarge is what Write returns once an event of a stream was
// larger than the answer holds: the stream ended there, with an exception.
var ErrEventTooLarge = errors.New("bedrock: an event of the answer's stream is too large to re-envelope; the stream was ended with an exception")

// stream takes in b, bytes of an SSE stream, writing each whole event
// out as the client's.
func (a *Answer) stream(b []byte) (int, error) {
	if a.ended {
		return len(b), nil // the client reads no more: what follows is dropped
	}
	n := len(b)
	for len(b) > 0 {
		take := min(len(b), max(0, a.maxEvent-len(a.pending)))
		if take == 0 { // an event past maxEvent: never held whole
			return n, a.tooLarge()
		}
		a.pending = append(a.pending, b[:take]...)
		b = b[take:]
		if err := a.events(); err != nil {
			a.err = err
			return n, err
		}
		if a.ended {
			return n, nil
		}
	}
	if len(a.pending) >= a.maxEvent {
		return n, a.tooLarge()
	}
	return n, nil
}

// tooLarge ends the stream: an event is past maxEvent.
func (a *Answer) tooLarge() error {
	a.pending, a.scan = nil, 0
	a.ended = true
	msg := fmt.Sprintf("spillway: an event of the answer is larger than %d MiB; the stream ends here", a.maxEvent>>20)
	if a.maxEvent < 1<<20 {
		msg = fmt.Sprintf("spillway: an event of the answer is larger than %d bytes; the stream ends here", a.maxEvent)
	}
	if err := a.encoder().Exception(a.w, "internalServerException", msg); err != nil {
		a.err = err
		return err
	}
	a.err = ErrEventTooLarge
	return a.err
}

// events writes out each whole event in pending (one ends at a blank
// line), keeping what follows the last.
func (a *Answer) events() error {
	start := 0 // where the event being read starts in pending
	for !a.ended {
		i := bytes.IndexByte(a.pending[a.scan:], '\n')
		if i < 0 {
			break
		}
		line := a.pending[a.scan : a.scan+i]
		a.scan += i + 1
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			continue
		}
		if err := a.event(a.pending[start:a.scan]); err != nil {
			return err
		}
		start = a.scan
	}
	if start > 0 {
		a.pending = a.pending[:copy(a.pending, a.pending[start:])]
		a.scan -= start
		if cap(a.pending) > keepBuffer && len(a.pending) <= keepBuffer {
			a.pending = append(make([]byte, 0, keepBuffer), a.pending...)
		}
	}
	return nil
}

// sseEvent is one SSE event's fields: its name, its data (its data lines
// joined by "\n"), and whether it has a field at all (no: only comments).
type sseEvent struct {
	name, data []byte
	hasData    bool
	hasField   bool
}

// parse is ev's fields, ev being an event's lines (a partial one too);
// data on several lines is joined in a.data.
func (a *Answer) parse(ev []byte) sseEvent {
	var e sseEvent
	lines := 0
	for len(ev) > 0 {
		line, rest, _ := bytes.Cut(ev, []byte{'\n'})
		ev = rest
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		e.hasField = true
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "event":
			e.name = value
		case "data":
			switch lines {
			case 0:
				e.data = value
			case 1:
				a.data = append(append(append(a.data[:0], e.data...), '\n'), value...)
				e.data = a.data
			default:
				a.data = append(append(a.data, '\n'), value...)
				e.data = a.data
			}
			lines++
			e.hasData = true
		}
	}
	if cap(a.data) > keepBuffer {
		defer func() { a.data = nil }() // (e.data stays valid for its caller)
	}
	return e
}

// event writes out ev, one whole SSE event, as the client's: a chunk, an
// exception, or nothing.
func (a *Answer) event(ev []byte) error {
	e := a.parse(ev)
	switch {
	case string(e.name) == "ping", !e.hasData && string(e.name) != "error":
		return nil // a ping, a comment, an event with nothing to carry
	case string(e.name) == "error":
		typ, msg := format.ErrorOf(http.StatusInternalServerError, e.data)
		a.ended = true
		return a.encoder().Exception(a.w, StreamException(typ), msg)
	}
	return a.encoder().Chunk(a.w, e.data)
}

// encoder is the stream's Encoder.
func (a *Answer) encoder() *Encoder {
	if a.enc == nil {
		a.enc = NewEncoder()
	}
	return a.enc
}

// Flush sends what is written so far (whole events) to the client; a held
// error goes out whole.
func (a *Answer) Flush() { _ = a.FlushError() }

// FlushError is Flush, with what the client's writer said (an
// http.ResponseController calls it).
func (a *Answer) FlushError() error {
	if a.mode == undecided {
		a.WriteHeader(http.StatusOK) // as net/http's Flush does
	}
	if a.mode == failing {
		if err := a.sendError(); err != nil {
			return err
		}
	}
	return http.NewResponseController(a.w).Flush()
}

// Unwrap is the client's response writer (http.ResponseController).
func (a *Answer) Unwrap() http.ResponseWriter { return a.w }

// Close ends the answer: a held error goes out; a stream cut inside an
// event ends with an internalServerException that says so. The gateway
// calls it once its handler is done; a second Close does nothing.
func (a *Answer) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	switch a.mode {
	case failing:
		return a.sendError()
	case streaming:
		if a.ended || a.err != nil {
			return nil
		}
		e := a.parse(a.pending)
		a.pending, a.scan = nil, 0
		if !e.hasField {
			return nil
		}
		a.ended = true
		return a.encoder().Exception(a.w, "internalServerException", "spillway: the answer's stream ended in the middle of an event")
	}
	return nil
}

// sendError writes the held error out, in Bedrock's shape (once).
func (a *Answer) sendError() error {
	if err := a.held.Send(a.w, errorAnswer); err != nil {
		a.err = err
		return err
	}
	return nil
}

// errorAnswer is Bedrock's error answer (format.ErrorShape): ErrorFor's
// status and x-amzn-errortype, body {"message": msg}.
func errorAnswer(h http.Header, status int, typ, msg string) (int, []byte) {
	status, name := ErrorFor(status, typ)
	h.Set("Content-Type", "application/json")
	h.Set("X-Amzn-Errortype", name)
	return status, append(jsonw.String([]byte(`{"message":`), msg, false), '}')
}

// exceptions are the statuses of Bedrock's exceptions (x-amzn-errortype,
// as a Messages error event's type names one when the gateway relays
// Bedrock's own, Reader's).
var exceptions = map[string]int{
	"AccessDeniedException":         http.StatusForbidden,
	"ConflictException":             http.StatusBadRequest,
	"InternalServerException":       http.StatusInternalServerError,
	"ModelErrorException":           http.StatusFailedDependency,
	"ModelNotReadyException":        http.StatusTooManyRequests,
	"ModelStreamErrorException":     http.StatusFailedDependency,
	"ModelTimeoutException":         http.StatusRequestTimeout,
	"ResourceNotFoundException":     http.StatusNotFound,
	"ServiceQuotaExceededException": http.StatusBadRequest,
	"ServiceUnavailableException":   http.StatusServiceUnavailable,
	"ThrottlingException":           http.StatusTooManyRequests,
	"ValidationException":           http.StatusBadRequest,
}

// ErrorFor is Bedrock's status and exception name (x-amzn-errortype) for a
// Messages error of type typ answered with status: overloaded_error (529)
// → 503 ServiceUnavailableException, rate_limit_error and billing_error
// → 429 ThrottlingException, invalid_request_error and request_too_large → 400
// ValidationException, authentication_error and permission_error → 403
// AccessDeniedException, not_found_error → 404 ResourceNotFoundException,
// timeout_error → 408 ModelTimeoutException, api_error → 500
// InternalServerException. A type that is one of Bedrock's exceptions
// (ThrottlingException) stays, with its status. Any other type goes by
// status: 400, 413, 422 and other 4xx → 400 ValidationException, 401 and
// 403 → 403 AccessDeniedException, 404 → 404 ResourceNotFoundException,
// timeouts (408, 504) → 408 ModelTimeoutException, 429 → 429
// ThrottlingException, 503 and 529 → 503
// ServiceUnavailableException, other 5xx → 500 InternalServerException.
// A status below 400 is no error: it stays, with no name.
func ErrorFor(status int, typ string) (int, string) {
	switch typ {
	case "overloaded_error":
		return http.StatusServiceUnavailable, "ServiceUnavailableException"
	case "rate_limit_error", "billing_error":
		// (a quota's: Bedrock's throttling, as a stream ends with it too;
		// X-Should-Retry: false says not to retry)
		return http.StatusTooManyRequests, "ThrottlingException"
	case "invalid_request_error", "request_too_large":
		return http.StatusBadRequest, "ValidationException"
	case "authentication_error", "permission_error":
		return http.StatusForbidden, "AccessDeniedException"
	case "not_found_error":
		return http.StatusNotFound, "ResourceNotFoundException"
	case "timeout_error":
		return http.StatusRequestTimeout, "ModelTimeoutException"
	case "api_error":
		return http.StatusInternalServerError, "InternalServerException"
	}
	if s, ok := exceptions[typ]; ok {
		return s, typ
	}
	switch {
	case status < 400:
		return status, ""
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return http.StatusForbidden, "AccessDeniedException"
	case status == http.StatusNotFound:
		return http.StatusNotFound, "ResourceNotFoundException"
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return http.StatusRequestTimeout, "ModelTimeoutException"
	case status == http.StatusTooManyRequests:
		return http.StatusTooManyRequests, "ThrottlingException"
	case status == http.StatusServiceUnavailable, status == 529:
		return http.StatusServiceUnavailable, "ServiceUnavailableException"
	case status < 500:
		return http.StatusBadRequest, "ValidationException"
	}
	return http.StatusInternalServerError, "InternalServerException"
}

// streamExceptions are the exceptions a Bedrock stream may end with
// (InvokeModelWithResponseStream's ResponseStream members), as an
// exception message's :exception-type names them.
var streamExceptions = []string{
	"internalServerException", "modelStreamErrorException", "validationException",
	"throttlingException", "modelTimeoutException", "serviceUnavailableException",
}

// StreamException is the exception type (:exception-type) a Bedrock
// stream ends with for a Messages error event of type typ:
// overloaded_error (and spillway_busy) → serviceUnavailableException,
// rate_limit_error and billing_error → throttlingException,
// invalid_request_error and request_too_large → validationException,
// timeout_error → modelTimeoutException, api_error →
// modelStreamErrorException (the model's failure, as Bedrock passes it
// on). A type that names one of the stream's exceptions as ErrorType
// writes it (ThrottlingException, from Reader) is that one again; any
// other is internalServerException.
func StreamException(typ string) string {
	switch typ {
	case "overloaded_error", "spillway_busy":
		return "serviceUnavailableException"
	case "rate_limit_error", "billing_error":
		return "throttlingException"
	case "invalid_request_error", "request_too_large":
		return "validationException"
	case "timeout_error":
		return "modelTimeoutException"
	case "api_error":
		return "modelStreamErrorException"
	}
	if typ != "" {
		lower := strings.ToLower(typ[:1]) + typ[1:]
		if slices.Contains(streamExceptions, lower) {
			return lower
		}
	}
	return "internalServerException"
}
