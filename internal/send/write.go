package send

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// Writer is where Relay writes a stream: the client's connection.
type Writer struct {
	W http.ResponseWriter
	// Ctx is the client's request's: once it ends, the client is gone.
	Ctx context.Context
	// Idle bounds each write (timeouts.idle): a client that stops reading
	// must not hold the model's slot forever. 0: none.
	Idle time.Duration
	// Scrub, when set, is applied to an in-stream error event and to the
	// error event spillway writes, before the client sees them (the
	// secrets an upstream may echo).
	Scrub func([]byte) []byte
}

// Relay passes a stream whose output has started on to the client, event
// by event as they come, and makes sure a stream that does not end properly
// ends with the protocol's own error event: never with a false completion.
// The route's last word goes just before the stream's final event. A
// stream that breaks where a continuation can go on (Messages text) is left
// open: Relay leaves its Resume in res, and the driver continues it or the
// front end ends it (End). res is the attempt's result so far; Relay
// leaves it committed, with how the stream ended. The headers are out. It
// releases the stream: this goroutine is its only reader.
func (s *Stream) Relay(to Writer, res *policy.Result) {
	defer s.Release()
	out := relayWriter{w: to.W, rc: http.NewResponseController(to.W), st: s, idle: to.Idle}
	res.Committed = true
	first := s.First()
	if s.Ended() { // it ended within a hold window: its last word goes before its final event
		first = s.say(first)
	}
	err := out.write(first)
	s.sent()
	if err != nil {
		s.gone(res)
		return
	}
	for {
		raw, err := s.Next()
		if err != nil {
			s.ended(to, res, err, &out)
			return
		}
		if s.Ended() && len(raw) > 0 && !s.said {
			// the final event (or an in-stream error): the route's last word first
			if s.resumes(res) { // an overload mid-answer: continued, not passed on
				return
			}
			raw = s.say(raw) // in the same write as the event
		}
		if s.said && to.Scrub != nil && s.Verdict().Class != classify.OK {
			raw = to.Scrub(raw) // an in-stream error may echo a key
		}
		if out.write(raw) != nil {
			s.gone(res)
			return
		}
	}
}

// ended takes the end of a relayed stream, err from its Next: its final
// event came (io.EOF), the client went, a continuation can go on, or it
// broke, and the client gets the protocol's error event (after the
// route's last word unless that was said).
func (s *Stream) ended(to Writer, res *policy.Result, err error, out *relayWriter) {
	if errors.Is(err, io.EOF) && s.Ended() {
		res.Verdict, res.OutputTokens = s.Verdict(), s.Tokens()
		return
	}
	if to.Ctx.Err() != nil {
		s.gone(res)
		return
	}
	v := s.Verdict()
	if rs := s.Resume(); rs != nil {
		res.Verdict, res.OutputTokens, res.Resume = v, s.Tokens(), rs // the driver goes on from here, or ends it
		return
	}
	if s.lost != "" && v.Code != classify.TooLarge { // why there is no continuation
		v.Message += "; not continued: " + s.lost
	}
	res.Verdict, res.OutputTokens = v, s.Tokens()
	end := s.failure(v.Class, "spillway: "+v.Message)
	if to.Scrub != nil {
		end = to.Scrub(end)
	}
	_ = out.write(s.say(end))
}

// resumes reports a stream that ended in an error a continuation can go
// on from (an overload mid-answer), with its Resume in res.
func (s *Stream) resumes(res *policy.Result) bool {
	v := s.Verdict()
	if v.Class == classify.OK {
		return false
	}
	rs := s.Resume()
	if rs == nil {
		return false
	}
	res.Verdict, res.OutputTokens, res.Resume = v, s.Tokens(), rs
	return true
}

// gone is the result of a stream whose client went away.
func (s *Stream) gone(res *policy.Result) {
	res.OutputTokens = s.Tokens()
	res.Verdict = classify.Verdict{Class: classify.Unknown, Message: "client went away"}
	if s.Ended() {
		// the client had its final event and hung up before the
		// upstream's end of stream: a complete answer
		res.Verdict = s.Verdict()
	}
}

// End ends a stream that reached the client, broke and could not be
// continued (Outcome.Unfinished): the route's last word, then the
// protocol's error event with why (message), to the client at to.
func End(to Writer, client wire.Endpoint, out policy.Outcome, message string) {
	if to.Ctx.Err() != nil {
		return
	}
	rc := http.NewResponseController(to.W)
	if to.Idle > 0 {
		_ = rc.SetWriteDeadline(time.Now().Add(to.Idle)) // the relay's may be near its end after the continuations
	}
	// (a stream continued is a Messages one: its error event names nothing
	// of the stream's, unlike Responses' response.failed)
	cw := formats.WireOf(client)
	end := cw.StreamErrorFrame(out.Verdict.Class, message, wire.Responding{})
	if to.Scrub != nil {
		end = to.Scrub(end)
	}
	to.W.Write(withLastWord(end, lastWord(cw, out.Route, "", out.Attempts)))
	rc.Flush()
}

// relayWriter writes a relayed stream to the client. A client that stops
// reading must not hold the model's slot forever: no write may block
// longer than the idle timeout. The deadline is re-armed only once half of
// it has gone (re-arming it for every event costs a timer update per
// event), so a write starts with between half and all of it ahead. Events
// that arrived together go out in one write (a flush per event is a
// syscall per event).
type relayWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	st    *Stream
	idle  time.Duration
	armed time.Time // the write deadline set
}

func (o *relayWriter) write(b []byte) error {
	if o.idle > 0 {
		if now := time.Now(); now.Add(o.idle / 2).After(o.armed) {
			o.armed = now.Add(o.idle)
			_ = o.rc.SetWriteDeadline(o.armed)
		}
	}
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	if o.st.Buffered() {
		return nil
	}
	return o.rc.Flush()
}
