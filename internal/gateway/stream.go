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
// res is the attempt's result so far; relay returns it committed, with how
// the stream ended.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, ep wire.Endpoint, ans *upstream.Answer, res policy.Result) policy.Result {
	st := ans.Stream
	defer st.Close()
	rc := http.NewResponseController(w)
	idle := s.cfg.Timeouts.Idle.D()
	// A client that stops reading must not hold the model's slot forever:
	// every write gets the idle timeout as its deadline. Events that
	// arrived together go out in one write (a flush per event is a syscall
	// per event).
	write := func(b []byte) error {
		if idle > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(idle))
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if st.Buffered() {
			return nil
		}
		return rc.Flush()
	}
	w.WriteHeader(ans.Resp.StatusCode)
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
	if write(st.First()) != nil {
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
			_ = write(wire.StreamErrorFrame(ep, v.Class, "spillway: "+v.Message))
			res.Verdict, res.OutputTokens = v, st.Tokens()
			return res
		}
		if write(raw) != nil {
			return gone()
		}
	}
}
