package send

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// Failure is an upstream answer that was not a success, kept so that it can
// be passed on when the driver gives up on a class no retry can fix.
type Failure struct {
	Status int
	Header http.Header
	Body   []byte
}

// GiveUp is the answer for a request the driver gave up on: for a class no
// retry can fix, the upstream's own answer (the most precise account of what
// is wrong with the key or the request); otherwise the provider-shaped error
// of ep's format with a message naming the models tried, their classes and
// the time waited. Either way it asks SDKs not to retry (the retries were
// spent).
func GiveUp(ep wire.Endpoint, out policy.Outcome) (status int, h http.Header, body []byte) {
	h = http.Header{}
	if f, ok := out.Result.Detail.(*Failure); ok && policy.FailFast(out.Verdict.Class) {
		wire.CopyHeaders(h, f.Header)
		h.Set("X-Should-Retry", "false")
		return f.Status, h, f.Body
	}
	status, body = formats.WireOf(ep).ErrorBody(out.Verdict.Class, out.Reason)
	if out.Verdict.Wait > 0 {
		h.Set("Retry-After", strconv.Itoa(int(out.Verdict.Wait.Seconds()+0.999)))
	}
	h.Set("X-Should-Retry", "false")
	h.Set("Content-Type", "application/json")
	return status, h, body
}

// SetRoute sets X-Spillway-Route, -Attempts, -Request-Id and -Model (the
// model that answered; removed when model is empty).
func SetRoute(h http.Header, id, route string, attempts int, model string) {
	if model != "" {
		h.Set("X-Spillway-Model", model)
	} else {
		h.Del("X-Spillway-Model")
	}
	h.Set("X-Spillway-Attempts", strconv.Itoa(attempts))
	h.Set("X-Spillway-Route", route)
	h.Set("X-Spillway-Request-Id", id)
}

// Answered sets the route headers of a's committed answer. A stream's say
// "…:streaming": the headers go out with its first output, before anyone
// knows how it ends; RouteComment gives the final word at its end.
func Answered(h http.Header, a *policy.Attempt, stream bool) {
	class := classify.OK
	if stream {
		class = Streaming
	}
	SetRoute(h, a.RequestID, a.RouteAs(class), a.N, a.Candidate.Model)
}

// Streaming is the route's word for the hop whose stream is on its way.
const Streaming classify.Class = "streaming"

// RouteComment is a stream's last words on its route, as SSE comment lines
// (which every client skips): the final X-Spillway-Route, -Model and
// -Attempts, written just before the stream's final event (or its error
// event). model is "" for an answer that did not finish.
func RouteComment(route, model string, attempts int) []byte {
	b := make([]byte, 0, len(route)+len(model)+80) // every stream's end: one allocation
	b = append(append(append(b, ": X-Spillway-Route: "...), route...), '\n')
	if model != "" {
		b = append(append(append(b, ": X-Spillway-Model: "...), model...), '\n')
	}
	b = strconv.AppendInt(append(b, ": X-Spillway-Attempts: "...), int64(attempts), 10)
	return append(b, '\n')
}

// FinalRoute reads the route a stream's RouteComment gave, "" when there is
// none (spillway demo reads it).
func FinalRoute(stream []byte) string {
	const key = ": X-Spillway-Route: "
	i := bytes.LastIndex(stream, []byte(key))
	if i < 0 {
		return ""
	}
	rest := stream[i+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return string(rest)
}

// Asks are what a request may ask of spillway in its headers:
// X-Spillway-Min-Tier, X-Spillway-No-Fallback, X-Spillway-Budget and
// X-Spillway-Hold.
type Asks struct {
	MinTier    config.Tier
	NoFallback bool
	// Budget is the most the request may wait in all (0: the
	// configuration's retry.budget).
	Budget time.Duration
	// Hold, with HoldSet, is the request's hold window for a stream's
	// output, in place of the model's (0: none).
	Hold    time.Duration
	HoldSet bool
}

// HoldFor is the hold window of a stream to model: the request's
// X-Spillway-Hold when it sent one (its time only; 0 turns the model's
// off), else the model's hold.
func (o Asks) HoldFor(cfg *config.Config, model string) config.Hold {
	if o.HoldSet {
		return config.Hold{Duration: config.Duration(o.Hold)}
	}
	return cfg.Models[model].Hold
}

// ReadAsks reads h's X-Spillway-* headers over the defaults o; a bad
// value is an error that names the header and what it accepts.
func ReadAsks(h http.Header, o Asks) (Asks, error) {
	if v := h.Get("X-Spillway-Min-Tier"); v != "" {
		t, err := config.ParseTier(v)
		if err != nil {
			return o, fmt.Errorf("X-Spillway-Min-Tier: %w", err)
		}
		o.MinTier = t
	}
	if v := h.Get("X-Spillway-No-Fallback"); v == "1" || strings.EqualFold(v, "true") {
		o.NoFallback = true
	}
	// A batch client that would rather wait than fail names its own wait
	// budget (the configuration's retry.budget suits interactive agents).
	if v := h.Get("X-Spillway-Budget"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("X-Spillway-Budget: %q is not a positive duration such as 90s or 30m", v)
		}
		o.Budget = d
	}
	if v := h.Get("X-Spillway-Hold"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return o, fmt.Errorf("X-Spillway-Hold: %q is not a duration such as 2s (0 for none)", v)
		}
		o.Hold, o.HoldSet = d, true
	}
	return o, nil
}
