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
// text) is left open: relay returns its Resume, and the driver continues
// it or the gateway ends it. res is the attempt's result so far; relay
// returns it committed, with how the stream ended. The headers are out.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, ep wire.Endpoint, ans *upstream.Answer, res policy.Result) policy.Result {
	st := ans.Stream
	defer st.Close()
	rc := http.NewResponseController(w)
	idle := s.stateOf(r.Context()).cfg.Timeouts.Idle.D()
	// A client that stops reading must not hold the model's slot forever:
	// no write may block longer than the idle timeout. The deadline is
	// re-armed only once half of it has gone (re-arming it for every event
	// costs a timer update per event), so a write starts with between half
	// and all of it ahead. Events that arrived together go out in one write
	// (a flush per event is a syscall per event).
	var armed time.Time // the write deadline set
	write := func(b []byte) error {
		if idle > 0 {
			if now := time.Now(); now.Add(idle / 2).After(armed) {
				armed = now.Add(idle)
				_ = rc.SetWriteDeadline(armed)
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if st.Buffered() {
			return nil
		}
		return rc.Flush()
	}
	res.Committed = true
	gone := func() policy.Result {
		res.OutputTokens = st.Tokens()
		res.Verdict = classify.Verdict{Class: classify.Unknown, Message: "client went away"}
		if st.Ended() {
			// the client had its final event and hung up before the
			// upstream's end of stream: a complete answer
			res.Verdict = st.Verdict()
		}
		return res
	}
	first := st.First()
	said := st.Ended() // a stream that ended within a hold window: its last word goes before its final event
	if said {
		first = upstream.WithLastWord(first, st.LastWord())
	}
	if write(first) != nil {
		return gone()
	}
	for {
		raw, err := st.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && st.Ended() {
				res.Verdict, res.OutputTokens = st.Verdict(), st.Tokens()
				return res
			}
			if r.Context().Err() != nil {
				return gone()
			}
			v := st.Verdict()
			res.Verdict, res.OutputTokens = v, st.Tokens()
			if rs := st.Resume(); rs != nil {
				res.Resume = rs // the driver goes on from here, or ends it
				return res
			}
			end := wire.StreamErrorFrame(ep, v.Class, "spillway: "+v.Message)
			if !said {
				end = append(st.LastWord(), end...)
			}
			_ = write(end)
			return res
		}
		if st.Ended() && len(raw) > 0 && !said {
			// the final event (or an in-stream error): the route's last word first
			v := st.Verdict()
			if v.Class != classify.OK {
				if rs := st.Resume(); rs != nil { // an overload mid-answer: continued, not passed on
					res.Verdict, res.OutputTokens, res.Resume = v, st.Tokens(), rs
					return res
				}
			}
			// the comment first, in the same flush as the event
			if _, err := w.Write(st.LastWord()); err != nil {
				return gone()
			}
			said = true
		}
		if write(raw) != nil {
			return gone()
		}
	}
}
