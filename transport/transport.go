package transport

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/format/gemini"
	"github.com/spillway/spillway/internal/format/responses"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// Transport is an http.RoundTripper that sends the requests it manages
// through spillway's driver (see the package documentation). It is safe
// for concurrent use; make one and share it, like http.Transport.
type Transport struct {
	cfg      *config.Config
	base     http.RoundTripper // sends attempts: conn, under cloud.Transport
	conn     http.RoundTripper // the connections: WithBase's, or a clone of http.DefaultTransport
	engine   *policy.Engine
	events   events.Sink
	opts     send.Asks
	pacing   *config.Pacing
	classify func(classify.Input) classify.Verdict
	crosses  bool // cfg.CrossVendor(): a history may hold another vendor's turns
}

var _ http.RoundTripper = (*Transport)(nil)

// Option configures a Transport.
type Option func(*Transport)

// WithBase sets the transport that sends each attempt; a clone of
// http.DefaultTransport when not set. A cloud provider's (Bedrock, Vertex
// AI) attempts are signed with spillway's cloud credentials before they
// reach it.
func WithBase(rt http.RoundTripper) Option { return func(t *Transport) { t.base = rt } }

// WithEngine shares a policy engine (its breakers, pacer and classifier)
// with other code, for example another Transport or a front end of your own
// on policy.Engine.Run; one is made from the configuration when not set
// (then WithPacing and WithClassifier shape it).
func WithEngine(e *policy.Engine) Option { return func(t *Transport) { t.engine = e } }

// WithEvents observes every attempt: sink.Write gets one events.Record per
// attempt that reached an upstream (never for one a breaker or the pacer
// kept back), once the attempt is over — for a stream the caller reads,
// when it was read to its end, broke or was closed — on the goroutine that
// ended it (the request's, or the one reading the body). Write must be
// quick and safe for concurrent use; events.Writer is a Sink that appends
// to spillway's event log off the request path. Records are dropped when
// not set.
func WithEvents(sink events.Sink) Option { return func(t *Transport) { t.events = sink } }

// WithPacing replaces the configuration's pacing (config.Pacing) for the
// engine the transport makes. The library paces from the first request, as
// batch work should (pacing.when: auto): with the default configuration,
// attempts to one model start 0.5–2 s apart and at most 3 are in flight
// per model. config.Pacing{MaxConcurrency: 64} turns the gap off;
// config.Pacing{When: config.PacePressure, ...} paces only once a model
// or key answered capacity or rate_limit, as the gateway does.
func WithPacing(p config.Pacing) Option { return func(t *Transport) { t.pacing = &p } }

// WithClassifier replaces the classifier of the engine the transport makes
// (see policy.WithClassifier for its exact contract): it judges every error
// answer and error event, and its verdict's class decides what happens next.
func WithClassifier(f func(classify.Input) classify.Verdict) Option {
	return func(t *Transport) { t.classify = f }
}

// WithMinTier keeps fallbacks at or above tier (a request's
// X-Spillway-Min-Tier header overrides it).
func WithMinTier(tier config.Tier) Option { return func(t *Transport) { t.opts.MinTier = tier } }

// WithNoFallback keeps every request on the model it names: waits and
// retries still happen, model switches do not.
func WithNoFallback() Option { return func(t *Transport) { t.opts.NoFallback = true } }

// WithBudget sets the most one request may spend waiting in all (backoff,
// Retry-After, pacing); the configuration's retry.budget when not set. A
// request's X-Spillway-Budget header overrides it.
func WithBudget(d time.Duration) Option { return func(t *Transport) { t.opts.Budget = d } }

// New returns a Transport for cfg (config.Default() when nil).
func New(cfg *config.Config, opts ...Option) *Transport {
	if cfg == nil {
		cfg = config.Default()
	}
	t := &Transport{cfg: cfg, crosses: cfg.CrossVendor()}
	for _, o := range opts {
		o(t)
	}
	if t.base == nil {
		t.base = http.DefaultTransport.(*http.Transport).Clone()
	}
	if t.engine == nil {
		ecfg := cfg
		if t.pacing != nil {
			c := *cfg
			c.Pacing = *t.pacing
			ecfg = &c
		}
		// batch work: pacing.when: auto paces from the first request
		eopts := []policy.Option{policy.ForBatchWork()}
		if t.classify != nil {
			eopts = append(eopts, policy.WithClassifier(t.classify))
		}
		t.engine = policy.New(ecfg, eopts...)
	}
	if t.events == nil {
		t.events = events.Nop{}
	}
	t.conn = t.base
	if _, ok := t.base.(*cloud.Transport); !ok {
		// a cloud provider's requests are signed with spillway's own
		// cloud credentials as they leave
		t.base = cloud.NewTransport(t.base, t.engine.Clock())
	}
	return t
}

// Engine is the transport's policy engine.
func (t *Transport) Engine() *policy.Engine { return t.engine }

// CloseIdleConnections closes the base transport's idle connections, when
// it has any (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.conn.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// AuthorizesClouds reports whether t authorizes requests marked for a
// cloud provider as they leave: its base is the cloud transport (New
// makes it one), so that a request a caller built for a cloud and sent
// through t is signed like the attempts t makes.
func (t *Transport) AuthorizesClouds() bool {
	s, ok := t.base.(interface{ AuthorizesClouds() bool })
	return ok && s.AuthorizesClouds()
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, _, err := t.roundTrip(req, policy.Request{})
	return resp, err
}

// roundTrip answers req. For a managed request it returns the driver's
// outcome too (nil for a request passed to the base transport as it is);
// ladder carries Call's Park option.
func (t *Transport) roundTrip(req *http.Request, ladder policy.Request) (*http.Response, *policy.Outcome, error) {
	ep, known := formats.EndpointFor(req.URL.Path)
	if req.Method != http.MethodPost || !known || req.Body == nil || req.Body == http.NoBody {
		resp, err := t.base.RoundTrip(req)
		return resp, nil, err
	}
	raw, err := readBody(req)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: reading the request body: %w", err)
	}
	body, err := wire.ParseBody(ep, raw)
	if err == nil && ep.ModelInPath {
		body.Model = gemini.PathModel(req.URL.Path)
		if perr := config.CheckPathModel(body.Model); perr != nil {
			return nil, nil, fmt.Errorf("transport: %w", perr)
		}
	}
	if err == nil {
		if model, ok := responses.Spilled(body.Previous); ok {
			// it continues an answer another vendor's model gave: OpenAI
			// never had it, and nothing else stored it
			status, b := responses.NotStored(body.Previous, model)
			return ownAnswer(req, status, http.Header{"Content-Type": {"application/json"}}, b), nil, nil
		}
	}
	if err != nil || body.Model == "" {
		out := req.Clone(req.Context())
		setBody(out, raw)
		resp, err := t.base.RoundTrip(out)
		return resp, nil, err
	}
	opts, err := send.ReadAsks(req.Header, t.opts)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: %w", err)
	}
	login := formats.Envelope(ep.Format).SignedIn(req.Header)
	if login && req.Header.Get("X-Api-Key") != "" {
		// a login's request is the login's: an x-api-key beside it goes nowhere
		req = req.Clone(req.Context())
		req.Header.Del("X-Api-Key")
	}
	var answer *http.Response
	cross := send.NewCrossing(t.cfg, ep, body, req.URL.RawQuery, t.crosses)
	// what the request may hold of its answers: gateway.max_body_mb, as
	// on a gateway (the library has no gateway-wide room)
	budget := send.Limit(t.perRequest())
	c := &policy.Call{
		Request: policy.Request{Model: body.Model, Type: ep.Format, MinTier: opts.MinTier, NoFallback: opts.NoFallback,
			InputTokens: len(raw) / 4, Tokens: body.Tokens, Budget: opts.Budget, Ladder: ladder.Ladder, Rung: ladder.Rung, Park: ladder.Park,
			CheckEvery: ladder.CheckEvery, RungLeft: ladder.RungLeft, UntilReset: ladder.UntilReset,
			SignIn: login},
		Source: events.SourceLibrary, Endpoint: req.URL.Path, Stream: body.Stream, ReqBytes: int64(len(raw)),
		Key: wire.CallerKey(req), Watchdogs: true, ChargeFailures: true, Events: t.events, Cross: cross.Check,
		Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
			resp, res := t.send(ctx, req, ep, body, cross, opts, budget, a)
			if res.Committed {
				answer = resp
			}
			return res
		},
	}
	out := t.engine.Run(req.Context(), c)
	switch {
	case out.Committed:
		return answer, &out, nil
	case out.Err != nil:
		return nil, &out, out.Err
	case !out.ParkUntil.IsZero():
		return nil, &out, nil
	}
	// Given up: the same answer a gateway gives, so that an SDK reports its
	// usual typed error with a message naming what was tried.
	status, h, b := send.GiveUp(ep, out)
	send.SetRoute(h, out.ID, out.Route, out.Attempts, "")
	return ownAnswer(req, status, h, b), &out, nil
}

// perRequest is what one request may hold of its answers:
// gateway.max_body_mb, as on a gateway.
func (t *Transport) perRequest() int64 {
	return int64(cmp.Or(t.cfg.Gateway.MaxBodyMB, send.DefaultPerRequest>>20)) << 20
}

// ownAnswer is the library's own answer to req: status, h and the body b.
func ownAnswer(req *http.Request, status int, h http.Header, b []byte) *http.Response {
	return &http.Response{Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)), Request: req}
}

// send is the library's half of an attempt: the caller's request, with the
// candidate's model, to the URL the caller used (for a model, the library
// changes only the model, never the host; a model with deployments is sent
// to each deployment's provider, as the gateway sends it), and the answer
// once the caller may have it.
func (t *Transport) send(ctx context.Context, req *http.Request, ep wire.Endpoint, body *wire.Body, cross *send.Crossing, opts send.Asks, budget send.Budget, a *policy.Attempt) (*http.Response, policy.Result) {
	o := send.Options{Hold: opts.HoldFor(t.cfg, a.Candidate.Model), Budget: budget}
	var out *http.Request
	var err error
	if a.Candidate.Format != "" && a.Candidate.Format != ep.Format {
		// another vendor's model: translated, to its provider, with its own key
		out, o.Turn, err = cross.Attempt(ctx, a.Candidate, req.Header, req.URL.RawQuery)
		if err != nil {
			return nil, policy.Result{Verdict: classify.Verdict{Class: classify.BadRequest, Code: policy.Untranslatable, Message: err.Error()}, NotSent: true}
		}
		o.Turn.MaxHeld = t.perRequest()
	} else if out, err = t.request(ctx, req, ep, body, a.Candidate); err != nil {
		return nil, policy.Result{Verdict: classify.Verdict{Class: classify.BadRequest, Message: err.Error()}, NotSent: true}
	}
	ans, res := send.Exchange(a, t.base, out, ep, o)
	if ans == nil {
		return nil, res
	}
	resp := ans.Resp
	if ans.Stream != nil {
		resp.Body = ans.Stream.Body()
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		res.Open = true
	} else {
		resp.Body = io.NopCloser(bytes.NewReader(ans.Body))
		resp.ContentLength = int64(len(ans.Body))
	}
	send.Answered(resp.Header, a, ans.Stream != nil)
	res.Committed = true
	if res.Verdict.Class == "" {
		res.Verdict.Class = classify.OK // so far: the caller reads the rest
	}
	return resp, res
}

// request is the attempt's request to cand: to the URL the caller used
// when cand is a model of the provider that URL addresses (or of no
// provider the configuration places there), else, a deployment or another
// provider's model, to cand's provider, as the gateway sends it. The
// caller's credentials go with it where its provider passes them through;
// a provider with a key of its own gets that key, and so does a
// passthrough provider when the caller sent none, but only on the way to
// that provider's own base URL.
func (t *Transport) request(ctx context.Context, req *http.Request, ep wire.Endpoint, body *wire.Body, cand policy.Candidate) (*http.Request, error) {
	prov := t.cfg.Providers[cand.Provider]
	addressed := t.addressed(req.URL)
	if cand.Deployment != "" || prov.Cloud() != "" || addressed != "" && addressed != cand.Provider {
		out, err := send.NewRequest(ctx, t.cfg, ep, body, cand, req.Header, req.URL.RawQuery)
		if err == nil {
			send.SetCredentialsOrOwn(out.Header, prov, cand.Format)
		}
		return out, err
	}
	if cand.Format != "" && cand.Format != ep.Format {
		return nil, fmt.Errorf("spillway: model %s speaks %s, not %s", cand.Model, cand.Format, ep.Format)
	}
	payload, err := body.For(ep, cand.Upstream)
	if err != nil {
		return nil, err
	}
	out := req.Clone(ctx)
	if ep.ModelInPath && cand.Upstream != body.Model {
		// Gemini: the model is in the path
		out.URL.Path, out.URL.RawPath = gemini.WithPathModel(req.URL.Path, cand.Upstream), ""
	}
	out.Header = http.Header{}
	wire.Outgoing(out.Header, req.Header)
	if addressed == cand.Provider {
		// a URL of the caller's own never gets a configured provider's key
		send.SetCredentialsOrOwn(out.Header, prov, cand.Format)
	}
	setBody(out, payload)
	return out, nil
}

// addressed is the provider whose base URL the caller's URL starts with
// (the longest such), "" for none: a URL of the caller's own (a proxy of
// theirs) is never left for a configured one.
func (t *Transport) addressed(u *url.URL) string {
	name, best := "", 0
	s := u.Scheme + "://" + u.Host + u.Path
	for n, p := range t.cfg.Providers {
		if config.IsSignIn(n) {
			continue // a person's own sign-in is not the library's to manage: it goes as sent
		}
		base := strings.TrimSuffix(p.BaseURL, "/")
		if base != "" && len(base) > best && (s == base || strings.HasPrefix(s, base+"/")) {
			name, best = n, len(base)
		}
	}
	return name
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
