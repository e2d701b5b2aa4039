package send

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

const (
	// errorBodyLimit bounds how much of an error answer is read to
	// classify it and to pass it on.
	errorBodyLimit = 1 << 20
	// MaxAnswer bounds what the countTokens route passes on (never held:
	// a whole answer is bounded by the request's budget, readWhole).
	MaxAnswer = 256 << 20
)

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
// continuation needs). client is the endpoint the caller called; the
// answer comes in its format, or, for another vendor's model, in o.Turn's
// target's, and is translated back.
func Exchange(a *policy.Attempt, rt http.RoundTripper, req *http.Request, client wire.Endpoint, o Options) (*Answer, policy.Result) {
	prov := classifyAs(a.Candidate)
	from := client
	if o.Turn != nil {
		from, o.Turn.Now = o.Turn.Target, a.Now
	}
	if err := signsFor(rt, req); err != nil {
		closeBody(req)
		return nil, policy.Result{Verdict: classify.Verdict{Class: classify.BadRequest, Message: err.Error()}, Detail: err, NotSent: true}
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, policy.Result{Verdict: a.Failure(err), Detail: err}
	}
	framing := formats.Framing(resp.Header) // nil: a whole answer
	a.Headers(framing != nil)
	if o.Turn != nil && resp.StatusCode/100 == 2 {
		translatedHeader(resp.Header) // another vendor's own headers are not the client's vendor's
	}
	ownCloud := isOwnCloud(a.Candidate)
	if ownCloud && resp.StatusCode/100 == 2 {
		cloudHeader(resp.Header) // (an error's are read to classify it, and not passed on)
	}
	res := policy.Result{Status: resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
		res.Verdict = a.Classify(classify.Input{Status: resp.StatusCode, Header: resp.Header, Body: body, Provider: prov})
		res.Detail = &Failure{Status: resp.StatusCode, Header: resp.Header, Body: body}
		if ownCloud { // the cloud's error in the client's words, its account unnamed
			res.Verdict.Message = cloudMessage(a.Candidate, res.Verdict)
			res.Detail = cloudFailure(client, a.Candidate, res.Verdict)
		}
		if o.Turn != nil { // another vendor's error, in the client's words
			res.Detail = translatedFailure(client, a.Candidate, res.Verdict)
			if res.Verdict.Class == classify.BadRequest {
				// what another vendor refuses of a translated request is
				// the translation's, not the client's: the step is passed
				// over, and the chain goes on
				res.Verdict.Code = policy.Untranslatable
			}
		}
		return nil, res
	}
	if framing != nil {
		st, held := Open(a, resp, client, from, o)
		if st == nil {
			return nil, held
		}
		// what the caller reads is server-sent events, whatever framed
		// them upstream (an AWS event stream's frames become events)
		resp.Header.Set("Content-Type", "text/event-stream")
		return &Answer{Resp: resp, Stream: st}, res
	}
	// A whole answer: read it all before the caller sees any of it (a body
	// that breaks midway is a failure the plan may retry). It may not stall
	// longer than the idle timeout, nor hold more than the request may.
	budget := cmp.Or(o.Budget, Limit(DefaultPerRequest))
	body, taken, err := readWhole(progress{resp.Body, a}, budget)
	resp.Body.Close()
	defer func() {
		if res.Verdict.Class != classify.OK {
			budget.Give(taken) // an answer not passed on holds nothing
		}
	}()
	if errors.Is(err, errTooLarge) {
		res.Verdict = classify.Verdict{Class: classify.ServerError, Code: classify.TooLarge,
			Message: fmt.Sprintf("the answer of %s is %s (gateway.max_body_mb, gateway.max_inflight_mb)", a.Candidate.Model, classify.TooLargePhrase)}
		return nil, res
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
	res.Verdict, res.OutputTokens = classify.Verdict{Class: classify.OK}, format.OutputTokens(body)
	if o.Turn != nil {
		if body, err = o.Turn.Answer(body); err != nil {
			res.Verdict = classify.Verdict{Class: classify.ServerError, Message: fmt.Sprintf("the answer of %s could not be translated: %v", a.Candidate.Model, err)}
			return nil, res
		}
	}
	return &Answer{Resp: resp, Body: body}, res
}

// errTooLarge is a whole answer past what its request may hold.
var errTooLarge = errors.New("the answer is larger than the request may hold")

// readWhole reads a whole answer, its room taken from b as it grows (the
// buffer doubles, and what it takes is what it holds): errTooLarge past
// what b has room for.
func readWhole(r io.Reader, b Budget) (body []byte, taken int64, err error) {
	const first = 4 << 10
	if !b.Take(first) {
		return nil, 0, errTooLarge
	}
	buf, taken := make([]byte, 0, first), int64(first)
	for {
		if len(buf) == cap(buf) {
			more := cap(buf)
			if !b.Take(int64(more)) {
				return nil, taken, errTooLarge
			}
			taken += int64(more)
			buf = append(make([]byte, 0, cap(buf)+more), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, taken, nil
		}
		if err != nil {
			return nil, taken, err
		}
	}
}

// translatedFailure is another vendor's error answer as the client's own
// format says an error of its class, with the provider's message.
func translatedFailure(client wire.Endpoint, cand policy.Candidate, v classify.Verdict) *Failure {
	status, body := formats.WireOf(client).ErrorBody(v.Class, fmt.Sprintf("%s (%s): %s", cand.Model, cand.Format, v.Message))
	return &Failure{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// cloudFailure is a cloud's error answer (Bedrock's {"message"} with its
// x-amzn headers, Google's error envelope) as the client's own format
// says an error of its class, with the cloud's message: the envelope is
// the cloud's, not the format the client speaks.
func cloudFailure(client wire.Endpoint, cand policy.Candidate, v classify.Verdict) *Failure {
	status, body := formats.WireOf(client).ErrorBody(v.Class, fmt.Sprintf("%s (%s on %s): %s", cand.Model, cand.Deployment, cand.Cloud, v.Message))
	return &Failure{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// translatedHeader keeps of another vendor's answer headers what is not
// its own: no length (the body is another), no vendor headers the
// client would read as its own vendor's.
func translatedHeader(h http.Header) {
	h.Del("Content-Length")
	dropHeaders(h, "anthropic-", "openai-", "x-ratelimit-", "x-goog-")
}

// dropHeaders deletes from h every header whose name starts with one of
// prefixes (lower case).
func dropHeaders(h http.Header, prefixes ...string) {
	for k := range h {
		lk := strings.ToLower(k)
		for _, p := range prefixes {
			if strings.HasPrefix(lk, p) {
				h.Del(k)
				break
			}
		}
	}
}

// Crossing is what a front end needs of one request for its cross-vendor
// steps: whether a step can take it (Check, the Call's Cross) and the
// attempt's request (Attempt). The request is read for translation once,
// on the first step that needs it, whatever the steps after.
type Crossing struct {
	cfg  *config.Config
	ep   wire.Endpoint
	body *wire.Body
	// native: the configuration has cross-vendor steps, so a request's
	// history may hold another vendor's turns, which its own vendor's
	// model is sent fit (formats.Native)
	native  bool
	fitOnce sync.Once
	fit     *wire.Body // the body its own vendor is sent, when native changed it
	once    sync.Once
	p       *format.Parsed // made by the first cross-vendor step (most requests never take one)
	// array: a Gemini stream asked for as a JSON array (no alt=sse),
	// which a translation does not write
	array bool
}

// NewCrossing is the crossing of a request to ep with body under cfg;
// crosses is cfg.CrossVendor(), which the front end keeps per
// configuration.
func NewCrossing(cfg *config.Config, ep wire.Endpoint, body *wire.Body, rawQuery string, crosses bool) *Crossing {
	return &Crossing{cfg: cfg, ep: ep, body: body, native: crosses,
		array: ep.Kind.Streams() && !strings.Contains(rawQuery, "alt=sse")}
}

func (x *Crossing) parsed() *format.Parsed {
	x.once.Do(func() { x.p = formats.Parse(x.ep, x.body.Raw) })
	return x.p
}

// Check is Call.Cross: whether cand, a cross-vendor step, can take the
// request (its provider has a key of its own, and the request can be
// carried to its format), or the local refusal's code and why.
func (x *Crossing) Check(c policy.Candidate) (string, string) {
	prov, ok := x.cfg.Providers[c.Provider]
	switch {
	case !ok:
		return policy.Untranslatable, "no provider " + c.Provider + " is configured"
	case config.IsSignIn(c.Provider):
		return policy.OtherVendor, c.Provider + " is a sign-in's own backend"
	case x.array:
		return policy.Untranslatable, "a Gemini stream without alt=sse (a JSON array) is not translated: ask for ?alt=sse"
	case !prov.OwnCredentials():
		return policy.NoKey, fmt.Sprintf("%s is %s's model, and provider %s has no api_key of its own (a caller's credentials never go to another vendor)", c.Model, c.Format, c.Provider)
	}
	if err := x.parsed().Check(c.Format, Takes(x.cfg, c.Model)); err != nil {
		return policy.Untranslatable, fmt.Sprintf("%s (%s): the request %v", c.Model, c.Format, err)
	}
	return "", ""
}

// Attempt is the request of an attempt to cand, with the caller's header
// and query: NewRequest's for a model of the caller's format. Another
// vendor's model (a cross-vendor step) gets the request translated into its
// format, sent with its provider's own api_key whatever its auth, with none
// of the caller's credentials or vendor headers (only what the target
// requires), and the Turn its answer comes back through.
func (x *Crossing) Attempt(ctx context.Context, cand policy.Candidate, header http.Header, rawQuery string) (*http.Request, *format.Turn, error) {
	cfg, ep := x.cfg, x.ep
	if cand.Format == "" || cand.Format == ep.Format {
		body := x.body
		if x.native {
			x.fitOnce.Do(func() {
				if fit, ok := formats.Native(ep, body.Raw); ok {
					if b, err := wire.ParseBody(ep, fit); err == nil {
						b.Model = body.Model
						x.fit = b
					}
				}
			})
			if x.fit != nil {
				body = x.fit
			}
		}
		req, err := NewRequest(ctx, cfg, ep, body, cand, header, rawQuery)
		return req, nil, err
	}
	prov, ok := cfg.Providers[cand.Provider]
	if !ok {
		return nil, nil, fmt.Errorf("spillway: no provider %q configured for model %s", cand.Provider, cand.Model)
	}
	if !prov.OwnCredentials() {
		return nil, nil, fmt.Errorf("spillway: provider %s has no api_key of its own for %s", cand.Provider, cand.Model)
	}
	turn, err := x.parsed().New(cand.Format, Takes(cfg, cand.Model), cand.Model, cand.Upstream)
	if err != nil {
		return nil, nil, err
	}
	if prov.Cloud() != "" {
		// the translation, carried in the cloud's envelope: what the
		// target requires of its headers (its betas) goes as the cloud
		// takes it
		h := http.Header{}
		turn.Header(h)
		q, _ := url.ParseQuery(turn.Query())
		up, err := cloudRequest(ctx, cand.Provider, prov, cand, cloudCall{ep: turn.Target, payload: turn.Body, stream: turn.Stream, header: h, query: q})
		return up, turn, err
	}
	target := turn.Target.URL(prov.BaseURL, cand.Upstream)
	q, _ := url.ParseQuery(strings.TrimPrefix(prov.Query, "?"))
	if extra := turn.Query(); extra != "" {
		more, _ := url.ParseQuery(extra)
		for k, vs := range more {
			q[k] = vs
		}
	}
	if enc := q.Encode(); enc != "" {
		target += "?" + enc
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(turn.Body))
	if err != nil {
		return nil, nil, err
	}
	turn.Header(up.Header)
	setKey(up.Header, prov, cand.Format)
	up.ContentLength = int64(len(turn.Body))
	return up, turn, nil
}

// Takes is what model takes (config's tools, images, reasoning).
func Takes(cfg *config.Config, model string) format.Takes {
	m := cfg.Models[model]
	return format.Takes{Tools: m.TakesTools(), Images: m.TakesImages(), Reasoning: m.TakesReasoning()}
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
	if prov.Cloud() != "" {
		// the cloud's envelope takes the body without its model (the path
		// names it): the caller's bytes go in as they came
		q, _ := url.ParseQuery(rawQuery)
		return cloudRequest(ctx, cand.Provider, prov, cand, cloudCall{ep: ep, payload: body.Raw, stream: body.Stream, header: header, query: q})
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
	if prov.Auth == config.AuthKey {
		q.Del("key") // a Gemini caller's key is the caller's, not this provider's
	}
	if enc := q.Encode(); enc != "" {
		target += "?" + enc
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	wire.Outgoing(up.Header, header)
	if ep.Cloud != "" {
		// a cloud client's request carries no vendor key (its own were the
		// cloud's, dropped): the provider's own goes, under passthrough
		// too (policy.Request.Keyless passed over a provider without one)
		SetCredentialsOrOwn(up.Header, prov, cand.Format)
	} else {
		SetCredentials(up.Header, prov, cand.Format)
	}
	up.ContentLength = int64(len(payload))
	return up, nil
}

// SetCredentials sets the credentials of a request to prov with auth: key: its own
// key, in place of any the caller sent (in its key_header when it names
// one). With passthrough the caller's go through. A cloud's request
// carries none here: the cloud transport signs it as it leaves.
func SetCredentials(h http.Header, prov config.Provider, f wire.Format) {
	if prov.Auth == config.AuthKey && prov.Cloud() == "" {
		setKey(h, prov, f)
	}
}

// SetCredentialsOrOwn is SetCredentials, and for a passthrough provider whose caller sent no
// credentials, the provider's own key: what a library caller that names no
// key (the queue) wants, so that each provider's key goes to it alone.
func SetCredentialsOrOwn(h http.Header, prov config.Provider, f wire.Format) {
	if prov.Cloud() != "" {
		return // the cloud transport signs it as it leaves
	}
	if prov.Auth == config.AuthKey || prov.APIKey.Value != "" && !wire.HasKey(h) {
		setKey(h, prov, f)
	}
}

func setKey(h http.Header, prov config.Provider, f wire.Format) {
	if prov.KeyHeader != "" {
		wire.ClearKeys(h)
		h.Set(prov.KeyHeader, prov.APIKey.Value)
		return
	}
	formats.Envelope(f).SetKey(h, prov.APIKey.Value)
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

// Room asks cand's provider, with the provider's own credentials, for the
// smallest answer (one token) and reports whether the model has room: false
// when judge (the engine's classifier) calls the answer capacity. checked
// is false when it could not ask (the provider has no credentials of its
// own, or speaks no prompt endpoint): the caller must try. rt must
// authorize cloud requests (cloud.NewTransport).
func Room(ctx context.Context, rt http.RoundTripper, cfg *config.Config, cand policy.Candidate, judge func(classify.Input) classify.Verdict) (room, checked bool) {
	prov, ok := cfg.Providers[cand.Provider]
	if !ok || prov.Auth != config.AuthKey || !prov.OwnCredentials() {
		return false, false
	}
	ans, err := Probe(ctx, rt, cfg, cand, http.Header{})
	if err != nil {
		return false, false
	}
	if ans.Status/100 == 2 {
		return true, true
	}
	return judge(classify.Input{Status: ans.Status, Header: ans.Header, Body: ans.Body, Provider: classifyAs(cand)}).Class != classify.Capacity, true
}

// closeBody closes the body of a request that will not be sent.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
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
	env, ok := formats.EnvelopeOf(cand.Format)
	ep := env.PromptEndpoint()
	if !ok {
		return nil, fmt.Errorf("spillway: no prompt endpoint for %s models", cand.Format)
	}
	body, err := wire.ParseBody(ep, formats.WireOf(ep).Prompt(wire.Prompt{User: "ping", MaxTokens: 1}, cand.Upstream))
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
	if c := prov.Cloud(); c != "" {
		return nil, fmt.Errorf("spillway: provider %s is a %s region: it has no list of models to ask (probe one of its models instead)", provider, c)
	}
	f := wire.Format(cfg.ProviderType(provider))
	env := formats.Envelope(f)
	target := strings.TrimSuffix(prov.BaseURL, "/") + env.ModelsPath()
	if prov.Query != "" {
		target += "?" + strings.TrimPrefix(prov.Query, "?")
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	wire.Outgoing(req.Header, header)
	SetCredentials(req.Header, prov, f)
	env.Require(req.Header)
	return send(rt, req)
}

// send sends req through rt (which must sign for clouds when req is
// marked for one) and reads the start of its answer.
func send(rt http.RoundTripper, req *http.Request) (*Probed, error) {
	if err := signsFor(rt, req); err != nil {
		closeBody(req)
		return nil, err
	}
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
