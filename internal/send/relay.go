package send

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// maxHeld bounds the opening events held before the first output.
const maxHeld = 1 << 20

// Options are what a front end asks of an event stream beyond holding its
// opening events.
type Options struct {
	// Hold keeps the output back after the first (a hold window): a break,
	// stall or malformed frame within it is a failure the caller never saw.
	Hold config.Hold
	// Track keeps what a continuation needs (the text of a Messages
	// answer), so that Resume can say how to go on after a break.
	Track bool
	// Splice, for an attempt that continues a broken answer, is where that
	// answer broke: this stream's opening is dropped and its content
	// blocks renumbered to go on from there.
	Splice *Resume
	// Turn, for a model of another format than the client's, is the
	// translation its answer comes back through.
	Turn *format.Turn
	// Budget is what the request may hold of its answer (the text a
	// continuation carries, a translation's state, the output held back);
	// nil: Limit(DefaultPerRequest).
	Budget Budget
}

// Stream is an upstream event stream whose output has started (or whose
// opening passed the hold limit): First is what to deliver first, then Next
// each following event, exactly as it came (renumbered, for a
// continuation). It judges as it goes: the stream's final event, an
// in-stream error event, usage, frames that do not parse, and a stream that
// ends or stalls before its final event. One goroutine reads it; there is
// no reader goroutine and no channel between the upstream and the caller.
type Stream struct {
	a *policy.Attempt
	// client is the endpoint the caller called (what it reads); from is
	// the candidate's, whose format the events come in
	client, from wire.Endpoint
	fw, cw       format.Wire // their formats, found once (fromWire, clientWire)
	resp         *http.Response
	body         io.ReadCloser // the upstream's, kept: a library caller's resp.Body becomes Body()
	rd           format.Events // the stream's events, as its provider frames them
	o            Options
	conv         *format.Stream // the translation, for another vendor's stream
	convHeld     int64          // what conv held, counted in mem

	// pump, while a hold window with a time limit is open and after it:
	// the events, read on a goroutine of their own so that the window can
	// end on time while the upstream is silent (quit stops it)
	pump chan read
	quit chan struct{}
	done chan struct{} // closed once the pump's goroutine ended (and released its reader)

	first []byte
	// firstHeld is what first holds of the budget, given back once it
	// is written (sent)
	firstHeld int64
	output    bool             // the first real output came (and the driver was told)
	err       error            // what cut the stream, when something did
	readEnd   error            // what ended the upstream's events (io.EOF at their end): every read after it says so
	terminal  bool             // the stream's final event (or an error event) came
	said      bool             // the route's last word went out (say)
	verdict   classify.Verdict // how the stream ended, once it has
	tokens    int              // what the stream's usage reported
	deltas    int              // the pieces of the answer passed on
	// rsp, for a Responses stream passed on as it came: what it told the
	// client of its response, which the failure spillway ends it with
	// repeats (a translated stream's own Stream keeps its)
	rsp wire.Responding

	// Messages answers, with Track: the text so far (at most MaxResume
	// bytes, its room taken from the budget), the block in flight
	text      []byte
	open      int // the content block in flight, -1 for none
	openText  bool
	otherKind bool    // a block other than text came (tool use, thinking): no continuation
	trim      string  // whitespace the continuation's prefix left out, to drop once
	lost      string  // why the answer can no longer be continued (its text passed what it may keep)
	resume    *Resume // the Resume handed out, once
	mem       meter   // what the stream holds of the request's budget
}

// errMalformed ends a stream whose upstream sent a frame that does not parse.
var errMalformed = errors.New("the upstream sent a malformed frame")

// malformed is the verdict for a frame that does not parse: the upstream's
// fault, as a server error is. It quotes none of the frame's data (what
// does not parse escapes redaction) and at most 40 bytes of its name.
func malformed(ev sse.Event) classify.Verdict {
	name := ev.Name
	if len(name) > 40 {
		name = name[:40]
	}
	return classify.Verdict{Class: classify.ServerError, Message: fmt.Sprintf("the upstream sent a malformed frame (event %q, %d bytes of data that do not parse)", name, len(ev.Data))}
}

// read is one event of a pumped stream, or what ended it.
type read struct {
	ev  sse.Event
	err error
}

// startPump reads the stream's events on a goroutine from here on.
func (s *Stream) startPump() {
	s.pump, s.quit, s.done = make(chan read, 16), make(chan struct{}), make(chan struct{})
	pump, quit, done, rd := s.pump, s.quit, s.done, s.rd // (endPump clears s.quit)
	go func() {
		// the reader's from here on: what it took of the budget goes back
		// once it ends, before Close returns (endPump waits for it)
		defer close(done)
		defer rd.Release()
		for {
			ev, err := rd.Next()
			// the reader's buffers are its own until its next event: an
			// event handed to another goroutine is a copy
			ev.Data, ev.Raw = bytes.Clone(ev.Data), bytes.Clone(ev.Raw)
			select {
			case pump <- read{ev, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

// next is the stream's next event; over reports that end closed first.
func (s *Stream) next(end <-chan struct{}) (ev sse.Event, err error, over bool) {
	if s.pump == nil {
		ev, err = s.rd.Next()
		return ev, err, false
	}
	select {
	case r := <-s.pump:
		return r.ev, r.err, false
	case <-end:
		return sse.Event{}, nil, true
	}
}

// Open takes resp, attempt a's 2xx event stream from an upstream that
// speaks from's format for a client of client's, and holds it until its
// first real output (see hold). It returns the stream, or, when the
// attempt failed before the caller saw anything, nil and the failure's
// Result (resp's body then closed).
func Open(a *policy.Attempt, resp *http.Response, client, from wire.Endpoint, o Options) (*Stream, policy.Result) {
	s := &Stream{a: a, client: client, from: from, resp: resp, o: o, mem: meter{b: o.Budget}}
	if s.mem.b == nil {
		s.mem.b = Limit(DefaultPerRequest)
	}
	if o.Turn != nil {
		s.from, s.conv = o.Turn.Target, o.Turn.NewStream()
	}
	if failed, ok := s.hold(); !ok {
		resp.Body.Close()
		if s.pump == nil { // (a pump's goroutine releases its reader: endPump waits for it)
			s.rd.Release() // what a large event took of the budget goes back: the next attempt has it
		}
		s.endPump()
		s.mem.release(0)
		return nil, failed
	}
	return s, policy.Result{Status: resp.StatusCode}
}

// hold reads the opening events until the first real output, and with a
// hold window on, on until the window ends. It reports false, with the
// attempt's failure, when an error event, a malformed frame, the end of the
// stream or a watchdog came first; the caller has then seen nothing.
func (s *Stream) hold() (policy.Result, bool) {
	s.body = s.resp.Body
	// a large event's buffer is the request's to hold
	framing := formats.Framing(s.resp.Header) // an AWS event stream, or SSE
	if framing == nil {
		framing = format.SSE{} // as every vendor's own API streams
	}
	s.rd = framing.Events(s.body, s.mem.b)
	s.open = -1
	if sp := s.o.Splice; sp != nil {
		s.keepText(sp.Text)
		s.open, s.openText = sp.Index, true
		s.trim = sp.Text[len(strings.TrimRight(sp.Text, " \t\r\n")):]
	}
	prov := classifyAs(s.a.Candidate)
	fail := func(v classify.Verdict, detail any) (policy.Result, bool) {
		return policy.Result{Verdict: v, Status: s.resp.StatusCode, Detail: detail}, false
	}
	var held []byte
	// holdBack holds raw back, counted against the budget before it is
	// kept, until it is written (sent): false when the budget has no room
	// for it (held has it all the same: what is held goes out at once)
	holdBack := func(raw []byte) bool {
		room := s.mem.grow(int64(len(raw)))
		if room {
			s.firstHeld += int64(len(raw))
		}
		held = append(held, raw...)
		return room
	}
	var end <-chan struct{} // a time-limited hold window's end
	deliver := func() (policy.Result, bool) {
		s.first = held
		s.a.Deliver()
		return policy.Result{}, true
	}
	for {
		ev, err, over := s.next(end)
		if over { // the window's time is up: what came goes out
			return deliver()
		}
		if err != nil {
			if s.output && s.conv != nil {
				// in a hold window, a translated upstream that ended after
				// its stop reason without its final event: the answer is
				// whole, with the client's final events
				if out := s.conv.End(); len(out) > 0 {
					held = append(held, out...)
					s.terminal, s.readEnd = true, err
					return deliver()
				}
			}
			return fail(s.broke(err), nil)
		}
		s.a.Progress()  // alive, if not yet answering
		if ev.Comment { // a keep-alive while held: nothing to decide, nothing to pass on
			continue
		}
		fa := s.fromWire().Look(ev) // one pass over the event says all that is judged of it
		if !fa.Valid {              // the caller has seen nothing: a broken attempt
			return fail(malformed(ev), nil)
		}
		s.seen(ev, fa)
		if s.o.Splice != nil {
			var drop bool
			if ev, drop, err = s.splice(ev); err != nil {
				return fail(classify.Verdict{Class: classify.ServerError, Message: err.Error()}, nil)
			}
			if drop {
				continue
			}
		}
		f := fa.Frame
		raw, err := s.frame(ev, f)
		if err != nil {
			return fail(s.frameFailed(err), nil)
		}
		if s.output { // within the hold window: anything but an error is held
			if f == wire.Error {
				v := s.errorEvent(ev, prov)
				return fail(v, &Failure{Status: s.resp.StatusCode, Header: s.resp.Header, Body: append(held, s.errorFrame(raw, v)...)})
			}
			room := holdBack(raw)
			s.note(ev, fa, s.fromWire().OnceStarted(fa))
			if !room || s.terminal || s.windowOver() || len(held) > maxHeld {
				return deliver()
			}
			continue
		}
		switch f {
		case wire.Hold:
			if s.o.Track && s.fromWire().Continuation() != nil {
				s.track(ev) // a content block's start comes before its output
			}
			if holdBack(raw) && len(held) <= maxHeld {
				continue
			}
			// opening events past the limit: stop holding, pass them on
			// (the first output, when it comes, is reported by Next); the
			// request is this attempt's from here (a hedge's race is over)
			if !s.a.Claim() {
				return fail(s.a.Failure(context.Canceled), nil)
			}
			s.first = held
			return policy.Result{}, true
		case wire.Error:
			v := s.errorEvent(ev, prov)
			return fail(v, &Failure{Status: s.resp.StatusCode, Header: s.resp.Header, Body: append(held, s.errorFrame(raw, v)...)})
		default: // output, or the end
			room := holdBack(raw)
			s.note(ev, fa, f)
			if !s.started() {
				return fail(s.a.Failure(context.Canceled), nil)
			}
			if !s.o.Hold.On() || s.terminal || !room {
				s.first = held
				return policy.Result{}, true
			}
			// a hold window: the output stays back until it ends, on time
			// even while the upstream is silent
			s.a.HoldOutput()
			if s.windowOver() {
				return deliver()
			}
			if d := s.o.Hold.Duration.D(); d > 0 {
				var stop func() bool
				end, stop = s.a.After(d)
				defer stop()
				s.startPump()
			}
		}
	}
}

// frame is what the client gets of ev, an event whose frame is f: its bytes
// as they came, or, for another vendor's stream, its translation (none, one
// or several of the client's events). A translated error event is written
// by errorFrame once it is judged.
func (s *Stream) frame(ev sse.Event, f wire.Frame) ([]byte, error) {
	if s.conv == nil {
		return ev.Raw, nil
	}
	if f == wire.Error {
		return nil, nil
	}
	out, err := s.conv.Event(ev.Name, ev.Data)
	if errors.Is(err, format.ErrTooLarge) {
		return nil, errNoRoom
	}
	if err != nil {
		return nil, fmt.Errorf("the answer of %s could not be translated: %v", s.a.Candidate.Model, err)
	}
	// what the translation keeps for its closing events counts against
	// the request's budget
	if d := s.conv.Held() - s.convHeld; d > 0 && !s.mem.grow(d) {
		return nil, errNoRoom
	} else if d < 0 {
		s.mem.shrink(-d)
	}
	s.convHeld = s.conv.Held()
	return out, nil
}

// errNoRoom ends a translated stream whose closing events need more than
// the request may hold: it can no longer be closed in the client's
// format, and ends with its error event.
var errNoRoom = errors.New("the translation would hold more than the request may")

// frameFailed is the verdict for a frame that could not be made (frame's
// err).
func (s *Stream) frameFailed(err error) classify.Verdict {
	if errors.Is(err, errNoRoom) {
		return tooLarge(fmt.Sprintf("the answer of %s could not be closed in the client's format: what its translation keeps is (gateway.max_body_mb, gateway.max_inflight_mb)", s.a.Candidate.Model))
	}
	return classify.Verdict{Class: classify.ServerError, Message: err.Error()}
}

// errorFrame is the error event the client gets for an upstream's error
// event judged v: raw as it came, or, translated, the client's own error
// event for v's class with the upstream's message.
func (s *Stream) errorFrame(raw []byte, v classify.Verdict) []byte {
	if s.conv == nil {
		return raw
	}
	return s.failure(v.Class, v.Message)
}

// fromWire is the wire truth of the format the upstream's events come in:
// how each is judged.
func (s *Stream) fromWire() format.Wire {
	if s.fw == nil { // found once: it is asked of every event
		s.fw = formats.WireOf(s.from)
	}
	return s.fw
}

// clientWire is the wire truth of the client's format: what it reads of
// the stream's end.
func (s *Stream) clientWire() format.Wire {
	if s.cw == nil {
		s.cw = formats.WireOf(s.client)
	}
	return s.cw
}

// seen notes an event of a Responses stream passed on as it came: what it
// says of its response (format.Wire.Seen), for the failure that may end it.
func (s *Stream) seen(ev sse.Event, fa wire.Facts) {
	if s.conv == nil {
		s.clientWire().Seen(&s.rsp, ev, fa)
	}
}

// failure is the protocol's error event that ends the client's stream,
// for class with msg: it continues the stream (a Responses stream's
// response.failed names the response its opening named, with the next
// sequence number: format.Wire.StreamErrorFrame).
func (s *Stream) failure(class classify.Class, msg string) []byte {
	if s.conv != nil {
		r, opening := s.conv.Failing()
		return append(opening, s.clientWire().StreamErrorFrame(class, msg, r)...)
	}
	r := s.rsp
	if r.Model == "" { // an upstream that did not say: the model the request went to
		r.Model = cmp.Or(s.a.Candidate.Upstream, s.a.Candidate.Model)
	}
	return s.clientWire().StreamErrorFrame(class, msg, r)
}

// windowOver reports whether a hold window's tokens came.
func (s *Stream) windowOver() bool {
	return s.o.Hold.Tokens > 0 && s.deltas >= s.o.Hold.Tokens
}

// errorEvent is the verdict of an error event before the caller saw output.
func (s *Stream) errorEvent(ev sse.Event, prov classify.Provider) classify.Verdict {
	v := s.a.Classify(classify.Input{Event: ev.Name, Body: ev.Data, Provider: prov})
	if v.Class == classify.OK || v.Class == classify.Unknown {
		v.Class = classify.ServerError
	}
	return v
}

// started tells the driver, once, that real output came; false when
// another attempt of the request (a hedge) got there first.
func (s *Stream) started() bool {
	if !s.output {
		s.output = true
		return s.a.Output()
	}
	return true
}

// broke is the verdict for a stream that ended with err before its final
// event: the watchdog's timeout, the caller's own cancellation, or a network
// failure.
func (s *Stream) broke(err error) classify.Verdict {
	s.err = err
	if errors.Is(err, sse.ErrTooLarge) {
		// the upstream's answer, not the network: classed once, never a
		// continuation, not sent to the same model again
		s.lost = "its event was larger than spillway holds for a request"
		return tooLarge("the upstream sent " + strings.TrimPrefix(err.Error(), "sse: "))
	}
	if v := s.a.Failure(err); v.Class == classify.Timeout || v.Code == policy.HedgeLost || errors.Is(err, context.Canceled) {
		return v
	}
	why := "the upstream stream ended before its final event"
	if !errors.Is(err, io.EOF) {
		why += ": " + err.Error()
	}
	return classify.Verdict{Class: classify.Network, Message: why}
}

// note judges one event after output started: fa is what Look found in
// it, f its frame.
func (s *Stream) note(ev sse.Event, fa wire.Facts, f wire.Frame) {
	if f == wire.Output && fa.Delta {
		s.deltas++
	}
	if s.o.Track && s.fromWire().Continuation() != nil {
		s.track(ev)
	}
	switch {
	case f == wire.Terminal:
		s.terminal = s.conv == nil || s.conv.Done()
		s.tokens = max(s.tokens, format.OutputTokens(ev.Data))
		if ev.Name == "response.incomplete" {
			s.verdict = classify.Verdict{Class: classify.OK, Message: "response incomplete"}
		}
	case f == wire.Error:
		// after output: the caller sees it (or, continuable, the driver
		// goes on from it); the attempt is over
		s.verdict = s.a.Classify(classify.Input{Event: ev.Name, Body: ev.Data, Provider: classifyAs(s.a.Candidate)})
		s.terminal = true
	case fa.Finished:
		// a Chat chunk with a finish_reason: some providers end there
		// without [DONE] (a translation's client ends when it says so)
		s.terminal = s.conv == nil || s.conv.Done()
		s.tokens = max(s.tokens, format.OutputTokens(ev.Data))
	case fa.Usage:
		s.tokens = max(s.tokens, format.OutputTokens(ev.Data))
	}
}

// First is what to deliver before anything else: the held opening events
// and the first output (the whole hold window's, with one).
func (s *Stream) First() []byte { return s.first }

// sent gives back what First held of the budget, once it is written.
func (s *Stream) sent() {
	s.mem.shrink(s.firstHeld)
	s.firstHeld = 0
	s.first = nil
}

// Next returns the next event's bytes as they came (a keep-alive comment
// too). At the end it returns io.EOF when the stream ended properly (its
// final event came), else the error that cut it; Verdict then says how it
// ended. A frame that does not parse is never returned: it ends the stream.
func (s *Stream) Next() ([]byte, error) {
	var ev sse.Event
	err := s.readEnd
	if err == nil {
		if ev, err, _ = s.next(nil); err != nil {
			s.readEnd = err // a pump sends its end once: it is kept for the reads after
		}
	}
	if err != nil && s.conv != nil && !s.terminal {
		// a translated stream whose upstream ended after its stop reason
		// but without its final event: the client's final events
		if out := s.conv.End(); len(out) > 0 {
			s.terminal = true
			return out, nil
		}
	}
	if err != nil {
		if s.terminal {
			if s.verdict.Class == "" {
				s.verdict.Class = classify.OK
			}
			return nil, io.EOF
		}
		s.verdict = s.broke(err)
		return nil, err
	}
	s.a.Progress()
	fa := s.fromWire().Look(ev)
	if !fa.Valid {
		if s.terminal { // after the final event: the answer is whole, the rest is dropped
			return nil, nil
		}
		s.verdict, s.err = malformed(ev), errMalformed
		return nil, errMalformed
	}
	if !ev.Comment {
		s.seen(ev, fa)
	}
	if s.o.Splice != nil && !ev.Comment {
		var drop bool
		if ev, drop, err = s.splice(ev); err != nil {
			s.verdict, s.err = classify.Verdict{Class: classify.ServerError, Message: err.Error()}, err
			return nil, err
		}
		if drop {
			return nil, nil
		}
	}
	raw := ev.Raw
	if !ev.Comment {
		f := s.fromWire().OnceStarted(fa)
		if raw, err = s.frame(ev, f); err != nil {
			s.verdict, s.err = s.frameFailed(err), err
			return nil, err
		}
		if f == wire.Output || f == wire.Terminal {
			if !s.started() { // after opening events past the hold limit
				s.verdict = s.a.Failure(context.Canceled)
				return nil, errors.New(s.verdict.Message)
			}
		}
		s.note(ev, fa, f)
		if f == wire.Error {
			raw = s.errorFrame(raw, s.verdict)
		}
	} else if s.conv != nil && !s.clientWire().TakesComments() {
		return nil, nil // another vendor's keep-alive, for a client that fails on comments
	}
	return raw, nil
}

// Buffered reports whether more of the stream has already arrived: a relay
// writes it together with what it has rather than flush once per event.
func (s *Stream) Buffered() bool {
	if s.pump != nil {
		return len(s.pump) > 0
	}
	return s.rd.Buffered() > 0
}

// Ended reports whether the stream's final event (or an error event) came.
func (s *Stream) Ended() bool { return s.terminal }

// Verdict is how the stream ended: OK, an in-stream error's class, or why
// it broke. Before the end it is OK so far.
func (s *Stream) Verdict() classify.Verdict {
	if s.verdict.Class == "" {
		return classify.Verdict{Class: classify.OK}
	}
	return s.verdict
}

// Tokens is the output tokens the caller received so far: what the
// stream's usage reported, or, for a stream that broke before its usage
// came, one per piece of the answer passed on.
func (s *Stream) Tokens() int { return max(s.tokens, s.deltas) }

// Close closes the upstream body (and stops a pump), and gives back what
// the stream held of its budget (but a Resume's text, which the
// continuation carries: the request gives it back when it ends).
func (s *Stream) Close() error {
	err := s.body.Close()
	s.endPump()
	keep := 0
	if s.resume != nil {
		keep = cap(s.text)
	}
	s.mem.release(int64(keep))
	return err
}

// Release is Close for the one goroutine that reads the stream, after its
// last read: the read buffer goes back for another stream's (unless a
// pump's goroutine may still be reading into it).
func (s *Stream) Release() error {
	err := s.Close()
	if s.pump == nil && s.rd != nil {
		s.rd.Release()
	}
	return err
}

// endPump ends a pump's goroutine and waits for it, once the body is
// closed (its read then fails; it hands nothing on): what its reader took
// of the budget is given back before the stream's owner gives back the
// rest, never after (a request's budget given back twice).
func (s *Stream) endPump() {
	if s.quit != nil {
		close(s.quit)
		s.quit = nil
		<-s.done
	}
}

// say is the relay's last word, for the gateway's writer and the library's
// body alike: the route (with this attempt's class, and the model when the
// answer ended well), said once, just before the final frame of raw (the
// end of a held opening, the stream's final event, or the error event a
// broken stream ends with). After that it returns raw as it is.
func (s *Stream) say(raw []byte) []byte {
	if s.said {
		return raw
	}
	s.said = true
	v := s.Verdict()
	model := s.a.Candidate.Model
	if v.Class != classify.OK {
		model = ""
	}
	return withLastWord(raw, lastWord(s.clientWire(), s.a.RouteAs(v.Class), model, s.a.N))
}

// lastWord is a stream's last word on its route, for a client that reads
// SSE comments; the one place the relay builds it.
func lastWord(client format.Wire, route, model string, attempts int) []byte {
	if !client.TakesComments() {
		return nil
	}
	return RouteComment(route, model, attempts)
}

// withLastWord puts word before the final frame of held (one event, or a
// whole stream's worth).
func withLastWord(held, word []byte) []byte {
	if len(word) == 0 {
		return held
	}
	end := bytes.LastIndex(bytes.TrimRight(held, "\n"), []byte("\n\n"))
	if end < 0 {
		return append(word, held...)
	}
	end += 2
	out := make([]byte, 0, len(held)+len(word))
	out = append(out, held[:end]...)
	out = append(out, word...)
	return append(out, held[end:]...)
}
