package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// call is one request on its way through the simulated provider.
type call struct {
	proto  protocol
	model  modelInfo
	stream bool
	key    string
	prompt string
	// prefix is a partial assistant turn the request ends with (an
	// Anthropic prefill): the answer goes on from it
	prefix   string
	inTokens int
	id       string
	// includeUsage: Chat Completions stream_options.include_usage
	includeUsage bool
	// convo is the request's conversation (tools, calls, results), read
	// for the provider's rules and for a script
	convo *convo
}

type usage struct {
	in, out int
	stream  bool // the answer was streamed (for the stats)
}

// failure is an answer that is not a success.
type failure struct {
	class      string // capacity, rate_limit, quota, auth, server_error, model_not_found, bad_request, context_length, too_large
	message    string // overrides the provider's usual text
	retryAfter time.Duration
	rate       *rateVerdict
	resetsAt   time.Time // usage_limit: when the plan's window resets
}

// protocol is one wire format's way of writing answers and errors.
type protocol interface {
	provider() string
	writeError(w http.ResponseWriter, c *call, f failure)
	// streams
	open(sw *stream, c *call) error
	token(sw *stream, c *call, i int, tok string) error
	streamError(sw *stream, c *call, f failure) error
	close(sw *stream, c *call, text string, u usage) error
	// failEarly reports a failure in the stream before any output, where the
	// provider puts it (response.failed after response.created, …).
	failEarly(sw *stream, c *call, f failure) error
	complete(w http.ResponseWriter, c *call, text string, u usage)
}

// stream writes SSE frames and flushes each; or, when frames is set,
// frames of another kind (Bedrock's event stream).
type stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	seq     int
	frames  framer
}

// framer writes a stream's events in a framing other than SSE.
type framer interface {
	// header sets the stream's headers (its Content-Type).
	header(h http.Header)
	// event writes the event name with its JSON data; v is what data was
	// made of.
	event(w io.Writer, name string, data []byte, v any) error
	// corrupt writes a broken frame (the malformed fault).
	corrupt(w io.Writer) error
}

func newStream(w http.ResponseWriter) *stream {
	return &stream{w: w, rc: http.NewResponseController(w)}
}

// newStream is a stream in c's framing: SSE, or its protocol's framer.
func (c *call) newStream(w http.ResponseWriter) *stream {
	sw := newStream(w)
	if f, ok := c.proto.(interface{ framer(c *call) framer }); ok {
		sw.frames = f.framer(c)
	}
	return sw
}

func (sw *stream) begin() {
	if sw.started {
		return
	}
	sw.started = true
	h := sw.w.Header()
	if sw.frames != nil {
		sw.frames.header(h)
		sw.w.WriteHeader(http.StatusOK)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	sw.w.WriteHeader(http.StatusOK)
}

// event writes one frame; name may be empty (data-only frames).
func (sw *stream) event(name string, v any) error {
	sw.begin()
	var data []byte
	switch x := v.(type) {
	case string:
		data = []byte(x)
	case []byte:
		data = x
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return err
		}
	}
	if sw.frames != nil {
		if err := sw.frames.event(sw.w, name, data, v); err != nil {
			return err
		}
		sw.seq++
		return sw.rc.Flush()
	}
	buf := make([]byte, 0, len(data)+len(name)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := sw.w.Write(buf); err != nil {
		return err
	}
	sw.seq++
	return sw.rc.Flush()
}

// raw writes bytes as they are (malformed frames).
func (sw *stream) raw(b string) error {
	sw.begin()
	if sw.frames != nil {
		if err := sw.frames.corrupt(sw.w); err != nil {
			return err
		}
		return sw.rc.Flush()
	}
	if _, err := sw.w.Write([]byte(b)); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// run takes a parsed request through keys, faults, limits and the pool, and
// answers it.
func (s *Server) run(w http.ResponseWriter, r *http.Request, c *call) {
	if sc, ok := s.clock.(*StepClock); ok {
		sc.tick()
	}
	s.countReceived(r, c)
	ctx := r.Context()

	switch s.keyState(c.key) {
	case "invalid":
		s.reject(w, c, failure{class: "auth"})
		return
	case "quota":
		s.reject(w, c, failure{class: "quota"})
		return
	}

	fault, answered := s.injectFault(ctx, w, c)
	if answered {
		return
	}
	turn, calls, ok := s.checkCall(w, c)
	if !ok {
		return
	}
	cost, ok := s.limit(w, c)
	if !ok {
		return
	}
	defer s.release(c.model.name, cost)
	s.count(c.model.name, func(st *ModelStats) {
		st.Starts = append(st.Starts, time.Now().UnixMilli())
		if len(st.Starts) > 1000 {
			st.Starts = st.Starts[len(st.Starts)-1000:]
		}
	})

	text, body, u := answerOf(c, turn, calls, s.scn.AnswerTokens)
	delay, first := s.pace(fault)
	u.stream = c.stream
	var served bool
	if !c.stream {
		served = s.completeNonStream(ctx, w, c, fault, text, body, u, first+delay*time.Duration(body.count()))
	} else {
		served = s.streamAnswer(ctx, w, c, fault, body, u, delay, first)
	}
	if served && turn != nil && turn.last {
		s.scriptDone(c.model.name)
	}
}

// countReceived counts the request, and the credential it came with, in
// its model's stats.
func (s *Server) countReceived(r *http.Request, c *call) {
	k := keyOf(r)
	if k == "" && strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		k = c.key // a SigV4 signature's access key id
	}
	fp := Fingerprint(k, r.Header.Get("Chatgpt-Account-Id"))
	s.count(c.model.name, func(st *ModelStats) {
		st.Received++
		if st.Credentials == nil {
			st.Credentials = map[string]int{}
		}
		st.Credentials[fp]++
	})
}

// reject answers c with the failure f, counted as a rejection of its class.
func (s *Server) reject(w http.ResponseWriter, c *call, f failure) {
	s.count(c.model.name, func(st *ModelStats) { st.Rejected[f.class]++ })
	c.proto.writeError(w, c, f)
}

// injectFault is the fault the call meets (one queued for it, else a random
// one), counted; answered reports that the fault has answered the call
// already (an error, a reset, a stall). A fault that acts later (slow,
// midstream, one after some tokens) is returned with answered false.
func (s *Server) injectFault(ctx context.Context, w http.ResponseWriter, c *call) (fault *Fault, answered bool) {
	fault = s.takeFault(c)
	if fault == nil {
		fault = s.randomFault()
	}
	if fault == nil {
		return nil, false
	}
	s.count(c.model.name, func(st *ModelStats) {
		if st.Faults == nil {
			st.Faults = map[string]int{}
		}
		st.Faults[fault.Kind]++
	})
	ra := time.Duration(max(fault.RetryAfter, 0) * float64(time.Second))
	switch fault.Kind {
	case "capacity":
		s.count(c.model.name, func(st *ModelStats) { st.Rejected["capacity"]++ })
		s.capacityError(w, c, failure{class: "capacity", retryAfter: ra}, fault.Style)
		return fault, true
	case "usage_limit":
		in := time.Duration(fault.ResetsIn * float64(time.Second))
		if in <= 0 {
			in = time.Hour
		}
		s.reject(w, c, failure{class: "usage_limit", resetsAt: s.clock.Now().Add(in), message: fault.Message})
		return fault, true
	case "rate_limit", "quota", "auth", "server_error", "timeout", "context_length", "content_filter", "bad_request", "model_not_found":
		if ra == 0 && fault.Kind == "rate_limit" && !fault.NoRetryAfter() {
			ra = time.Second
		}
		s.reject(w, c, failure{class: fault.Kind, retryAfter: ra, message: fault.Message})
		return fault, true
	case "reset", "stall":
		if fault.AfterTokens == nil {
			s.count(c.model.name, func(st *ModelStats) { st.Rejected[faultClass(fault.Kind)]++ })
			if fault.Kind == "reset" {
				resetConn(w)
			} else {
				s.stall(ctx)
			}
			return fault, true
		}
	}
	return fault, false
}

// checkCall checks the request against the provider's rules and the
// model's context, and finds the script's turn for it and the tool calls
// that turn makes; ok is false when it answered the call with an error.
func (s *Server) checkCall(w http.ResponseWriter, c *call) (turn *scripted, calls []toolCall, ok bool) {
	if c.convo != nil {
		if msg := c.convo.check(c.proto.provider()); msg != "" {
			s.reject(w, c, failure{class: "bad_request", message: msg})
			return nil, nil, false
		}
	}
	turn = s.scriptTurn(c)
	if turn != nil && len(turn.Call) > 0 {
		var err error
		if calls, err = s.resolve(c.convo, turn.Call); err != nil {
			s.reject(w, c, failure{class: "bad_request", message: err.Error()})
			return nil, nil, false
		}
	}
	if c.inTokens > c.model.context {
		s.reject(w, c, failure{class: "context_length"})
		return nil, nil, false
	}
	return turn, calls, true
}

// limit applies the key's rate limits and the model's capacity to the
// call; ok is false when it answered the call with an error. The caller
// releases the cost it admitted.
func (s *Server) limit(w http.ResponseWriter, c *call) (cost float64, ok bool) {
	now := s.clock.Now()
	lim := s.limitsFor(c.key)
	if rv := s.checkRate(c.key, c.model.name, lim, c.inTokens, now); !rv.ok {
		real := s.toReal(rv.wait)
		s.reject(w, c, failure{class: "rate_limit", rate: &rv, retryAfter: real})
		return 0, false
	} else if lim.RPM > 0 || lim.TPM > 0 {
		s.rateHeaders(w.Header(), c, &rv)
	}

	cost = s.cost(c.model.name, c.inTokens)
	if ok, _ := s.admit(c.model.name, cost, now); !ok {
		s.count(c.model.name, func(st *ModelStats) { st.Rejected["capacity"]++ })
		s.capacityError(w, c, failure{class: "capacity"}, "")
		return 0, false
	}
	return cost, true
}

// answerOf is the answer to c: the script's turn when there is one, else
// the model's answer of answerTokens tokens, after the prefill c ends with;
// as text, as the content to send (the tool calls when the turn makes
// some) and its usage.
func answerOf(c *call, turn *scripted, calls []toolCall, answerTokens int) (text string, body content, u usage) {
	text = Answer(c.model.name, c.prompt, answerTokens)
	if turn != nil {
		text = strings.ReplaceAll(turn.Text, "{result}", c.convo.results(turn.results))
	}
	if c.prefix != "" {
		// a prefill: the rest of the answer, after as many tokens as
		// the partial turn has (from this model's answer, whichever
		// model wrote the start)
		all, done := Tokens(text), len(Tokens(c.prefix))
		text = strings.Join(all[min(done, len(all)):], "")
	}
	if len(calls) > 0 {
		cc := newCallContent(c, calls)
		body, u = cc, usage{in: c.inTokens, out: cc.tokens()}
		text = cc.text()
	} else {
		toks := Tokens(text)
		u = usage{in: c.inTokens, out: len(toks)}
		body = &textContent{c: c, text: text, toks: toks}
	}
	return text, body, u
}

// pace is the time between tokens and before the first one: the
// scenario's, or a slow fault's.
func (s *Server) pace(fault *Fault) (delay, first time.Duration) {
	delay = s.tokenDelay()
	if fault != nil && fault.Kind == "slow" {
		delay = 250 * time.Millisecond
		if fault.DelayMS > 0 {
			delay = time.Duration(fault.DelayMS) * time.Millisecond
		}
		first = time.Duration(fault.FirstDelayMS) * time.Millisecond
	}
	return delay, first
}

// completeNonStream answers with the whole of body, after wait (the time
// its tokens take), or with the fault's broken answer; it reports whether
// the answer was served.
func (s *Server) completeNonStream(ctx context.Context, w http.ResponseWriter, c *call, fault *Fault, text string, body content, u usage, wait time.Duration) bool {
	if !s.sleep(ctx, wait) {
		return false
	}
	if fault != nil {
		switch fault.Kind {
		case "midstream", "reset":
			// the answer starts, then the connection is cut mid-body
			s.count(c.model.name, func(st *ModelStats) { st.Rejected["network"]++ })
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"id":"` + c.id + `","object":`))
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		case "stall":
			s.count(c.model.name, func(st *ModelStats) { st.Rejected["timeout"]++ })
			s.stall(ctx)
			return false
		case "truncated":
			// the headers promise the whole answer; the connection then
			// closes cleanly halfway through it
			s.count(c.model.name, func(st *ModelStats) { st.Rejected["truncated"]++ })
			body := `{"id":"` + c.id + `","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"}}]}`
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(body[:len(body)/2]))
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		case "malformed":
			s.count(c.model.name, func(st *ModelStats) { st.Rejected["malformed"]++ })
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"id":"` + c.id + `","choices":[{"index":0,"message":{"role":"assistant","content":"` + text[:len(text)/2]))
			return false
		}
	}
	body.whole(w, u)
	s.served(c, u)
	return true
}

// served counts an answer served whole.
func (s *Server) served(c *call, u usage) {
	s.count(c.model.name, func(st *ModelStats) {
		st.Served++
		st.TokensIn += u.in
		st.TokensOut += u.out
		if u.stream {
			st.Streamed++
		}
	})
}

// streamAnswer streams body: its opening, its pieces (tokens, or a call's
// argument deltas) a delay apart, and its end, or the fault's broken
// stream; it reports whether the whole stream was served.
func (s *Server) streamAnswer(ctx context.Context, w http.ResponseWriter, c *call, fault *Fault, body content, u usage, delay, first time.Duration) bool {
	sw := c.newStream(w)
	if err := body.open(sw); err != nil {
		return false
	}
	// the headers go out as the stream opens, as a provider's do: the
	// client's wait for the first output starts then, not at the first frame
	sw.begin()
	_ = sw.rc.Flush()
	if !s.sleep(ctx, first) {
		return false
	}
	n := body.count()
	failAt := -1
	if fault != nil {
		switch fault.Kind {
		case "reset", "stall", "midstream", "malformed", "truncated":
			failAt = 3
			if fault.AfterTokens != nil {
				failAt = *fault.AfterTokens
			}
			failAt = min(failAt, n)
		}
	}
	for i := range n {
		if i == failAt {
			s.streamFault(ctx, sw, c, fault)
			return false
		}
		if i > 0 && !s.sleep(ctx, delay) {
			return false
		}
		if err := body.piece(sw, i); err != nil {
			return false
		}
	}
	if failAt == n {
		s.streamFault(ctx, sw, c, fault)
		return false
	}
	if err := body.close(sw, u); err != nil {
		return false
	}
	s.served(c, u)
	return true
}

func (s *Server) streamFault(ctx context.Context, sw *stream, c *call, fault *Fault) {
	s.count(c.model.name, func(st *ModelStats) { st.Rejected[faultClass(fault.Kind)]++ })
	switch fault.Kind {
	case "reset":
		panic(http.ErrAbortHandler) // the stream stops without its end
	case "stall":
		s.stall(ctx)
	case "midstream":
		class := fault.Error
		if class == "" {
			class = "capacity"
		}
		_ = c.proto.streamError(sw, c, failure{class: class})
	case "malformed":
		_ = sw.raw("data: {\"type\":\"response.output_text.delta\",\"delta\":\"unterminated\n\nevent: \x00garbage\ndata: }{\n\n")
	case "truncated":
		// a clean end of the connection with no final event (no [DONE],
		// no message_stop, no response.completed)
	}
}

// cloudOf is the cloud c came through, nil for a vendor's API.
func cloudOf(c *call) *cloudCall {
	switch p := c.proto.(type) {
	case anthropicProto:
		return p.cloud
	case geminiProto:
		return p.cloud
	case geminiArray:
		return p.cloud
	}
	return nil
}

func faultClass(kind string) string {
	switch kind {
	case "reset":
		return "network"
	case "stall":
		return "timeout"
	case "midstream":
		return "capacity"
	}
	return kind
}

// capacityError answers a full pool in the provider's place for this call.
func (s *Server) capacityError(w http.ResponseWriter, c *call, f failure, style string) {
	if style == "" {
		style = s.scn.CapacityStyle
	}
	if style == "auto" || style == "" {
		style = "status"
		if c.stream && c.proto.provider() == "openai-responses" {
			style = "event"
		}
	}
	if style == "event" && c.stream {
		_ = c.proto.failEarly(c.newStream(w), c, f)
		return
	}
	c.proto.writeError(w, c, f)
}

// randomFault draws the scenario's network faults.
func (s *Server) randomFault() *Fault {
	n := s.scn.Network
	switch {
	case s.chance(n.Reset):
		return &Fault{Kind: "reset"}
	case s.chance(n.Stall):
		zero := 0
		return &Fault{Kind: "stall", AfterTokens: &zero}
	case s.chance(n.Midstream):
		return &Fault{Kind: "midstream"}
	}
	return nil
}

// stall holds the request open, silent, until the client gives up, the
// scenario's stall_for passes, or the server closes.
func (s *Server) stall(ctx context.Context) {
	limit := s.scn.Network.StallFor.D()
	if limit <= 0 {
		limit = 10 * time.Minute
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-s.done:
	case <-t.C:
	}
}

// resetConn closes the connection with a TCP reset before any byte.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	case <-t.C:
		return true
	}
}

func (s *Server) tokenDelay() time.Duration {
	if s.tokenRate <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / s.tokenRate)
}

// toReal converts a simulated duration into the real time a client waits.
func (s *Server) toReal(d time.Duration) time.Duration {
	f := s.clock.Factor()
	if f <= 0 {
		f = 1
	}
	return time.Duration(float64(d) / f)
}

func (s *Server) keyState(key string) string {
	if key == "" {
		return "invalid"
	}
	if k, ok := s.scn.Keys[key]; ok && k.State != "" {
		return k.State
	}
	return "ok"
}

func (s *Server) limitsFor(key string) Limits {
	lim := s.scn.RateLimit
	if k, ok := s.scn.Keys[key]; ok {
		if k.RPM > 0 {
			lim.RPM = k.RPM
		}
		if k.TPM > 0 {
			lim.TPM = k.TPM
		}
	}
	return lim
}

// rateHeaders writes the OpenAI and Anthropic rate-limit headers, in real
// time, for the protocol of c.
func (s *Server) rateHeaders(h http.Header, c *call, rv *rateVerdict) {
	if rv.limitReq <= 0 && rv.limitTok <= 0 {
		return
	}
	resetReq, resetTok := s.toReal(rv.resetReq), s.toReal(rv.resetTok)
	if cloudOf(c) != nil {
		return // the clouds send no rate-limit headers
	}
	switch c.proto.provider() {
	case "anthropic":
		now := time.Now().UTC()
		if rv.limitReq > 0 {
			h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(rv.limitReq))
			h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(rv.remainReq))
			h.Set("anthropic-ratelimit-requests-reset", now.Add(resetReq).Format(time.RFC3339))
		}
		if rv.limitTok > 0 {
			h.Set("anthropic-ratelimit-input-tokens-limit", strconv.Itoa(rv.limitTok))
			h.Set("anthropic-ratelimit-input-tokens-remaining", strconv.Itoa(rv.remainTok))
			h.Set("anthropic-ratelimit-input-tokens-reset", now.Add(resetTok).Format(time.RFC3339))
		}
	default:
		if rv.limitReq > 0 {
			h.Set("x-ratelimit-limit-requests", strconv.Itoa(rv.limitReq))
			h.Set("x-ratelimit-remaining-requests", strconv.Itoa(rv.remainReq))
			h.Set("x-ratelimit-reset-requests", roundDur(resetReq).String())
		}
		if rv.limitTok > 0 {
			h.Set("x-ratelimit-limit-tokens", strconv.Itoa(rv.limitTok))
			h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(rv.remainTok))
			h.Set("x-ratelimit-reset-tokens", roundDur(resetTok).String())
		}
	}
}

// retryHeaders sets retry-after (whole seconds, rounded up, as the HTTP
// header allows) and retry-after-ms (exact).
func retryHeaders(h http.Header, d time.Duration) {
	if d <= 0 {
		return
	}
	h.Set("retry-after", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	h.Set("retry-after-ms", strconv.FormatInt(int64(math.Ceil(float64(d)/float64(time.Millisecond))), 10))
}

func roundDur(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}
