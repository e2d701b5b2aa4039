package gateway

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/upstream"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// relay passes a stream whose output has started on to the client, event by
// event as they come, and makes sure a stream that does not end properly
// ends with the protocol's own error event: never with a false completion.
// The route's last word (RouteComment) goes just before the stream's final
// event. A stream that breaks where a continuation can go on (Messages
// text) is left open: relay leaves its Resume in res, and the driver
// continues it or the gateway ends it. res is the attempt's result so far;
// relay leaves it committed, with how the stream ended. The headers are out.
func (x *exchange) relay(ans *upstream.Answer, res *policy.Result) {
	st := ans.Stream
	defer st.Release() // this goroutine is the stream's only reader
	out := relayWriter{w: x.w, rc: http.NewResponseController(x.w), st: st, idle: x.s.stateOf(x.r.Context()).cfg.Timeouts.Idle.D()}
	res.Committed = true
	first := st.First()
	said := st.Ended() // a stream that ended within a hold window: its last word goes before its final event
	if said {
		first = upstream.WithLastWord(first, st.LastWord())
	}
	if out.write(first) != nil {
		x.gone(st, res)
		return
	}
	for {
		raw, err := st.Next()
		if err != nil {
			x.ended(st, res, err, said, &out)
			return
		}
		if st.Ended() && len(raw) > 0 && !said {
			// the final event (or an in-stream error): the route's last word first
			if x.resumes(st, res) { // an overload mid-answer: continued, not passed on
				return
			}
			// the comment first, in the same flush as the event
			if _, err := x.w.Write(st.LastWord()); err != nil {
				x.gone(st, res)
				return
			}
			said = true
		}
		if said && st.Verdict().Class != classify.OK {
			raw = x.secrets.Bytes(raw) // an in-stream error may echo a key
		}
		if out.write(raw) != nil {
			x.gone(st, res)
			return
		}
	}
}

// ended takes the end of a relayed stream, err from its Next: its final
// event came (io.EOF), the client went, a continuation can go on, or it
// broke, and the client gets the protocol's error event (after the
// route's last word unless that was said).
func (x *exchange) ended(st *upstream.Stream, res *policy.Result, err error, said bool, out *relayWriter) {
	if errors.Is(err, io.EOF) && st.Ended() {
		res.Verdict, res.OutputTokens = st.Verdict(), st.Tokens()
		return
	}
	if x.r.Context().Err() != nil {
		x.gone(st, res)
		return
	}
	v := st.Verdict()
	res.Verdict, res.OutputTokens = v, st.Tokens()
	if rs := st.Resume(); rs != nil {
		res.Resume = rs // the driver goes on from here, or ends it
		return
	}
	end := wire.StreamErrorFrame(x.ep, v.Class, "spillway: "+x.secrets.String(v.Message))
	if !said {
		end = append(st.LastWord(), end...)
	}
	_ = out.write(end)
}

// resumes reports a stream that ended in an error a continuation can go
// on from (an overload mid-answer), with its Resume in res.
func (x *exchange) resumes(st *upstream.Stream, res *policy.Result) bool {
	v := st.Verdict()
	if v.Class == classify.OK {
		return false
	}
	rs := st.Resume()
	if rs == nil {
		return false
	}
	res.Verdict, res.OutputTokens, res.Resume = v, st.Tokens(), rs
	return true
}

// gone is the result of a stream whose client went away.
func (x *exchange) gone(st *upstream.Stream, res *policy.Result) {
	res.OutputTokens = st.Tokens()
	res.Verdict = classify.Verdict{Class: classify.Unknown, Message: "client went away"}
	if st.Ended() {
		// the client had its final event and hung up before the
		// upstream's end of stream: a complete answer
		res.Verdict = st.Verdict()
	}
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
	st    *upstream.Stream
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
