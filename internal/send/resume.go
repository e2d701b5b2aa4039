package send

import (
	"fmt"

	"github.com/spillway/spillway/internal/sse"
)

// Resume is where a broken Messages answer stopped: what a continuation
// sends as the partial assistant turn, and how to splice its stream on.
type Resume struct {
	Text  string // the assistant text the caller has, across its text blocks
	Index int    // the content block (a text block) in flight when it broke
}

// track keeps the text of an answer whose format continues it
// (format.Continuation) and the block in flight.
func (s *Stream) track(ev sse.Event) {
	if s.lost != "" { // no continuation any more: nothing to follow
		return
	}
	b, ok := s.fromWire().Continuation().Block(ev)
	switch {
	case !ok:
	case b.Start:
		s.open, s.openText = b.Index, b.Text
		if !s.openText {
			s.otherKind = true
		}
	case b.Stop:
		s.open, s.openText = -1, false
	default:
		s.keepText(b.Delta)
	}
}

// keepText adds t to the text a continuation carries: at most MaxResume
// bytes, its room taken from the budget; past either, the text is let go
// and the answer can no longer be continued.
func (s *Stream) keepText(t string) {
	if t == "" {
		return
	}
	need := len(s.text) + len(t)
	if need > cap(s.text) {
		c := min(max(2*cap(s.text), need, 512), MaxResume)
		switch {
		case need > MaxResume:
			s.loseText(fmt.Sprintf("the answer passed the %d MiB a continuation carries", MaxResume>>20))
			return
		case !s.mem.grow(int64(c - cap(s.text))):
			s.loseText("the answer passed the memory its request may hold (gateway.max_body_mb, gateway.max_inflight_mb)")
			return
		}
		s.text = append(make([]byte, 0, c), s.text...)
	}
	s.text = append(s.text, t...)
}

// loseText lets the text go: the answer is not continued, for why.
func (s *Stream) loseText(why string) {
	s.mem.shrink(int64(cap(s.text)))
	s.text, s.lost = nil, why
}

// Resume is where a broken answer can be continued from: a Messages answer
// of text only, broken inside a text block, that Track followed, whose
// text it kept (at most MaxResume); nil otherwise (tool use or thinking in
// flight, another protocol, an answer past what a continuation carries,
// an event past the frame limit).
func (s *Stream) Resume() *Resume {
	if !s.o.Track || s.fromWire().Continuation() == nil || s.otherKind || s.lost != "" || s.open < 0 || !s.openText || len(s.text) == 0 {
		return nil
	}
	if s.resume == nil {
		s.resume = &Resume{Text: string(s.text), Index: s.open}
	}
	return s.resume
}

// splice turns an event of a continuation's stream into one of the answer
// it continues, as the caller sees it (format.Continuation.Splice): the
// whitespace the partial turn left out is dropped from the first text,
// once.
func (s *Stream) splice(ev sse.Event) (sse.Event, bool, error) {
	c := s.fromWire().Continuation()
	if c == nil { // a format that is not continued: nothing of its stream is spliced
		return ev, false, nil
	}
	out, drop, trimmed, err := c.Splice(ev, s.o.Splice.Index, s.trim)
	if trimmed {
		s.trim = ""
	}
	return out, drop, err
}
