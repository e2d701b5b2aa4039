package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/spillway/spillway/redact"
	"io"
	"net/http"

	"github.com/spillway/spillway/classify"
)

// Error is a request spillway gave up on. errors.As finds the
// *classify.Failure (the last failure's verdict) in it, and errors.Is and
// errors.As reach the transport error when the last failure was one.
type Error struct {
	classify.Failure
	// Reason is the plan's account: the models tried, their classes, the
	// time waited and the last upstream message.
	Reason string
	// Route is what X-Spillway-Route says: "gpt-6-astra:capacity > …".
	Route string
	// Status is the last upstream answer's HTTP status; 0 when the last
	// failure was a transport error.
	Status int
	// Body is the last upstream answer's body (Call only).
	Body []byte
	// Err is the transport error, when the last failure was one.
	Err error
}

func (e *Error) Error() string {
	msg := e.Reason
	if msg == "" {
		msg = "spillway: " + e.Failure.Error()
	}
	if e.Route != "" {
		msg += " (route: " + e.Route + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return redact.String(msg)
}

// Unwrap returns the *classify.Failure and the transport error, if any.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{&e.Failure, e.Err}
	}
	return []error{&e.Failure}
}

// Call posts body as JSON to url through t and returns the answer's bytes
// (a whole event stream when the body asks for one). body is sent as is when
// it is a []byte or json.RawMessage, else marshalled. header is sent with
// the request (credentials, anthropic-version, …); Content-Type defaults to
// application/json. When spillway gives up, or the answer is not a 2xx,
// the error is an *Error (errors.As finds a *classify.Failure too) whose
// message names the class, the route and what the provider said.
func (t *Transport) Call(ctx context.Context, url string, header http.Header, body any) ([]byte, error) {
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case json.RawMessage:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("spillway: encoding the request: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("spillway: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, fail, err := t.roundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if fail != nil {
		fail.Body = b
		return nil, fail
	}
	if err != nil {
		return nil, fmt.Errorf("spillway: reading the answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// a request the transport does not manage, answered with an error
		v := classify.Classify(classify.Input{Status: resp.StatusCode, Header: resp.Header, Body: b})
		reason := fmt.Sprintf("spillway: %s: HTTP %d", v.Class, resp.StatusCode)
		if v.Message != "" {
			reason += "; upstream message: " + v.Message
		}
		return nil, &Error{Failure: classify.Failure{Verdict: v}, Reason: reason, Status: resp.StatusCode, Body: b}
	}
	return b, nil
}
