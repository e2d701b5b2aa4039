package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/provider"
	"github.com/spillway/spillway/sse"
)

// maxHeld bounds the opening events held before the first output.
const maxHeld = 1 << 20

type relayOut struct {
	committed    bool
	verdict      classify.Verdict
	outputTokens int
}

type evMsg struct {
	ev  sse.Event
	err error
}

// relay streams an upstream SSE answer to the client. Until the first real
// output it holds the frames, so that an error or a first-token timeout can
// still be retried by the plan; after that it passes every frame through at
// once, and makes sure a stream that does not end properly ends with the
// protocol's error event.
func (s *Server) relay(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, resp *http.Response,
	req *request, cand policy.Candidate, header func()) relayOut {
	ep := req.ep
	ch := make(chan evMsg, 64) // read ahead: frames that arrived together are flushed together
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		rd := sse.NewReader(resp.Body)
		for {
			ev, err := rd.Next()
			select {
			case ch <- evMsg{ev, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	rc := http.NewResponseController(w)
	firstToken, idle := s.cfg.Gateway.FirstToken.D(), s.cfg.Gateway.Idle.D()
	timer := time.NewTimer(firstToken)
	defer timer.Stop()
	var held [][]byte
	out := relayOut{verdict: classify.Verdict{Class: classify.OK}}
	terminal := false
	// A client that stops reading must not hold the model's slot forever:
	// every write gets the idle timeout as its deadline.
	// Each frame is flushed at once unless more are already waiting: those
	// go out in the same write (a flush per frame is a syscall per frame).
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(idle))
		if _, err := w.Write(b); err != nil {
			return false
		}
		if len(ch) > 0 {
			return true
		}
		return rc.Flush() == nil
	}
	heldBytes := 0
	breakStream := func(v classify.Verdict) relayOut {
		cancel()
		write(streamErrorFrame(ep, v.Class, "spillway: "+v.Message))
		out.verdict = v
		return out
	}
	for {
		select {
		case <-ctx.Done():
			cancel()
			if terminal {
				// the client had its final event and hung up before the
				// upstream's end of stream: a complete answer
				return out
			}
			out.verdict = classify.Verdict{Class: classify.Unknown, Message: "client went away"}
			out.committed = true // nothing more to do for this client
			return out
		case <-timer.C:
			if !out.committed {
				cancel()
				out.verdict = classify.Verdict{Class: classify.Timeout, Message: fmt.Sprintf("no output within %s (gateway.first_token_timeout)", firstToken)}
				return out
			}
			return breakStream(classify.Verdict{Class: classify.Timeout, Message: fmt.Sprintf("the upstream stream went silent for %s (gateway.idle_timeout) after output started", idle)})
		case m := <-ch:
			if m.err != nil {
				if terminal && errors.Is(m.err, io.EOF) {
					return out
				}
				why := "the upstream stream ended before its final event"
				if !errors.Is(m.err, io.EOF) {
					why += ": " + m.err.Error()
				}
				v := classify.Verdict{Class: classify.Network, Message: why}
				if !out.committed {
					out.verdict = v
					return out
				}
				return breakStream(v)
			}
			ev := m.ev
			if ev.Comment {
				// a keep-alive: passed on (and the stream counted alive)
				// once output has started, dropped before
				if out.committed {
					if !write(ev.Raw) {
						cancel()
						out.verdict = classify.Verdict{Class: classify.Unknown, Message: "client went away"}
						return out
					}
					timer.Reset(idle)
				}
				continue
			}
			kind := provider.KindOnceStarted(ep.kind, ev)
			if !out.committed {
				kind = provider.KindOf(ep.kind, ev)
				switch kind {
				case provider.Error:
					cancel()
					out.verdict = classify.Classify(classify.Input{Event: ev.Name, Body: ev.Data, Provider: classify.Provider(cand.Type)})
					if out.verdict.Class == classify.OK || out.verdict.Class == classify.Unknown {
						out.verdict.Class = classify.ServerError
					}
					return out
				case provider.Hold:
					held = append(held, ev.Raw)
					if heldBytes += len(ev.Raw); heldBytes <= maxHeld {
						continue
					}
					// opening events past 1 MiB: stop holding, pass them on
				}
				// output or terminal: commit
				header()
				w.WriteHeader(http.StatusOK)
				out.committed = true
				for _, h := range held {
					if !write(h) {
						cancel()
						out.verdict = classify.Verdict{Class: classify.Unknown, Message: "client went away"}
						return out
					}
				}
				held = nil
			}
			if !write(ev.Raw) {
				cancel()
				if !terminal {
					out.verdict = classify.Verdict{Class: classify.Unknown, Message: "client went away"}
				}
				return out
			}
			timer.Reset(idle)
			switch {
			case kind == provider.Terminal:
				terminal = true
				out.outputTokens = max(out.outputTokens, outputTokens(ev.Data))
				if ev.Name == "response.incomplete" {
					out.verdict = classify.Verdict{Class: classify.OK, Message: "response incomplete"}
				}
			case kind == provider.Error:
				// after output: the client has seen it; the attempt is over
				out.verdict = classify.Classify(classify.Input{Event: ev.Name, Body: ev.Data, Provider: classify.Provider(cand.Type)})
				terminal = true
			case ep.kind == "chat" && provider.ChatFinished(ev):
				terminal = true
				out.outputTokens = max(out.outputTokens, outputTokens(ev.Data))
			case ev.Name == "message_delta" || (ep.kind == "chat" && bytes.Contains(ev.Data, []byte(`"usage"`))):
				out.outputTokens = max(out.outputTokens, outputTokens(ev.Data))
			}
		}
	}
}
