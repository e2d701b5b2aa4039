package wire

import (
	"bytes"
	"strings"

	"github.com/spillway/spillway/internal/sse"
)

// Frame is what one event of a stream means for the rule that holds a
// stream's opening events until its first real output.
type Frame int

// The meanings of a frame.
const (
	Hold     Frame = iota // an opening event: held until output starts
	Output                // real output: commit and pass through
	Terminal              // the stream's normal end
	Error                 // the provider's error event
)

// Facts is what one event of a stream says, found in one pass over its
// data: whether it may be passed on, what it means for the hold, whether it
// carries a piece of the answer, and whether it ends a Chat stream or may
// carry usage. A relay asks this once per event; asking the check, the
// frame, the delta and the finish one after the other scanned a Chat
// chunk eight times and decoded it twice (BENCHMARKS.md: the streams
// issue's profile).
type Facts struct {
	Valid    bool  // it may be passed on: its name has no control characters, its data is JSON, [DONE] or nothing (the official SDKs fail on anything else)
	Frame    Frame // FrameOf
	Delta    bool  // IsDelta
	Finished bool  // a Chat chunk with a finish_reason: some providers end there without [DONE]
	Usage    bool  // it may carry usage: OutputTokens is worth reading
	Seq      int64 // a Responses event's sequence_number, -1 for none (Responding)
}

// Common is what any event says before its format is asked (a format's
// Look starts here): a comment is valid and held; an event whose name has
// control characters is not valid (the official SDKs fail on it). judged
// is false when the event's format must judge the rest, d being its data
// without the space around it.
func Common(ev sse.Event) (f Facts, d []byte, judged bool) {
	if ev.Comment {
		return Facts{Valid: true, Frame: Hold}, nil, true
	}
	if !validName(ev.Name) {
		return Facts{Frame: Output}, nil, true
	}
	return Facts{}, bytes.TrimSpace(ev.Data), false
}

// Done reports a stream's data that is "[DONE]", the terminator the
// OpenAI API sends and some servers add after any format's final event.
func Done(d []byte) bool { return string(d) == "[DONE]" }

func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return false
		}
	}
	return true
}

// Whole is what a whole (non-streamed) 2xx answer's body says, found in one
// walk: whether it is one complete JSON value (an answer cut off, or not
// JSON, must not reach the caller as a success), and whether it is an
// error envelope though its status says success: an object whose "error"
// is not null, or whose "type" or "object" is "error".
type Whole struct {
	Valid bool
	Error bool
}

// LookWhole judges a whole answer's body (see Whole). A large answer costs
// one walk of its bytes, as Look costs a stream's events.
func LookWhole(d []byte) Whole {
	w := NewWalker(d)
	var errorShaped bool
	if w.Peek() == '{' {
		for name := range w.Fields() {
			switch name := string(name); {
			case strings.EqualFold(name, "error"):
				errorShaped = errorShaped || w.Peek() != 'n'
				w.Skip()
			case (strings.EqualFold(name, "type") || strings.EqualFold(name, "object")) && w.Peek() == '"':
				if string(w.Text()) == "error" { // (read whatever is known already)
					errorShaped = true
				}
			default:
				w.Skip()
			}
		}
	} else {
		w.Skip()
	}
	if w.err != nil || !w.End() {
		return Whole{}
	}
	return Whole{Valid: true, Error: errorShaped}
}
