package send

import (
	"errors"
	"fmt"
	"io"

	"github.com/spillway/spillway/classify"
)

// Body is the stream as an io.ReadCloser for a library caller: First, then
// every event; a stream that breaks fails the read with a *BrokenStream. It
// finishes the attempt once, at the end, on a failed read, or on Close.
func (s *Stream) Body() io.ReadCloser {
	b := &streamBody{s: s, buf: s.first}
	if s.terminal { // it ended within a hold window
		b.buf = s.say(s.first)
	}
	return b
}

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
				if b.buf = b.s.say(nil); len(b.buf) > 0 { // the route's last word, before the error
					break
				}
			}
			continue
		}
		if b.s.terminal && len(raw) > 0 {
			raw = b.s.say(raw)
		}
		b.buf = raw
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	if len(b.buf) == 0 && b.s.firstHeld > 0 { // First is read
		b.s.sent()
	}
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

// BrokenStream is the error a library caller reads from a stream that broke
// after its output started: errors.Is finds io.ErrUnexpectedEOF in it (and
// the error that cut it, context.Canceled for one), errors.As a
// *classify.Failure with the verdict, so a cut stream never reads as a
// complete answer.
type BrokenStream struct {
	Verdict classify.Verdict
	Err     error // what cut the stream, when something did
}

func (e *BrokenStream) Error() string {
	return fmt.Sprintf("spillway: the stream broke after output started (%s: %s)", e.Verdict.Class, e.Verdict.Message)
}

// Unwrap returns the verdict as a *classify.Failure, io.ErrUnexpectedEOF and
// the error that cut the stream.
func (e *BrokenStream) Unwrap() []error {
	errs := []error{&classify.Failure{Verdict: e.Verdict}, io.ErrUnexpectedEOF}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}
