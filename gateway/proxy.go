package gateway

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
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/provider"
	"github.com/spillway/spillway/redact"
)

// request is one client request being served.
type request struct {
	id        string
	ep        endpoint
	body      map[string]json.RawMessage
	raw       []byte
	model     string
	stream    bool
	keyHash   string
	started   time.Time
	attempts  int
	lastModel string
	budget    time.Duration // the most this request may wait in all
}

// hopHeaders are not forwarded in either direction.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Host": true,
	"Content-Length": true, "Accept-Encoding": true, "Content-Encoding": true,
}

func (s *Server) proxy(w http.ResponseWriter, r *http.Request, ep endpoint) {
	s.inflight.Add(1)
	s.metrics.inflight.Inc()
	defer func() { s.inflight.Add(-1); s.metrics.inflight.Dec() }()
	s.total.Add(1)
	req := &request{id: newID(), ep: ep, started: time.Now(), keyHash: keyHash(r)}
	outcome := s.serve(w, r, req)
	s.metrics.requests.WithLabelValues(ep.path, outcome).Inc()
	s.metrics.latency.WithLabelValues(ep.path).Observe(time.Since(req.started).Seconds())
}

// reject answers a request the gateway itself refuses, in the provider's shape.
func reject(w http.ResponseWriter, ep endpoint, status int, msg string) string {
	_, body := errorBody(ep, classify.BadRequest, msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
	return "rejected"
}

// serve runs the plan for one request and returns the outcome label.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, req *request) string {
	ep := req.ep
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return reject(w, ep, http.StatusRequestEntityTooLarge, fmt.Sprintf("spillway: the request body is larger than %d MiB (gateway.max_body_mb); compact the conversation or raise the limit", s.cfg.Gateway.MaxBodyMB))
		}
		return reject(w, ep, http.StatusBadRequest, "spillway: could not read the request body: "+err.Error())
	}
	req.raw = raw
	// The body is decoded as a map with exact keys (as providers read it):
	// decoding only the fields routing needs into a struct would match
	// "MODEL" or "Model" too, and route on a model the provider never sees.
	if err := json.Unmarshal(raw, &req.body); err != nil || req.body == nil {
		return reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: the request body is not a JSON object (%v); nothing was sent upstream", jsonErr(err)))
	}
	if m, ok := req.body["model"]; !ok || json.Unmarshal(m, &req.model) != nil || req.model == "" {
		return reject(w, ep, http.StatusBadRequest, `spillway: the request has no "model"; name one of the configured models (spillway config check lists them)`)
	}
	if st, ok := req.body["stream"]; ok {
		_ = json.Unmarshal(st, &req.stream)
	}
	var minTier config.Tier
	if h := r.Header.Get("X-Spillway-Min-Tier"); h != "" {
		t, err := config.ParseTier(h)
		if err != nil {
			return reject(w, ep, http.StatusBadRequest, "spillway: X-Spillway-Min-Tier: "+err.Error())
		}
		minTier = t
	}
	noFallback := r.Header.Get("X-Spillway-No-Fallback") == "1" || strings.EqualFold(r.Header.Get("X-Spillway-No-Fallback"), "true")
	// A batch client that would rather wait than fail names its own wait
	// budget (the configuration's retry.budget suits interactive agents).
	req.budget = s.cfg.Retry.Budget.D()
	if h := r.Header.Get("X-Spillway-Budget"); h != "" {
		d, err := time.ParseDuration(h)
		if err != nil || d <= 0 {
			return reject(w, ep, http.StatusBadRequest, fmt.Sprintf("spillway: X-Spillway-Budget: %q is not a positive duration such as 90s or 30m", h))
		}
		req.budget = d
	}

	plan := s.engine.NewPlan(policy.Request{Model: req.model, Type: ep.typ, MinTier: minTier, NoFallback: noFallback, InputTokens: len(raw) / 4, Budget: req.budget})
	step := plan.Start()
	var last *attemptResult
	ctx := r.Context()
	for {
		if step.Action == policy.Fail {
			return s.fail(w, req, plan, step, last)
		}
		if step.Wait > 0 {
			if err := s.engine.Clock().Sleep(ctx, step.Wait); err != nil {
				return "client_gone"
			}
		}
		res := s.attempt(ctx, w, r, req, plan, step)
		if res.final { // the client got an answer (success or a broken stream)
			return string(res.verdict.Class)
		}
		if ctx.Err() != nil {
			return "client_gone"
		}
		last = res
		prev := step.Candidate
		step = plan.After(res.verdict)
		if res.verdict.Class == classify.RateLimit {
			s.engine.Pacer.SlowDown(prev.Key(), req.keyHash)
		}
		if step.Action == policy.Send && step.Candidate.Model != prev.Model {
			s.metrics.fallbacks.WithLabelValues(s.label(prev.Model), s.label(step.Candidate.Model), string(res.verdict.Class)).Inc()
			s.noteFallback(Fallback{TS: time.Now().UTC(), RequestID: req.id, From: prev.Model, To: step.Candidate.Model, Class: string(res.verdict.Class)})
			s.log.Info("fallback", "request_id", req.id, "from", prev.Model, "to", step.Candidate.Model, "class", res.verdict.Class)
		}
	}
}

// attemptResult is one upstream attempt's outcome.
type attemptResult struct {
	verdict classify.Verdict
	final   bool // the response went to the client
	local   bool // refused here (breaker open): nothing was sent, nothing is logged
	status  int
	header  http.Header
	body    []byte // an error body kept for passing through
}

func (s *Server) attempt(ctx context.Context, w http.ResponseWriter, r *http.Request, req *request, plan *policy.Plan, step policy.Step) *attemptResult {
	cand := step.Candidate
	req.attempts++
	rec := events.Record{RequestID: req.id, Attempt: req.attempts, Source: events.SourceGateway, Provider: cand.Provider,
		Model: cand.Model, RequestedModel: req.model, Endpoint: req.ep.path, ReqBytes: int64(len(req.raw)),
		EstInputTokens: len(req.raw) / 4, Stream: req.stream, FallbackFrom: step.FallbackFrom, WaitMS: step.Wait.Milliseconds()}
	t0 := time.Now()
	res := &attemptResult{}
	defer func() {
		if res.local {
			req.attempts-- // not an attempt: nothing went upstream
			return
		}
		rec.TS = t0.UTC()
		rec.Class = string(res.verdict.Class)
		rec.LatencyMS = time.Since(t0).Milliseconds()
		if res.verdict.Class != classify.OK {
			rec.Error = redact.String(res.verdict.Message)
		}
		s.events.Write(rec)
		s.metrics.attempts.WithLabelValues(s.label(cand.Model), string(res.verdict.Class)).Inc()
	}()

	// A free slot for this model (pacing.max_concurrency) is waited for at
	// most the wait budget; past that the model counts as full.
	release, paced, err := s.engine.Pacer.Acquire(ctx, cand.Key(), req.keyHash, req.budget)
	rec.WaitMS += paced.Milliseconds()
	if err != nil {
		if ctx.Err() == nil {
			res.verdict = classify.Verdict{Class: classify.Capacity, Message: fmt.Sprintf("no free slot for %s within %s (pacing.max_concurrency)", cand.Model, req.budget)}
			return res
		}
		res.verdict = classify.Err(err)
		return res
	}
	defer release()
	done, ok := s.engine.Allow(cand.Key())
	if !ok {
		res.verdict, res.local = policy.Refused(cand.Key()), true
		return res
	}

	up, err := s.upstreamRequest(ctx, r, req, cand)
	if err != nil {
		res.verdict = classify.Verdict{Class: classify.BadRequest, Message: err.Error()}
		done(res.verdict)
		return res
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	up = up.WithContext(actx)
	// Headers must come within the first-token timeout on a stream (they
	// come at once when the provider is healthy), and within ten times that
	// for a whole answer (headers only come once it is generated).
	headerWait := s.cfg.Gateway.FirstToken.D()
	if !req.stream {
		headerWait *= 10
	}
	var timedOut atomic.Bool
	watchdog := time.AfterFunc(headerWait, func() { timedOut.Store(true); cancel() })
	resp, err := s.client.Do(up)
	watchdog.Stop()
	if err != nil {
		res.verdict = classify.Err(err)
		if timedOut.Load() {
			res.verdict = classify.Verdict{Class: classify.Timeout, Message: fmt.Sprintf("no response headers within %s", headerWait)}
		}
		done(res.verdict)
		return res
	}
	rec.Status = resp.StatusCode
	rec.TTFBMS = time.Since(t0).Milliseconds()
	s.metrics.ttfb.WithLabelValues(s.label(cand.Model)).Observe(time.Since(t0).Seconds())
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		res.status, res.header, res.body = resp.StatusCode, resp.Header, body
		res.verdict = classify.Classify(classify.Input{Status: resp.StatusCode, Header: resp.Header, Body: body, Provider: classify.Provider(cand.Type)})
		done(res.verdict)
		return res
	}

	hdr := func() {
		copyHeaders(w.Header(), resp.Header)
		s.routeHeaders(w.Header(), req, plan, cand, true)
	}
	if provider.IsSSE(resp.Header) {
		out := s.relay(ctx, cancel, w, resp, req, cand, hdr)
		res.verdict, res.final = out.verdict, out.committed
		rec.OutputTokens = out.outputTokens
		if !out.committed || out.verdict.Class == classify.OK || out.verdict.Class == classify.Capacity {
			done(out.verdict)
		} else {
			done(classify.Verdict{Class: classify.Network})
		}
		if out.verdict.Class == classify.OK {
			s.engine.Pacer.Recover(cand.Key(), req.keyHash)
		}
		return res
	}
	// A whole JSON answer: read it, then send it (a body that breaks midway
	// is a network failure the plan may retry; the client saw nothing yet).
	// The body may not stall for longer than the idle timeout, nor exceed
	// the size of any real answer.
	idle := s.cfg.Gateway.Idle.D()
	bodyDog := time.AfterFunc(idle, func() { timedOut.Store(true); cancel() })
	body, err := io.ReadAll(io.LimitReader(&progressReader{r: resp.Body, timer: bodyDog, idle: idle}, maxAnswer+1))
	bodyDog.Stop()
	if err == nil && len(body) > maxAnswer {
		err = fmt.Errorf("answer larger than %d MiB", maxAnswer>>20)
	}
	if err != nil {
		res.verdict = classify.Err(err)
		if timedOut.Load() {
			res.verdict = classify.Verdict{Class: classify.Timeout, Message: fmt.Sprintf("the answer stalled for %s (gateway.idle_timeout)", idle)}
		}
		done(res.verdict)
		return res
	}
	res.verdict = classify.Verdict{Class: classify.OK}
	rec.OutputTokens = outputTokens(body)
	done(res.verdict)
	s.engine.Pacer.Recover(cand.Key(), req.keyHash)
	hdr()
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
	res.final = true
	return res
}

// maxAnswer bounds a whole (non-streamed) answer kept in memory.
const maxAnswer = 256 << 20

// progressReader pushes a watchdog back each time bytes arrive.
type progressReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.timer.Reset(p.idle)
	}
	return n, err
}

// upstreamRequest builds the request to cand's provider.
func (s *Server) upstreamRequest(ctx context.Context, r *http.Request, req *request, cand policy.Candidate) (*http.Request, error) {
	prov, ok := s.cfg.Providers[cand.Provider]
	if !ok {
		return nil, fmt.Errorf("spillway: no provider %q configured for model %s", cand.Provider, cand.Model)
	}
	if cand.Type != "" && cand.Type != req.ep.typ {
		return nil, fmt.Errorf("spillway: model %s speaks %s, not %s", cand.Model, cand.Type, req.ep.typ)
	}
	body := req.raw
	if cand.Upstream != req.model {
		req.body["model"], _ = json.Marshal(cand.Upstream)
		b, err := json.Marshal(req.body)
		if err != nil {
			return nil, err
		}
		body = b
	}
	url := strings.TrimSuffix(prov.BaseURL, "/") + req.ep.upstream
	if r.URL.RawQuery != "" {
		url += "?" + r.URL.RawQuery
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		if hopHeaders[k] || strings.HasPrefix(k, "X-Spillway-") {
			continue
		}
		up.Header[k] = vs
	}
	if prov.Auth == "key" {
		up.Header.Del("Authorization")
		up.Header.Del("X-Api-Key")
		if cand.Type == "anthropic" {
			up.Header.Set("X-Api-Key", prov.APIKey.Value)
		} else {
			up.Header.Set("Authorization", "Bearer "+prov.APIKey.Value)
		}
	}
	up.ContentLength = int64(len(body))
	return up, nil
}

// routeHeaders sets X-Spillway-Model, -Attempts and -Route.
func (s *Server) routeHeaders(h http.Header, req *request, plan *policy.Plan, cand policy.Candidate, ok bool) {
	route := plan.RouteString()
	if ok {
		if route != "" {
			route += " > "
		}
		route += cand.Model + ":ok"
	}
	h.Set("X-Spillway-Model", cand.Model)
	h.Set("X-Spillway-Attempts", strconv.Itoa(req.attempts))
	h.Set("X-Spillway-Route", route)
	h.Set("X-Spillway-Request-Id", req.id)
}

// fail answers the client when the plan gives up.
func (s *Server) fail(w http.ResponseWriter, req *request, plan *policy.Plan, step policy.Step, last *attemptResult) string {
	class := step.Verdict.Class
	h := w.Header()
	s.routeHeaders(h, req, plan, step.Candidate, false)
	h.Del("X-Spillway-Model") // no model answered
	s.log.Warn("request failed", "request_id", req.id, "class", class, "route", plan.RouteString(), "reason", redact.String(step.Reason))
	// Fail-fast classes pass the upstream's own error through: it is the
	// most precise account of what is wrong with the key or the request.
	passThrough := map[classify.Class]bool{classify.Quota: true, classify.Auth: true, classify.BadRequest: true,
		classify.ContentFilter: true, classify.ModelNotFound: true, classify.ContextLength: true}
	if passThrough[class] && last != nil && last.status != 0 {
		copyHeaders(h, last.header)
		s.routeHeaders(h, req, plan, step.Candidate, false)
		h.Del("X-Spillway-Model")
		h.Set("X-Should-Retry", "false")
		w.WriteHeader(last.status)
		w.Write(last.body)
		return string(class)
	}
	// Codex prints "Selected model is at capacity" for a response.failed
	// with server_is_overloaded and does not retry it; for an HTTP 503 it
	// retries the whole chain four more times. So a Responses stream that
	// ran out of models gets the event form.
	if req.ep.kind == "responses" && req.stream && class == classify.Capacity {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		w.Write(streamErrorFrame(req.ep, class, step.Reason))
		return string(class)
	}
	status, body := errorBody(req.ep, class, step.Reason)
	if step.Verdict.Wait > 0 {
		h.Set("Retry-After", strconv.Itoa(int(step.Verdict.Wait.Seconds()+0.999)))
	}
	// We already spent the retry budget: ask SDKs (they honour
	// x-should-retry) not to multiply it.
	h.Set("X-Should-Retry", "false")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
	return string(class)
}

// label is a model's metrics label: configured models by name, any other
// name a client sends as "other", so clients cannot grow the series.
func (s *Server) label(model string) string {
	if _, ok := s.cfg.Models[model]; ok {
		return model
	}
	return "other"
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] {
			continue
		}
		dst[k] = vs
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keyHash identifies the client's credentials for pacing without keeping them.
func keyHash(r *http.Request) string {
	k := r.Header.Get("Authorization") + "\x00" + r.Header.Get("X-Api-Key")
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:6])
}

func jsonErr(err error) string {
	if err == nil {
		return "not an object"
	}
	return err.Error()
}

// outputTokens reads the output tokens of a whole JSON answer or of a
// stream frame (a Chat chunk, a message_delta, a response.completed whose
// usage sits inside "response"), whichever protocol, for the event log.
// Only the "usage" object is decoded: decoding the whole answer to find it
// was the largest cost of the gateway's own code in a profile at 1000
// req/s (BENCHMARKS.md). The object's key is searched from the end (usage
// follows the content in every provider's answer); a "usage" inside a
// string cannot match, as its quotes would be escaped.
func outputTokens(body []byte) int {
	var u struct {
		OutputTokens     int `json:"output_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	key := []byte(`"usage"`)
	for end := len(body); ; {
		i := bytes.LastIndex(body[:end], key)
		if i < 0 {
			return 0
		}
		rest := bytes.TrimLeft(body[i+len(key):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			obj := bytes.TrimLeft(rest[1:], " \t\r\n")
			if n := objectLen(obj); n > 0 && json.Unmarshal(obj[:n], &u) == nil {
				return max(u.OutputTokens, u.CompletionTokens)
			}
		}
		end = i
	}
}

// objectLen is the length of the JSON object b starts with, or 0 when b
// does not start with a complete one (strings and escapes respected).
func objectLen(b []byte) int {
	if len(b) == 0 || b[0] != '{' {
		return 0
	}
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}
