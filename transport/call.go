package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/policy"
)

// Error is a request spillway gave up on. errors.As finds the
// *classify.Failure (the last failure's verdict) in it, and errors.Is and
// errors.As reach the transport error when the last failure was one.
type Error struct {
	classify.Failure
	// Reason is the driver's account: the models tried, their classes, the
	// time waited and the last upstream message.
	Reason string
	// Route is what X-Spillway-Route says: "gpt-6-astra:capacity > …".
	Route string
	// Status is the HTTP status of the answer the caller got (the
	// upstream's own for a class no retry fixes, else spillway's); 0 when
	// there was none.
	Status int
	// Body is that answer's body.
	Body []byte
	// Err is the transport error, when the last failure was one.
	Err error
	// ParkUntil, for a Call with Park, is when to call again: every model
	// of the chain is at capacity. RungLeft, with CheckRung, is what will
	// be left of the rung then (pass it to the next call's CheckRung).
	ParkUntil time.Time
	RungLeft  time.Duration
	// NextRung is the rung the next call waits (Park's waited).
	NextRung int
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

// Answer is what Call returns.
type Answer struct {
	// Body is the answer's bytes (a whole event stream when the request
	// asked for one).
	Body []byte
	// Model is the model that answered; Route and Attempts say how it was
	// reached (X-Spillway-Route, X-Spillway-Attempts), RequestID names the
	// request in the event log.
	Model     string
	Route     string
	Attempts  int
	RequestID string
}

// CallOption changes one Call.
type CallOption func(*policy.Request)

// Park makes a Call return at once instead of sleeping when every model of
// the chain is at capacity: its *Error then has ParkUntil, when to call
// again, and the class capacity. ladder is the long-wait ladder; waited is
// how many of its rungs this work has already waited, so the next park
// waits ladder[waited] (the last rung repeats; a parked call never ends in
// a global outage). For job runners that have other work to do meanwhile.
func Park(ladder []time.Duration, waited int) CallOption {
	return func(r *policy.Request) { r.Ladder, r.Rung, r.Park = ladder, waited, true }
}

// UntilReset waits a plan's usage limit out: the call goes on at the
// limit's reset, or, with Park, returns an Error whose ParkUntil is the
// reset.
func UntilReset() CallOption {
	return func(r *policy.Request) { r.UntilReset = true }
}

// CheckRung, with Park, splits a rung longer than every into checks: the
// call parks for at most every at a time, and the first answer ends the
// rung early. left is what the previous call's Error.RungLeft said was
// left of its rung (0 to start a rung).
func CheckRung(every, left time.Duration) CallOption {
	return func(r *policy.Request) { r.CheckEvery, r.RungLeft = every, left }
}

// Call posts body as JSON to url through t and returns the answer (a whole
// event stream when the body asks for one). body is sent as is when it is
// a []byte or json.RawMessage, else marshalled. header is sent with the
// request (credentials, anthropic-version, …); Content-Type defaults to
// application/json. When spillway gives up, the answer is not a 2xx, or a
// stream breaks, the error is an *Error (errors.As finds a
// *classify.Failure too) whose message names the class, the route and what
// the provider said.
func (t *Transport) Call(ctx context.Context, url string, header http.Header, body any, opts ...CallOption) (*Answer, error) {
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case json.RawMessage:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("transport: encoding the request: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	var park policy.Request
	for _, o := range opts {
		o(&park)
	}
	resp, out, err := t.roundTrip(req, park)
	if err != nil {
		return nil, err
	}
	if out != nil && !out.ParkUntil.IsZero() {
		return nil, &Error{Failure: classify.Failure{Verdict: out.Verdict}, Reason: "spillway: " + out.Reason, Route: out.Route, ParkUntil: out.ParkUntil, RungLeft: out.RungLeft, NextRung: out.NextRung}
	}
	defer resp.Body.Close()
	// the answer is read whole: at most what a request may hold
	// (gateway.max_body_mb), as every answer the library keeps
	most := t.perRequest()
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, most+1))
	if int64(len(b)) > most {
		b, rerr = nil, &classify.Failure{Verdict: classify.Verdict{Class: classify.ServerError, Code: classify.TooLarge,
			Message: fmt.Sprintf("the answer is more than %d MiB, %s (gateway.max_body_mb)", most>>20, classify.TooLargePhrase)}}
	}
	switch {
	case out != nil && out.Failed():
		e := &Error{Failure: classify.Failure{Verdict: out.Verdict}, Reason: out.Reason, Route: out.Route, Status: resp.StatusCode, Body: b}
		e.Err, _ = out.Result.Detail.(error)
		return nil, e
	case rerr != nil:
		var f *classify.Failure
		v := classify.Err(rerr)
		if errors.As(rerr, &f) {
			v = f.Verdict
		}
		return nil, &Error{Failure: classify.Failure{Verdict: v}, Reason: "spillway: the answer broke: " + rerr.Error(),
			Route: resp.Header.Get("X-Spillway-Route"), Status: resp.StatusCode, Body: b, Err: rerr}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		// a request the transport does not manage, answered with an error
		v := classify.Classify(classify.Input{Status: resp.StatusCode, Header: resp.Header, Body: b})
		reason := fmt.Sprintf("spillway: %s: HTTP %d", v.Class, resp.StatusCode)
		if v.Message != "" {
			reason += "; upstream message: " + v.Message
		}
		return nil, &Error{Failure: classify.Failure{Verdict: v}, Reason: reason, Status: resp.StatusCode, Body: b}
	}
	a := &Answer{Body: b, Model: resp.Header.Get("X-Spillway-Model")}
	if out != nil {
		a.Route, a.Attempts, a.RequestID = out.Route, out.Attempts, out.ID
	}
	return a, nil
}
