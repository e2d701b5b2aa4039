package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/provider"
	"github.com/spillway/spillway/redact"
)

// errorBodyLimit bounds how much of an error answer is read to classify it
// and to pass it through.
const errorBodyLimit = 1 << 20

// Transport is an http.RoundTripper that walks spillway's policy for the
// requests it manages (see the package documentation). It is safe for
// concurrent use; make one and share it, like http.Transport.
type Transport struct {
	cfg        *config.Config
	base       http.RoundTripper
	engine     *policy.Engine
	events     events.Sink
	minTier    config.Tier
	noFallback bool
	budget     time.Duration
}

var _ http.RoundTripper = (*Transport)(nil)

// Option configures a Transport.
type Option func(*Transport)

// WithBase sets the transport that sends each attempt; a clone of
// http.DefaultTransport when not set.
func WithBase(rt http.RoundTripper) Option { return func(t *Transport) { t.base = rt } }

// WithEngine shares a policy engine (its breakers and pacer) with other
// code, for example a gateway in the same process; one is made from the
// configuration when not set.
func WithEngine(e *policy.Engine) Option { return func(t *Transport) { t.engine = e } }

// WithEvents sends one record per upstream attempt to sink; records are
// dropped when not set.
func WithEvents(sink events.Sink) Option { return func(t *Transport) { t.events = sink } }

// WithMinTier keeps fallbacks at or above tier (a request's
// X-Spillway-Min-Tier header overrides it).
func WithMinTier(tier config.Tier) Option { return func(t *Transport) { t.minTier = tier } }

// WithNoFallback keeps every request on the model it names: waits and
// retries still happen, model switches do not.
func WithNoFallback() Option { return func(t *Transport) { t.noFallback = true } }

// WithBudget sets the most one request may spend waiting between attempts;
// the configuration's retry.budget when not set.
func WithBudget(d time.Duration) Option { return func(t *Transport) { t.budget = d } }

// New returns a Transport for cfg (config.Default() when nil).
func New(cfg *config.Config, opts ...Option) *Transport {
	if cfg == nil {
		cfg = config.Default()
	}
	t := &Transport{cfg: cfg}
	for _, o := range opts {
		o(t)
	}
	if t.base == nil {
		t.base = http.DefaultTransport.(*http.Transport).Clone()
	}
	if t.engine == nil {
		t.engine = policy.New(cfg)
	}
	if t.events == nil {
		t.events = events.Nop{}
	}
	return t
}

// Engine is the transport's policy engine.
func (t *Transport) Engine() *policy.Engine { return t.engine }

// CloseIdleConnections closes the base transport's idle connections, when
// it has any (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// endpoint is a kind of request the transport manages; the kinds are the
// gateway's (gateway/shapes.go endpoints).
type endpoint struct {
	typ  string // wire format: openai, anthropic
	kind string // responses, chat, embeddings, messages
}

func endpointOf(path string) (endpoint, bool) {
	p := strings.TrimSuffix(path, "/")
	switch {
	case strings.HasSuffix(p, "/responses"):
		return endpoint{"openai", "responses"}, true
	case strings.HasSuffix(p, "/chat/completions"):
		return endpoint{"openai", "chat"}, true
	case strings.HasSuffix(p, "/embeddings"):
		return endpoint{"openai", "embeddings"}, true
	case strings.HasSuffix(p, "/messages"):
		return endpoint{"anthropic", "messages"}, true
	}
	return endpoint{}, false
}

// request is one managed request.
type request struct {
	orig     *http.Request
	ep       endpoint
	raw      []byte
	body     map[string]json.RawMessage
	model    string
	stream   bool
	keyHash  string
	id       string
	attempts int
	plan     *policy.Plan
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, _, err := t.roundTrip(req)
	return resp, err
}

// roundTrip returns the answer for req. When the plan gave up, fail says
// why; resp is then the last upstream answer, or nil with err == fail when
// there is none to pass through.
func (t *Transport) roundTrip(req *http.Request) (resp *http.Response, fail *Error, err error) {
	ep, known := endpointOf(req.URL.Path)
	if req.Method != http.MethodPost || !known || req.Body == nil || req.Body == http.NoBody {
		resp, err := t.base.RoundTrip(req)
		return resp, nil, err
	}
	raw, err := readBody(req)
	if err != nil {
		return nil, nil, fmt.Errorf("spillway: reading the request body: %w", err)
	}
	r := &request{orig: req, ep: ep, raw: raw, keyHash: keyHash(req.Header), id: newID()}
	if json.Unmarshal(raw, &r.body) != nil || json.Unmarshal(r.body["model"], &r.model) != nil || r.model == "" {
		out := req.Clone(req.Context())
		setBody(out, raw)
		resp, err := t.base.RoundTrip(out)
		return resp, nil, err
	}
	if st, ok := r.body["stream"]; ok {
		_ = json.Unmarshal(st, &r.stream)
	}
	minTier, noFallback := t.minTier, t.noFallback
	if h := req.Header.Get("X-Spillway-Min-Tier"); h != "" {
		if minTier, err = config.ParseTier(h); err != nil {
			return nil, nil, fmt.Errorf("spillway: X-Spillway-Min-Tier: %w", err)
		}
	}
	if h := req.Header.Get("X-Spillway-No-Fallback"); h == "1" || strings.EqualFold(h, "true") {
		noFallback = true
	}
	r.plan = t.engine.NewPlan(policy.Request{Model: r.model, Type: ep.typ, MinTier: minTier, NoFallback: noFallback,
		InputTokens: len(raw) / 4, Budget: t.budget})

	ctx := req.Context()
	step := r.plan.Start()
	var last *result
	for {
		if step.Action == policy.Fail {
			return t.fail(r, step, last)
		}
		if step.Wait > 0 {
			if err := t.engine.Clock().Sleep(ctx, step.Wait); err != nil {
				return nil, nil, err
			}
		}
		res := t.attempt(ctx, r, step)
		if res.verdict.Class == classify.OK {
			return res.resp, nil, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if res.resp != nil || res.err != nil {
			last = res // an upstream answer or a transport error, not a refusal
		}
		prev := step.Candidate
		step = r.plan.After(res.verdict)
		if res.verdict.Class == classify.RateLimit {
			t.engine.Pacer.SlowDown(prev.Key(), r.keyHash)
		}
	}
}

// fail ends a plan that gave up: the last upstream answer goes back as it
// came, so that the caller's SDK reports its own typed error; without one
// (a transport error, a breaker that refused every attempt) an *Error.
func (t *Transport) fail(r *request, step policy.Step, last *result) (*http.Response, *Error, error) {
	e := &Error{Failure: classify.Failure{Verdict: step.Verdict}, Reason: step.Reason, Route: r.plan.RouteString()}
	if last != nil && last.resp != nil {
		resp := last.resp
		resp.Body = io.NopCloser(bytes.NewReader(last.body))
		resp.ContentLength = int64(len(last.body))
		resp.Header.Del("Content-Length")
		r.setHeaders(resp.Header, "", false)
		// the retry budget is spent: SDKs honour this and do not multiply it
		resp.Header.Set("X-Should-Retry", "false")
		e.Status = resp.StatusCode
		return resp, e, nil
	}
	if last != nil {
		e.Err = last.err
	}
	return nil, e, e
}

// result is one attempt's outcome.
type result struct {
	verdict classify.Verdict
	// resp is the answer: on success the one to return, on failure the
	// upstream answer (its Body consumed) with body holding what was read.
	resp *http.Response
	body []byte
	err  error // the transport error, when the attempt failed with one
}

func (t *Transport) attempt(ctx context.Context, r *request, step policy.Step) *result {
	cand := step.Candidate
	r.attempts++
	rec := events.Record{RequestID: r.id, Attempt: r.attempts, Source: events.SourceLibrary, Provider: cand.Provider,
		Model: cand.Model, RequestedModel: r.model, Endpoint: r.orig.URL.Path, ReqBytes: int64(len(r.raw)),
		EstInputTokens: len(r.raw) / 4, Stream: r.stream, FallbackFrom: step.FallbackFrom, WaitMS: step.Wait.Milliseconds()}
	t0 := time.Now()
	write := func(v classify.Verdict) {
		rec.TS = t0.UTC()
		rec.Class = string(v.Class)
		rec.LatencyMS = time.Since(t0).Milliseconds()
		if v.Class != classify.OK {
			rec.Error = redact.String(v.Message)
		}
		t.events.Write(rec)
	}
	res := &result{}
	failed := func(v classify.Verdict) *result {
		res.verdict = v
		write(v)
		return res
	}

	if cand.Type != "" && cand.Type != r.ep.typ {
		return failed(classify.Verdict{Class: classify.BadRequest, Message: fmt.Sprintf("spillway: model %s speaks %s, not %s", cand.Model, cand.Type, r.ep.typ)})
	}
	release, paced, err := t.engine.Pacer.Acquire(ctx, cand.Key(), r.keyHash, 0)
	rec.WaitMS += paced.Milliseconds()
	if err != nil {
		return failed(classify.Err(err))
	}
	done, ok := t.engine.Allow(cand.Key())
	if !ok {
		release()
		r.attempts-- // not an attempt: nothing went upstream, nothing is logged
		res.verdict = policy.Refused(cand.Key())
		return res
	}
	payload, err := r.bodyFor(cand)
	if err != nil {
		release()
		v := classify.Verdict{Class: classify.BadRequest, Message: err.Error()}
		done(v)
		return failed(v)
	}

	actx, cancel := context.WithCancel(ctx)
	out := r.orig.Clone(actx)
	setBody(out, payload)
	for k := range out.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Spillway-") {
			delete(out.Header, k)
		}
	}
	resp, err := t.base.RoundTrip(out)
	// stop ends the attempt once its answer is no longer needed
	stop := func() { cancel(); release() }
	if err != nil {
		stop()
		v := classify.Err(err)
		done(v)
		res.err = err
		return failed(v)
	}
	rec.Status = resp.StatusCode
	rec.TTFBMS = time.Since(t0).Milliseconds()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
		stop()
		v := classify.Classify(classify.Input{Status: resp.StatusCode, Header: resp.Header, Body: b, Provider: classify.Provider(cand.Type)})
		done(v)
		res.resp, res.body = resp, b
		return failed(v)
	}

	live := resp.Body
	var rd io.Reader = live
	if provider.IsSSE(resp.Header) {
		h := t.hold(ctx, cancel, resp, r.ep, cand)
		if !h.output {
			live.Close()
			stop()
			done(h.verdict)
			if h.frame { // the provider's own error event: an answer to pass on
				res.resp, res.body = resp, h.bytes
			} else {
				res.err = h.err
			}
			return failed(h.verdict)
		}
		rd = &endWatcher{r: io.MultiReader(bytes.NewReader(h.bytes), live), markers: provider.EndMarkers(r.ep.kind)}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	// The pool took the request (and a stream has started its output): a
	// success for the breaker and the pacer. The record waits for the body.
	done(classify.Verdict{Class: classify.OK})
	t.engine.Pacer.Recover(cand.Key(), r.keyHash)
	resp.Body = &answerBody{r: rd, c: live, finish: func(err error) {
		stop()
		v := classify.Verdict{Class: classify.OK}
		if err != nil {
			v = classify.Err(err)
		}
		write(v)
	}}
	r.setHeaders(resp.Header, cand.Model, true)
	res.verdict, res.resp = classify.Verdict{Class: classify.OK}, resp
	return res
}

// bodyFor is the request body for cand: the caller's bytes, with "model"
// replaced when cand's upstream name differs.
func (r *request) bodyFor(cand policy.Candidate) ([]byte, error) {
	if cand.Upstream == r.model {
		return r.raw, nil
	}
	m := maps.Clone(r.body)
	m["model"], _ = json.Marshal(cand.Upstream)
	return json.Marshal(m)
}

// setHeaders sets X-Spillway-Model, -Attempts, -Route and -Request-Id like
// the gateway; model is empty when no model answered.
func (r *request) setHeaders(h http.Header, model string, ok bool) {
	route := r.plan.RouteString()
	if ok {
		if route != "" {
			route += " > "
		}
		route += model + ":ok"
		h.Set("X-Spillway-Model", model)
	} else {
		h.Del("X-Spillway-Model")
	}
	h.Set("X-Spillway-Attempts", strconv.Itoa(r.attempts))
	h.Set("X-Spillway-Route", route)
	h.Set("X-Spillway-Request-Id", r.id)
}

// endWatcher passes a stream through and turns a clean end without the
// protocol's final event into io.ErrUnexpectedEOF, so that a cut stream
// never reads as a complete answer (the gateway sends an error event
// instead; a library can only fail the read).
type endWatcher struct {
	r       io.Reader
	markers [][]byte
	tail    []byte // the end of what was read, to find a marker split across reads
	ended   bool
}

func (e *endWatcher) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n > 0 && !e.ended {
		buf := append(e.tail, p[:n]...)
		for _, m := range e.markers {
			if bytes.Contains(buf, m) {
				e.ended = true
			}
		}
		if len(buf) > 64 {
			buf = buf[len(buf)-64:]
		}
		e.tail = append(e.tail[:0], buf...)
	}
	if errors.Is(err, io.EOF) && !e.ended {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// answerBody is a successful answer's body: it calls finish once, when the body
// has been read to its end (nil for io.EOF), failed, or been closed.
type answerBody struct {
	r      io.Reader
	c      io.Closer
	once   sync.Once
	finish func(error)
}

func (b *answerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *answerBody) Close() error {
	err := b.c.Close()
	b.end(nil)
	return err
}

func (b *answerBody) end(err error) {
	b.once.Do(func() {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		b.finish(err)
	})
}

// readBody reads the request body once (through GetBody when the request
// has it) and closes it, as a RoundTripper must.
func readBody(req *http.Request) ([]byte, error) {
	defer req.Body.Close()
	if req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			defer rc.Close()
			return io.ReadAll(rc)
		}
	}
	return io.ReadAll(req.Body)
}

// setBody gives req a fresh, rewindable copy of b.
func setBody(req *http.Request, b []byte) {
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	req.ContentLength = int64(len(b))
	req.Header.Del("Content-Length")
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keyHash identifies the caller's credentials for pacing without keeping
// them (as the gateway does).
func keyHash(h http.Header) string {
	sum := sha256.Sum256([]byte(h.Get("Authorization") + "\x00" + h.Get("X-Api-Key")))
	return hex.EncodeToString(sum[:6])
}
