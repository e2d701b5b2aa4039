package responses

import (
	"strings"

	"github.com/spillway/spillway/internal/format"

	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// Look judges a Responses event (format.Wire): its name says its frame
// and whether it carries a piece of the answer, and the walk that checks
// its data is JSON finds its top-level sequence_number on its way; the
// final event may carry usage.
func (Format) Look(ev sse.Event) wire.Facts {
	f, d, judged := wire.Common(ev)
	if judged {
		return f
	}
	f = wire.Facts{Valid: len(d) == 0 || wire.Done(d), Frame: FrameOf(ev.Name), Delta: IsDelta(ev.Name), Seq: -1}
	if !f.Valid {
		f.Valid, f.Seq = look(d)
	}
	f.Usage = f.Frame == wire.Terminal
	return f
}

// FrameOf is what an event named name means: response.failed and error
// are errors; the lifecycle's opening events and an item or part added
// with no content yet are held (a failure can still be hidden from the
// client); response.completed and response.incomplete end the stream;
// anything else is output.
func FrameOf(name string) wire.Frame {
	switch name {
	case "response.failed", "error":
		return wire.Error
	case "response.created", "response.in_progress", "response.queued",
		"response.output_item.added", "response.content_part.added":
		return wire.Hold
	case "response.completed", "response.incomplete":
		return wire.Terminal
	}
	return wire.Output
}

// IsDelta reports an event that carries a piece of the answer (text, a
// tool call's arguments, reasoning): response.*.delta.
func IsDelta(name string) bool {
	return strings.HasPrefix(name, "response.") && strings.HasSuffix(name, ".delta")
}

// OnceStarted is f's frame: the events are named the same before output
// and after.
func (Format) OnceStarted(f wire.Facts) wire.Frame { return f.Frame }

// Seen notes what ev says of its response (wire.Responding.Note): its
// failure repeats its id, model and creation time and takes the next
// sequence number.
func (Format) Seen(r *wire.Responding, ev sse.Event, fa wire.Facts) { r.Note(ev.Name, ev.Data, fa) }

// Continuation is nil: a broken Responses answer is not continued.
func (Format) Continuation() format.Continuation { return nil }

// TakesComments is true: the OpenAI SDKs and Codex skip SSE comments.
func (Format) TakesComments() bool { return true }

// look checks a Responses event's data is JSON and finds its top-level
// sequence_number (-1 for none), in one walk.
func look(d []byte) (valid bool, seq int64) {
	w := wire.NewWalker(d)
	seq = -1
	if w.Peek() != '{' {
		w.Skip()
		return w.Err() == nil && w.End(), seq
	}
	for name := range w.Fields() {
		if string(name) == "sequence_number" {
			if n, ok := w.Int(); ok {
				seq = n
			}
			continue
		}
		w.Skip()
	}
	return w.Err() == nil && w.End(), seq
}
