// Package upstream is the one HTTP send of the gateway and the library: it
// sends an attempt the driver (policy.Run) asked for, tells the driver when
// headers and output arrive, and judges what came back up to the point
// where the caller may see it: an error answer is read and classified, a
// whole answer is read to its end, and an event stream is held until its
// first real output (opening events such as response.created or
// message_start are kept back, at most 1 MiB), so that a failure before
// output can still go to the next model without the caller seeing a byte.
// After that a Stream passes the events on, judging only the end and
// in-stream errors. It also builds the answer for a request the driver gave
// up on, and reads the X-Spillway-* request headers.
package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

const (
	// errorBodyLimit bounds how much of an error answer is read to
	// classify it and to pass it on.
	errorBodyLimit = 1 << 20
	// MaxAnswer bounds a whole (non-streamed) answer kept in memory.
	MaxAnswer = 256 << 20
	// maxHeld bounds the opening events held before the first output.
	maxHeld = 1 << 20
)

// Failure is an upstream answer that was not a success, kept so that it can
// be passed on when the driver gives up on a class no retry can fix.
type Failure struct {
	Status int
	Header http.Header
	Body   []byte
}

// Answer is an attempt's answer at the point the caller may have it.
type Answer struct {
	// Resp has the status and headers; its body was read into Body or
	// belongs to Stream.
	Resp   *http.Response
	Body   []byte  // a whole answer
	Stream *Stream // an event stream, its opening held until output
}

// Exchange sends req for attempt a through rt and reads the answer as far
// as the driver must see before the caller gets any of it. When the answer
// may go to the caller it returns it (with the Result to report once it is
// delivered); otherwise a nil Answer and the failure's Result. req must
// carry the attempt's context, which the driver's watchdogs end. o says
// what an event stream's answer must also do (a hold window, what a
// continuation needs).
func Exchange(a *policy.Attempt, rt http.RoundTripper, req *http.Request, ep wire.Endpoint, o StreamOptions) (*Answer, policy.Result) {
	prov := classify.Provider(a.Candidate.Format)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, policy.Result{Verdict: a.Failure(err), Detail: err}
	}
	a.Headers(wire.IsSSE(resp.Header))
	res := policy.Result{Status: resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
		res.Verdict = a.Classify(classify.Input{Status: resp.StatusCode, Header: resp.Header, Body: body, Provider: prov})
		res.Detail = &Failure{Status: resp.StatusCode, Header: resp.Header, Body: body}
		return nil, res
	}
	if wire.IsSSE(resp.Header) {
		st := &Stream{a: a, ep: ep, resp: resp, o: o}
		if failed, ok := st.hold(); !ok {
			resp.Body.Close()
			return nil, failed
		}
		return &Answer{Resp: resp, Stream: st}, res
	}
	// A whole answer: read it all before the caller sees any of it (a body
	// that breaks midway is a failure the plan may retry). It may not stall
	// longer than the idle timeout, nor exceed the size of any real answer.
	body, err := io.ReadAll(io.LimitReader(progress{resp.Body, a}, MaxAnswer+1))
	resp.Body.Close()
	if err == nil && len(body) > MaxAnswer {
		err = fmt.Errorf("the answer is larger than %d MiB", MaxAnswer>>20)
	}
	if err != nil {
		res.Verdict = a.Failure(err)
		return nil, res
	}
	if v, ok := judgeWhole(a, resp, body, prov); !ok {
		res.Verdict = v
		return nil, res
	}
	if !a.Output() { // a hedge answered first
		res.Verdict = a.Failure(context.Canceled)
		return nil, res
	}
	res.Verdict, res.OutputTokens = classify.Verdict{Class: classify.OK}, wire.OutputTokens(body)
	return &Answer{Resp: resp, Body: body}, res
}

// judgeWhole checks a 2xx whole answer before the caller may have it: a
// JSON answer (its content type JSON, or none: every endpoint spillway
// relays is JSON) must be one complete JSON value, else it is a
// server_error, retried as a stream that breaks before output is; and one
// that is an error envelope is that error, judged as an error answer is
// (an error the classifier cannot place is the upstream's fault:
// server_error). ok is false with the verdict when it may not go on.
func judgeWhole(a *policy.Attempt, resp *http.Response, body []byte, prov classify.Provider) (classify.Verdict, bool) {
	if ct := resp.Header.Get("Content-Type"); ct != "" && !strings.Contains(strings.ToLower(ct), "json") {
		return classify.Verdict{}, true
	}
	look := wire.LookWhole(body)
	switch {
	case !look.Valid:
		return classify.Verdict{Class: classify.ServerError, Status: resp.StatusCode,
			Message: fmt.Sprintf("the answer (HTTP %d, %d bytes) is not complete JSON: cut off or broken", resp.StatusCode, len(body))}, false
	case look.Error:
		v := a.Classify(classify.Input{Status: resp.StatusCode, Header: resp.Header, Body: body, Provider: prov})
		switch v.Class {
		case classify.OK:
			return v, true
		case classify.Unknown:
			v.Class, v.Retryable = classify.ServerError, true
		}
		return v, false
	}
	return classify.Verdict{}, true
}

// NewRequest builds the request of an attempt to cand at its provider: the
// endpoint's URL at the provider's base URL (with the caller's query, the
// provider's own query winning over it), the body for cand's model, the
// caller's headers without hop-by-hop or spillway's own, and the
// credentials Key gives.
func NewRequest(ctx context.Context, cfg *config.Config, ep wire.Endpoint, body *wire.Body, cand policy.Candidate, header http.Header, rawQuery string) (*http.Request, error) {
	prov, ok := cfg.Providers[cand.Provider]
	if !ok {
		return nil, fmt.Errorf("spillway: no provider %q configured for model %s", cand.Provider, cand.Model)
	}
	if cand.Format != "" && cand.Format != ep.Format {
		return nil, fmt.Errorf("spillway: model %s speaks %s, not %s", cand.Model, cand.Format, ep.Format)
	}
	payload, err := body.For(ep, cand.Upstream)
	if err != nil {
		return nil, err
	}
	target := ep.URL(prov.BaseURL, cand.Upstream)
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		q = url.Values{}
	}
	own, _ := url.ParseQuery(strings.TrimPrefix(prov.Query, "?"))
	for k, vs := range own {
		q[k] = vs
	}
	if prov.Auth == "key" {
		q.Del("key") // a Gemini caller's key is the caller's, not this provider's
	}
	if enc := q.Encode(); enc != "" {
		target += "?" + enc
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	Outgoing(up.Header, header)
	Key(up.Header, prov, cand.Format)
	up.ContentLength = int64(len(payload))
	return up, nil
}

// Key sets the credentials of a request to prov with auth: key: its own
// key, in place of any the caller sent (in its key_header when it names
// one). With passthrough the caller's go through.
func Key(h http.Header, prov config.Provider, f wire.Format) {
	if prov.Auth == "key" {
		setKey(h, prov, f)
	}
}

// KeyOrOwn is Key, and for a passthrough provider whose caller sent no
// credentials, the provider's own key: what a library caller that names no
// key (the queue) wants, so that each provider's key goes to it alone.
func KeyOrOwn(h http.Header, prov config.Provider, f wire.Format) {
	if prov.Auth == "key" || prov.APIKey.Value != "" && !wire.HasKey(h) {
		setKey(h, prov, f)
	}
}

func setKey(h http.Header, prov config.Provider, f wire.Format) {
	if prov.KeyHeader != "" {
		wire.ClearKeys(h)
		h.Set(prov.KeyHeader, prov.APIKey.Value)
		return
	}
	wire.SetKey(h, f, prov.APIKey.Value)
}

// progress tells the attempt about every read, for its idle watchdog.
type progress struct {
	r io.Reader
	a *policy.Attempt
}

func (p progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.a.Progress()
	}
	return n, err
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
		CopyHeaders(h, f.Header)
		h.Set("X-Should-Retry", "false")
		return f.Status, h, f.Body
	}
	status, body = wire.ErrorBody(ep, out.Verdict.Class, out.Reason)
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

// hopHeaders are not forwarded in either direction.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Host": true,
	"Content-Length": true, "Accept-Encoding": true, "Content-Encoding": true,
}

// CopyHeaders copies src to dst without hop-by-hop headers.
func CopyHeaders(dst, src http.Header) {
	for k, vs := range src {
		if !hopHeaders[k] {
			dst[k] = vs
		}
	}
}

// Outgoing copies a caller's request headers for an upstream request:
// without hop-by-hop headers and without spillway's own X-Spillway-*.
func Outgoing(dst, src http.Header) {
	for k, vs := range src {
		if !hopHeaders[k] && !strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Spillway-") {
			dst[k] = vs
		}
	}
}

// Options are what a request may ask of spillway in its headers:
// X-Spillway-Min-Tier, X-Spillway-No-Fallback, X-Spillway-Budget and
// X-Spillway-Hold.
type Options struct {
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
func (o Options) HoldFor(cfg *config.Config, model string) config.Hold {
	if o.HoldSet {
		return config.Hold{Duration: config.Duration(o.Hold)}
	}
	return cfg.Models[model].Hold
}

// ReadOptions reads h's X-Spillway-* headers over the defaults o; a bad
// value is an error that names the header and what it accepts.
func ReadOptions(h http.Header, o Options) (Options, error) {
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

// BrokenStream is the error a library caller reads from a stream that broke
// after its output started: errors.Is finds io.ErrUnexpectedEOF in it (and
// the error that cut it, context.Canceled for one), errors.As a
// *classify.Failure with the verdict, so a cut stream never reads as a
// complete answer.
type BrokenStream struct {
	Verdict classify.Verdict
	Err     error // what cut the stream, when something did
}

func (e *BrokenStream) Error() string {
	return fmt.Sprintf("spillway: the stream broke after output started (%s: %s)", e.Verdict.Class, e.Verdict.Message)
}

// Unwrap returns the verdict as a *classify.Failure, io.ErrUnexpectedEOF and
// the error that cut the stream.
func (e *BrokenStream) Unwrap() []error {
	errs := []error{&classify.Failure{Verdict: e.Verdict}, io.ErrUnexpectedEOF}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Room asks cand's provider, with the provider's own key, for the smallest
// answer (one token) and reports whether the model has room: false when
// judge (the engine's classifier) calls the answer capacity. checked is
// false when it could not ask (the provider has no key of its own, or
// speaks no prompt endpoint): the caller must try.
func Room(ctx context.Context, rt http.RoundTripper, cfg *config.Config, cand policy.Candidate, judge func(classify.Input) classify.Verdict) (room, checked bool) {
	prov, ok := cfg.Providers[cand.Provider]
	if !ok || prov.Auth != "key" || prov.APIKey.Value == "" {
		return false, false
	}
	ans, err := Probe(ctx, rt, cfg, cand, http.Header{})
	if err != nil {
		return false, false
	}
	if ans.Status/100 == 2 {
		return true, true
	}
	return judge(classify.Input{Status: ans.Status, Header: ans.Header, Body: ans.Body, Provider: cand.Format}).Class != classify.Capacity, true
}

// Probed is a provider's answer to a probe: its status, headers, the start
// of its body, and how long it took.
type Probed struct {
	Status  int
	Header  http.Header
	Body    []byte
	Elapsed time.Duration
}

// probeTimeout bounds a probe whose context has no deadline of its own: a
// provider that takes the connection and says nothing must not hold the
// caller.
const probeTimeout = 10 * time.Second

// bounded is ctx with probeTimeout, unless it has a deadline already.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, probeTimeout)
}

// Probe sends cand's provider the smallest request for cand's model (one
// token of output), with header's credentials (a provider with auth: key
// uses its own). It costs that one request's tokens.
func Probe(ctx context.Context, rt http.RoundTripper, cfg *config.Config, cand policy.Candidate, header http.Header) (*Probed, error) {
	ep, ok := wire.PromptEndpoint(cand.Format)
	if !ok {
		return nil, fmt.Errorf("spillway: no prompt endpoint for %s models", cand.Format)
	}
	body, err := wire.ParseBody(ep, wire.Prompt{User: "ping", MaxTokens: 1}.Body(ep, cand.Upstream))
	if err != nil {
		return nil, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	req, err := NewRequest(ctx, cfg, ep, body, cand, header, "")
	if err != nil {
		return nil, err
	}
	return send(rt, req)
}

// ListModels asks provider for its list of models (GET, no tokens), with
// header's credentials (a provider with auth: key uses its own).
func ListModels(ctx context.Context, rt http.RoundTripper, cfg *config.Config, provider string, header http.Header) (*Probed, error) {
	prov, ok := cfg.Providers[provider]
	if !ok {
		return nil, fmt.Errorf("spillway: no provider %q configured", provider)
	}
	f := wire.Format(cfg.ProviderType(provider))
	target := strings.TrimSuffix(prov.BaseURL, "/") + wire.ModelsPath(f)
	if prov.Query != "" {
		target += "?" + strings.TrimPrefix(prov.Query, "?")
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	Outgoing(req.Header, header)
	Key(req.Header, prov, f)
	if f == wire.Anthropic && req.Header.Get("Anthropic-Version") == "" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	return send(rt, req)
}

func send(rt http.RoundTripper, req *http.Request) (*Probed, error) {
	start := time.Now()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	return &Probed{Status: resp.StatusCode, Header: resp.Header, Body: b, Elapsed: time.Since(start)}, nil
}
