package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/format/responses"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

func (s *Server) proxy(w http.ResponseWriter, r *http.Request, ep wire.Endpoint) {
	// the request's configuration, taken once: a reload while it runs
	// changes nothing of it (and its context carries it for the steps
	// that read it from there: admit, signInRefused)
	r = s.pin(r)
	st := s.stateOf(r.Context())
	cfg := st.cfg
	// a cloud client's credential is never a sign-in: a gateway key, or
	// nothing spillway reads (clouds.go)
	login := ep.Cloud == "" && signedIn(cfg, ep, r)
	if ep.Cloud == "" && (login || planLoginNotKey(cfg, ep, r)) && s.signInRefused(w, r, ep) {
		return // a sign-in on a gateway that serves others: 403, never a 401 of spillway's
	}
	if login && formats.Envelope(ep.Format).SignedIn(r.Header) {
		r = s.dropKeyBesideLogin(r)
	}
	key, release, ok := s.admit(w, r, ep)
	if !ok {
		s.metrics.requests.WithLabelValues(ep.Path, "refused").Inc()
		return
	}
	defer release()
	if ep.Cloud != "" {
		r = dropClientCredentials(r) // checked (a gateway key) or not spillway's: sent nowhere
	}
	r, held, ok := s.hold(w, r, ep, st)
	defer s.giveHeld(held)
	if !ok {
		s.metrics.requests.WithLabelValues(ep.Path, "busy").Inc()
		return
	}
	s.inflight.Add(1)
	s.metrics.inflight.Inc()
	defer func() { s.inflight.Add(-1); s.metrics.inflight.Dec() }()
	s.total.Add(1)
	t0 := time.Now()
	lg := reqLog{key: key}
	outcome := s.serve(w, r, ep, st, &lg, held.answers)
	s.logRequest(ep, &lg, outcome, time.Since(t0))
}

// signedIn reports a request that carries a person's sign-in: every one of
// a sign-in's route (Via), and a Claude login on the Messages route (a
// bearer that is not an API key, format.Envelope.SignedIn). On a gateway with keys no
// credential is a login: each is a gateway key (replaced by the provider's
// own) or refused.
func signedIn(cfg *config.Config, ep wire.Endpoint, r *http.Request) bool {
	return ep.Via != "" || len(cfg.Gateway.Keys) == 0 && formats.Envelope(ep.Format).SignedIn(r.Header)
}

// planLoginNotKey reports, on a gateway with keys, a Messages request that
// carries a Claude plan's login rather than one of the keys: refused as a
// sign-in (403), not as a bad key (a 401 sends Claude Code to log in again).
func planLoginNotKey(cfg *config.Config, ep wire.Endpoint, r *http.Request) bool {
	if len(cfg.Gateway.Keys) == 0 || !formats.Envelope(ep.Format).PlanLogin(r.Header) {
		return false
	}
	_, known := keyOf(cfg, r)
	return !known
}

// dropKeyBesideLogin takes an x-api-key sent beside a Claude login out of
// the request (Claude Code with both ANTHROPIC_AUTH_TOKEN and
// ANTHROPIC_API_KEY sends both): the request is the login's, and the key
// goes nowhere. The log says so, without the key.
func (s *Server) dropKeyBesideLogin(r *http.Request) *http.Request {
	if r.Header.Get("X-Api-Key") == "" {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Del("X-Api-Key")
	s.log.Info("x-api-key dropped", "endpoint", r.URL.Path, "why", "the request carries a login (Authorization: Bearer) too; it goes as the login's, and the x-api-key is sent nowhere")
	return r
}

// logRequest ends a request: its key's spend, its metrics, and one line
// per request: what was asked, what answered, by which route (never a
// key, a prompt or an answer).
func (s *Server) logRequest(ep wire.Endpoint, lg *reqLog, outcome string, took time.Duration) {
	key := lg.key
	s.spend(key, lg.tokens.Load())
	s.metrics.requests.WithLabelValues(ep.Path, outcome).Inc()
	s.metrics.latency.WithLabelValues(ep.Path).Observe(took.Seconds())
	var room [11]slog.Attr // typed attributes: no value is boxed
	attrs := append(room[:0], slog.String("request_id", lg.out.ID), slog.String("endpoint", ep.Path), slog.String("model", lg.model),
		slog.String("outcome", outcome), slog.Int64("duration_ms", took.Milliseconds()), slog.Int("attempts", lg.out.Attempts),
		slog.Int64("waited_ms", lg.out.Waited.Milliseconds()))
	if key != nil {
		attrs = append(attrs, slog.String("key", key.Name))
	}
	if lg.out.Waited > 0 { // what for: "pace 1.2s, backoff 2s"
		attrs = append(attrs, slog.String("waited_for", lg.out.Waits.String()))
	}
	if lg.out.Route != "" {
		attrs = append(attrs, slog.String("route", lg.out.Route))
	}
	if served := lg.out.Candidate.Model; lg.out.Committed && served != "" && served != lg.model {
		attrs = append(attrs, slog.String("answered_by", served)) // a lighter (or another) model answered
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// reqLog is what the request's log line says.
type reqLog struct {
	key    *config.GatewayKey
	model  string
	out    policy.Outcome
	tokens atomic.Int64 // input and output tokens of its attempts, for the key's day
}

// reject answers a request the gateway itself refuses, in the provider's shape.
func reject(w http.ResponseWriter, ep wire.Endpoint, status int, msg string) string {
	_, body := formats.WireOf(ep).ErrorBody(classify.BadRequest, msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
	return "rejected"
}

// serve reads one client request, hands it to the driver with a send that
// goes to the candidate's provider, and answers the client with what the
// driver ended on. It returns the outcome label for metrics.
//
// A stream is relayed from deep inside the driver's call (Send), so every
// frame on the way there is held by each open stream's goroutine: the
// steps before and after the driver are functions of their own, and what
// the request's attempts share is one exchange on the heap (BENCHMARKS.md:
// peak RSS with 1,000 open streams).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, ep wire.Endpoint, st *gwState, lg *reqLog, b *budget) string {
	x, outcome := s.prepare(w, r, ep, st, lg)
	if x == nil {
		return outcome
	}
	x.budget = b
	lg.out = st.engine.Run(r.Context(), &x.call)
	return x.finish()
}

// exchange is one client request on its way through the driver.
type exchange struct {
	s *Server
	// st is the configuration and engine the request was pinned to as it
	// started: every step of it reads this one
	st   *gwState
	w    http.ResponseWriter
	r    *http.Request
	ep   wire.Endpoint
	body *wire.Body
	opts send.Asks
	lg   *reqLog
	call policy.Call
	// cross is the request's cross-vendor steps' (Call.Cross, and the
	// attempts' requests)
	cross *send.Crossing
	// secrets are the configuration's and the request's own credential:
	// taken out of what an upstream says before the client, a log or a
	// record sees it
	secrets redact.Secrets
	// budget is what the request may hold of its answers
	budget send.Budget
}

// prepare reads and checks the request and makes its exchange; nil, with
// the outcome, when the gateway refused it.
func (s *Server) prepare(w http.ResponseWriter, r *http.Request, ep wire.Endpoint, st *gwState, lg *reqLog) (*exchange, string) {
	raw, outcome := readBody(w, r, ep, st)
	if outcome != "" {
		return nil, outcome
	}
	if ep.Cloud != "" { // Bedrock's or Vertex AI's: the model in the path
		model, ok := cloudModel(w, ep, st.cfg, r.PathValue("model"))
		if !ok {
			return nil, "rejected"
		}
		var err error
		if raw, err = cloudRequest(ep, r, raw, model); err != nil {
			return nil, reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: %v; nothing was sent upstream", err))
		}
	}
	body, err := wire.ParseBody(ep, raw)
	if err != nil {
		return nil, reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: %v; nothing was sent upstream", err))
	}
	if model, ok := responses.Spilled(body.Previous); ok {
		// it continues an answer another vendor's model gave: OpenAI never
		// had it, and nothing else stored it
		status, b := responses.NotStored(body.Previous, model)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(b)
		return nil, "rejected"
	}
	if ep.ModelInPath { // Gemini: /v1beta/models/MODEL:METHOD
		body.Model, _, _ = strings.Cut(r.PathValue("call"), ":")
		if err := config.CheckPathModel(body.Model); err != nil {
			return nil, reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: %v; nothing was sent upstream", err))
		}
	}
	if body.Model == "" {
		return nil, reject(w, ep, http.StatusBadRequest, `spillway: the request has no "model"; name one of the configured models (spillway config check lists them)`)
	}
	lg.model = body.Model
	if chain, ok := allowed(st.cfg, lg.key, body.Model); !ok {
		refuse(w, ep, http.StatusForbidden, classify.Auth, fmt.Sprintf("spillway: key %s may use chains %s; %s is in chain %q", lg.key.Name, strings.Join(lg.key.Chains, ", "), body.Model, chain), 0)
		return nil, "refused"
	}
	opts, err := send.ReadAsks(r.Header, send.Asks{})
	if err != nil {
		return nil, reject(w, ep, http.StatusBadRequest, "spillway: "+err.Error())
	}
	x := &exchange{s: s, st: st, w: w, r: r, ep: ep, body: body, opts: opts, lg: lg, secrets: st.secrets.With(callerSecrets(r)...)}
	x.call = policy.Call{
		Request: policy.Request{Model: body.Model, Type: ep.Format, MinTier: opts.MinTier, NoFallback: opts.NoFallback,
			InputTokens: len(raw) / 4, Tokens: body.Tokens, Budget: opts.Budget, Via: ep.Via, SignIn: signedIn(st.cfg, ep, r), Keyless: ep.Cloud != ""},
		Source: events.SourceGateway, Endpoint: ep.Path, Stream: body.Stream, ReqBytes: int64(len(raw)),
		Key: wire.CallerKey(r), Watchdogs: true, ChargeFailures: true, Events: events.SinkFunc(x.record),
		Send: x.send, OnSwitch: x.switched,
	}
	x.cross = send.NewCrossing(st.cfg, ep, body, r.URL.RawQuery, st.crosses)
	x.call.Cross = x.cross.Check
	return x, ""
}

// readBody reads r's body, up to gateway.max_body_mb (st's); past it the
// answer is 413 (every route's, in its format), and the outcome label says
// what was answered ("" when the body is read).
func readBody(w http.ResponseWriter, r *http.Request, ep wire.Endpoint, st *gwState) ([]byte, string) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, st.maxBody()))
	if err == nil {
		return raw, ""
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, errBusy):
		busy(w, ep)
		return nil, "busy"
	case errors.As(err, &mbe):
		return nil, tooLarge(w, ep, st.cfg)
	}
	return nil, reject(w, ep, http.StatusBadRequest, "spillway: could not read the request body: "+err.Error())
}

// tooLarge answers a request whose body is over gateway.max_body_mb: 413.
func tooLarge(w http.ResponseWriter, ep wire.Endpoint, cfg *config.Config) string {
	return reject(w, ep, http.StatusRequestEntityTooLarge, fmt.Sprintf("spillway: the request body is larger than %d MiB (gateway.max_body_mb); compact the conversation or raise the limit", cfg.Gateway.MaxBodyMB))
}

// record takes an attempt's record: what the provider spent (an attempt
// that answered, or one that broke after output; a refusal, 429, 529 or
// 5xx, costs nothing) counts toward the key's day.
func (x *exchange) record(rec events.Record) {
	if rec.Class == string(classify.OK) || rec.OutputTokens > 0 {
		x.lg.tokens.Add(int64(rec.EstInputTokens + rec.OutputTokens))
	}
	if rec.Error != "" {
		rec.Error = x.secrets.String(rec.Error)
	}
	x.s.record(x.st, rec)
}

func (x *exchange) switched(from, to policy.Candidate, why classify.Verdict) {
	x.s.switched(x.st, x.call.ID, from, to, why)
}

// finish answers the client with what the driver ended on.
func (x *exchange) finish() string {
	s, w, ep, out := x.s, x.w, x.ep, &x.lg.out
	switch {
	case out.Unfinished:
		// the stream broke after output and could not be continued: it
		// ends with the route's last word and the protocol's error event
		send.End(x.writer(), ep, *out, x.secrets.String(out.Reason))
		return string(out.Verdict.Class)
	case out.Committed:
		return string(out.Verdict.Class)
	case out.Err != nil:
		return "client_gone"
	}
	return s.giveUp(w, ep, x.st, x.body, *out, x.secrets)
}

// passThrough sends a request that needs no driver (Gemini's countTokens)
// to model's provider as it came, and its answer back.
func (s *Server) passThrough(w http.ResponseWriter, r *http.Request, model, method string) {
	ep := wire.Endpoint{Format: wire.Gemini, Kind: wire.Kind(method), Upstream: "/v1beta/models/{model}:" + method, ModelInPath: true}
	st := s.stateOf(r.Context()) // (handleGemini pinned it)
	r, held, ok := s.hold(w, r, ep, st)
	defer s.giveHeld(held)
	if !ok {
		return
	}
	cfg := st.cfg
	deps := cfg.Deployments(model)
	raw, outcome := readBody(w, r, ep, st)
	if outcome != "" {
		return
	}
	if len(deps) == 0 {
		reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: model %q is not in the configuration (spillway config check lists the models)", model))
		return
	}
	if t := cfg.ModelType(model); t != ep.Format {
		// the request and its key are Gemini's: they go to a Gemini
		// provider or nowhere (a caller's key never reaches another vendor)
		reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: model %q is %s's, not Gemini's: countTokens counts a Gemini model's tokens; nothing was sent upstream", model, t))
		return
	}
	body, err := wire.ParseBody(ep, raw)
	if err == nil {
		err = config.CheckPathModel(model)
	}
	if err != nil {
		reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: %v; nothing was sent upstream", err))
		return
	}
	cand := policy.Candidate{Model: model, Upstream: deps[0].Upstream, Provider: deps[0].Provider, Format: wire.Gemini}
	up, err := send.NewRequest(r.Context(), cfg, ep, body, cand, r.Header, r.URL.RawQuery)
	if err != nil {
		reject(w, ep, http.StatusBadRequest, err.Error())
		return
	}
	resp, err := s.rt.RoundTrip(up)
	if err != nil {
		_, b := formats.WireOf(ep).ErrorBody(classify.Network, "spillway: "+redact.String(err.Error()))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		w.Write(b)
		return
	}
	defer resp.Body.Close()
	secrets := st.secrets.With(callerSecrets(r)...)
	wire.CopyHeaders(w.Header(), resp.Header)
	scrub(w.Header(), cfg, secrets)
	if resp.StatusCode/100 != 2 { // an error answer may echo a key
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		w.WriteHeader(resp.StatusCode)
		w.Write(secrets.Bytes(b))
		return
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, io.LimitReader(resp.Body, send.MaxAnswer))
}

// send is the gateway's half of an attempt: the request to the candidate's
// provider, and the answer to the client once it may have it.
func (x *exchange) send(ctx context.Context, a *policy.Attempt) (res policy.Result) {
	up, so, taken := x.request(ctx, a, &res)
	if taken > 0 { // a continuation's body, held while its attempt lasts
		defer x.budget.Give(taken)
	}
	if up == nil {
		return res
	}
	var ans *send.Answer
	ans, res = send.Exchange(a, x.s.rt, up, x.ep, so)
	switch {
	case ans == nil:
	case ans.Stream != nil:
		if a.Continues == nil { // a continuation's headers went out with the answer it continues
			x.header(a, ans, true)
		}
		ans.Stream.Relay(x.writer(), &res)
	case a.Continues != nil:
		// the stream it continues is open: a whole answer cannot go on it
		res.Verdict = classify.Verdict{Class: classify.ServerError, Message: "the continuation came back as a whole answer, not a stream"}
	default:
		x.header(a, ans, false)
		x.w.Write(ans.Body)
		res.Committed = true
	}
	return res
}

// request is the upstream request of attempt a (a continuation's carries
// the text the client has as the partial assistant turn, and its stream
// is spliced onto the old); nil, with why in res, when there is none. It
// reports what it took of the budget for a continuation's body: the
// attempt gives it back when it ends.
func (x *exchange) request(ctx context.Context, a *policy.Attempt, res *policy.Result) (_ *http.Request, _ send.Options, taken int64) {
	body := x.body
	goesOn := formats.WireOf(x.ep).Continuation() // nil: a format whose broken answers are not continued
	so := send.Options{Hold: x.opts.HoldFor(x.st.cfg, a.Candidate.Model), Track: goesOn != nil && body.Stream, Budget: x.budget}
	if a.Continues != nil {
		rs, _ := a.Resume.(*send.Resume)
		if rs == nil || goesOn == nil {
			*res = policy.Result{Verdict: classify.Verdict{Class: classify.BadRequest, Message: "nothing to continue from"}, NotSent: true}
			return nil, so, 0
		}
		cont, err := goesOn.Prefill(body, strings.TrimRight(rs.Text, " \t\r\n"))
		if err == nil && x.budget != nil {
			if x.budget.Take(int64(len(cont.Raw))) {
				taken = int64(len(cont.Raw))
			} else {
				// the continuation's body is held while it is sent: past
				// the request's memory, the answer is not continued
				err = fmt.Errorf("not continued: a continuation of %d KiB is more than the request may hold (gateway.max_body_mb, gateway.max_inflight_mb)", (len(cont.Raw)+1023)>>10)
			}
		}
		if err != nil {
			*res = policy.Result{Verdict: classify.Verdict{Class: classify.BadRequest, Message: err.Error()}, NotSent: true}
			return nil, so, taken
		}
		body, so.Splice, so.Hold = cont, rs, config.Hold{}
	}
	cross := x.cross
	if body != x.body { // a continuation's (never another vendor's: Track is off there)
		cross = send.NewCrossing(x.st.cfg, x.ep, body, x.r.URL.RawQuery, x.st.crosses)
	}
	up, turn, err := cross.Attempt(ctx, a.Candidate, x.r.Header, x.r.URL.RawQuery)
	if err != nil {
		*res = policy.Result{Verdict: classify.Verdict{Class: classify.BadRequest, Message: err.Error()}, NotSent: true}
		if a.Candidate.Format != x.ep.Format { // another vendor's step it cannot take: passed over
			res.Verdict.Code = policy.Untranslatable
		}
		return nil, so, taken
	}
	if turn != nil { // another vendor's model: its answer comes back translated, never continued
		so.Turn, so.Track = turn, false
		turn.MaxHeld = x.st.maxBody() // (and what it keeps counts in the budget)
	}
	return up, so, taken
}

// writer is where the relay writes the request's stream: the client,
// each write bounded by timeouts.idle, an error event scrubbed of the
// secrets.
func (x *exchange) writer() send.Writer {
	return send.Writer{W: x.w, Ctx: x.r.Context(), Idle: x.st.cfg.Timeouts.Idle.D(), Scrub: x.secrets.Bytes}
}

// header sends the answer's status and headers, with the route's.
func (x *exchange) header(a *policy.Attempt, ans *send.Answer, stream bool) {
	h := x.w.Header()
	wire.CopyHeaders(h, ans.Resp.Header)
	scrub(h, x.st.cfg, x.secrets)
	send.Answered(h, a, stream)
	x.w.WriteHeader(ans.Resp.StatusCode)
}

// giveUp answers the client when the driver gave up (st is the state the
// request was pinned to).
func (s *Server) giveUp(w http.ResponseWriter, ep wire.Endpoint, st *gwState, body *wire.Body, out policy.Outcome, secrets redact.Secrets) string {
	class := out.Verdict.Class
	out.Reason = secrets.String(out.Reason)
	s.log.Warn("request failed", "request_id", out.ID, "class", class, "route", out.Route, "reason", out.Reason)
	h := w.Header()
	// Codex reconnects to an HTTP 5xx and sends the request again (each
	// time a walk of the whole chain), so a streaming Responses request
	// spillway gives up on gets the event form, with the code Codex
	// prints as spillway says it (format.Wire.GiveUpFrame). Only an upstream's own
	// answer for a failure no retry fixes goes as it came (a 4xx, or its
	// own failed stream): Codex acts on it itself (a quota's message, a
	// context window it compacts, a sign-in it refreshes) and does not
	// resend it.
	if cw := formats.WireOf(ep); cw.GivesUpInStream() && body.Stream && !upstreamRefusal(out) {
		send.SetRoute(h, out.ID, out.Route, out.Attempts, "")
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		// a response of its own: spillway's id for the request, the model asked for
		rsp := wire.Responding{ID: "resp_spillway_" + out.ID, Model: body.Model, CreatedAt: st.engine.Clock().Now().Unix()}
		w.Write(cw.GiveUpFrame(class, out.Reason, rsp))
		return string(class)
	}
	status, hh, b := send.GiveUp(ep, out)
	scrub(hh, st.cfg, secrets)
	for k, vs := range hh {
		h[k] = vs
	}
	b = secrets.Bytes(b) // an upstream's own answer may echo a key
	send.SetRoute(h, out.ID, out.Route, out.Attempts, "")
	w.WriteHeader(status)
	w.Write(b)
	return string(class)
}

// accountHeaders describe the provider account a team gateway's key
// belongs to: a team member has no business with them.
var accountHeaders = []string{"Set-Cookie", "Openai-Organization", "Openai-Project", "Anthropic-Organization-Id"}

// scrub makes an upstream's headers fit for the client: without the
// account's headers on a team gateway (cfg's gateway.keys: the account is
// the team's, not the client's), and without any known secret.
func scrub(h http.Header, cfg *config.Config, secrets redact.Secrets) {
	if len(cfg.Gateway.Keys) > 0 {
		for _, k := range accountHeaders {
			h.Del(k)
		}
	}
	secrets.Header(h)
}

// upstreamRefusal reports a give-up that passes the upstream's own answer
// on (send.GiveUp: a class no retry can fix), but a 5xx: a 4xx, or a
// stream of the upstream's own that failed at 200 (response.failed with
// context_length_exceeded or insufficient_quota: Codex acts on those
// codes itself).
func upstreamRefusal(out policy.Outcome) bool {
	f, ok := out.Result.Detail.(*send.Failure)
	return ok && policy.FailFast(out.Verdict.Class) && f.Status < 500
}

// switched notes a move to another model (metrics, status, log) of a
// request pinned to st.
func (s *Server) switched(st *gwState, id string, from, to policy.Candidate, why classify.Verdict) {
	s.metrics.fallbacks.WithLabelValues(st.label(from.Model), st.label(to.Model), string(why.Class)).Inc()
	ts := st.engine.Clock().Now().UTC()
	s.noteFallback(Fallback{TS: ts, RequestID: id, From: from.Model, To: to.Model, Class: string(why.Class)})
	if s.dash != nil {
		s.dash.Fallback(ts, id, from.Model, to.Model, string(why.Class))
	}
	s.log.Info("fallback", "request_id", id, "from", from.Model, "to", to.Model, "class", why.Class)
}

// record counts an attempt of a request pinned to st in the metrics and
// passes its record on.
func (s *Server) record(st *gwState, rec events.Record) {
	model := st.label(rec.Model)
	s.metrics.attempts.WithLabelValues(model, rec.Class).Inc()
	if rec.Deployment != "" { // only configured models have deployments: the labels stay bounded
		s.metrics.deployed.WithLabelValues(model, rec.Deployment, rec.Class).Inc()
	}
	if rec.Status != 0 {
		s.metrics.ttfb.WithLabelValues(model).Observe(float64(rec.TTFBMS) / 1000)
	}
	s.events.Write(rec) // to the dashboard, in front of the event log, when there is one
}

// label is a model's metrics label: st's configured models by name, any
// other name a client sends as "other", so clients cannot grow the series.
func (st *gwState) label(model string) string {
	if _, ok := st.cfg.Models[model]; ok {
		return model
	}
	return "other"
}
