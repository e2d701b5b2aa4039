package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// Stream is an upstream event stream whose output has started (or whose
// opening passed the hold limit): First is what to deliver first, then Next
// each following event, exactly as it came. It judges as it goes: the
// stream's final event, an in-stream error event, usage, and a stream that
// ends or stalls before its final event. One goroutine reads it; there is
// no reader goroutine and no channel between the upstream and the caller.
type Stream struct {
	a    *policy.Attempt
	ep   wire.Endpoint
	resp *http.Response
	body io.ReadCloser // the upstream's, kept: a library caller's resp.Body becomes Body()
	rd   *sse.Reader

	first    []byte
	output   bool             // the first real output came (and the driver was told)
	err      error            // what cut the stream, when something did
	terminal bool             // the stream's final event (or an error event) came
	verdict  classify.Verdict // how the stream ended, once it has
	tokens   int              // what the stream's usage reported
	deltas   int              // the pieces of the answer passed on
}

// hold reads the opening events until the first real output. It reports
// false, with the attempt's failure, when an error event, the end of the
// stream or a watchdog came first; the caller has then seen nothing.
func (s *Stream) hold() (policy.Result, bool) {
	s.body = s.resp.Body
	s.rd = sse.NewReader(s.body)
	prov := classify.Provider(s.a.Candidate.Type)
	var held []byte
	for {
		ev, err := s.rd.Next()
		if err != nil {
			return policy.Result{Verdict: s.broke(err), Status: s.resp.StatusCode}, false
		}
		s.a.Progress()  // alive, if not yet answering
		if ev.Comment { // a keep-alive before output: nothing to decide, nothing to pass on
			continue
		}
		switch f := wire.FrameOf(s.ep.Kind, ev); f {
		case wire.Hold:
			held = append(held, ev.Raw...)
			if len(held) <= maxHeld {
				continue
			}
			// opening events past the limit: stop holding, pass them on
			// (the first output, when it comes, is reported by Next)
			s.first = held
			return policy.Result{}, true
		case wire.Error:
			v := s.a.Classify(classify.Input{Event: ev.Name, Body: ev.Data, Provider: prov})
			if v.Class == classify.OK || v.Class == classify.Unknown {
				v.Class = classify.ServerError
			}
			return policy.Result{Verdict: v, Status: s.resp.StatusCode,
				Detail: &Failure{Status: s.resp.StatusCode, Header: s.resp.Header, Body: append(held, ev.Raw...)}}, false
		default: // output, or the end: commit
			s.first = append(held, ev.Raw...)
			s.note(ev, f)
			s.started()
			return policy.Result{}, true
		}
	}
}

// started tells the driver, once, that real output came.
func (s *Stream) started() {
	if !s.output {
		s.output = true
		s.a.Output()
	}
}

// broke is the verdict for a stream that ended with err before its final
// event: the watchdog's timeout, the caller's own cancellation, or a network
// failure.
func (s *Stream) broke(err error) classify.Verdict {
	s.err = err
	if v := s.a.Failure(err); v.Class == classify.Timeout || errors.Is(err, context.Canceled) {
		return v
	}
	why := "the upstream stream ended before its final event"
	if !errors.Is(err, io.EOF) {
		why += ": " + err.Error()
	}
	return classify.Verdict{Class: classify.Network, Message: why}
}

// note judges one event after output started.
func (s *Stream) note(ev sse.Event, f wire.Frame) {
	if f == wire.Output && wire.IsDelta(s.ep.Kind, ev) {
		s.deltas++
	}
	switch {
	case f == wire.Terminal:
		s.terminal = true
		s.tokens = max(s.tokens, wire.OutputTokens(ev.Data))
		if ev.Name == "response.incomplete" {
			s.verdict = classify.Verdict{Class: classify.OK, Message: "response incomplete"}
		}
	case f == wire.Error:
		// after output: the caller sees it; the attempt is over
		s.verdict = s.a.Classify(classify.Input{Event: ev.Name, Body: ev.Data, Provider: s.a.Candidate.Type})
		s.terminal = true
	case s.ep.Kind == wire.Chat && wire.ChatFinished(ev):
		// some providers end there without [DONE]
		s.terminal = true
		s.tokens = max(s.tokens, wire.OutputTokens(ev.Data))
	case ev.Name == "message_delta" || s.ep.Kind == wire.Chat && bytes.Contains(ev.Data, []byte(`"usage"`)):
		s.tokens = max(s.tokens, wire.OutputTokens(ev.Data))
	}
}

// First is what to deliver before anything else: the held opening events
// and the first output.
func (s *Stream) First() []byte { return s.first }

// Next returns the next event's bytes as they came (a keep-alive comment
// too). At the end it returns io.EOF when the stream ended properly (its
// final event came), else the error that cut it; Verdict then says how it
// ended.
func (s *Stream) Next() ([]byte, error) {
	ev, err := s.rd.Next()
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
	if !ev.Comment {
		f := wire.FrameOnceStarted(s.ep.Kind, ev)
		if f == wire.Output || f == wire.Terminal {
			s.started() // after opening events past the hold limit
		}
		s.note(ev, f)
	}
	return ev.Raw, nil
}

// Buffered reports whether more of the stream has already arrived: a relay
// writes it together with what it has rather than flush once per event.
func (s *Stream) Buffered() bool { return s.rd.Buffered() > 0 }

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

// Close closes the upstream body.
func (s *Stream) Close() error { return s.body.Close() }

// Body is the stream as an io.ReadCloser for a library caller: First, then
// every event; a stream that breaks fails the read with a *BrokenStream. It
// finishes the attempt once, at the end, on a failed read, or on Close.
func (s *Stream) Body() io.ReadCloser { return &streamBody{s: s, buf: s.first} }

type streamBody struct {
	s    *Stream
	buf  []byte
	err  error
	done bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		raw, err := b.s.Next()
		if err != nil {
			v := b.s.Verdict()
			b.finish(v)
			if errors.Is(err, io.EOF) && b.s.terminal {
				b.err = io.EOF
			} else {
				b.err = &BrokenStream{Verdict: v, Err: b.s.err}
			}
			continue
		}
		b.buf = raw
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *streamBody) Close() error {
	err := b.s.Close()
	if b.s.terminal {
		b.finish(b.s.Verdict())
	} else {
		b.finish(classify.Verdict{Class: classify.Unknown, Message: "the caller closed the stream before its end"})
	}
	return err
}

func (b *streamBody) finish(v classify.Verdict) {
	if !b.done {
		b.done = true
		b.s.a.Finish(v, b.s.Tokens())
	}
}
