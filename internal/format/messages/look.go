package messages

import (
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// Look judges a Messages event (format.Wire): its name says its frame and
// whether it carries a piece of the answer; only the check that its data
// is JSON walks the data. The final event and message_delta may carry
// usage.
func (Format) Look(ev sse.Event) wire.Facts {
	f, d, judged := wire.Common(ev)
	if judged {
		return f
	}
	f = wire.Facts{Valid: len(d) == 0 || wire.Done(d) || wire.ValidJSON(d), Frame: FrameOf(ev.Name), Delta: IsDelta(ev.Name)}
	f.Usage = f.Frame == wire.Terminal || ev.Name == "message_delta"
	return f
}

// FrameOf is what an event named name means: error is an error;
// message_start, ping, content_block_start and an unnamed event are held;
// message_stop ends the stream; anything else is output.
func FrameOf(name string) wire.Frame {
	switch name {
	case "error":
		return wire.Error
	case "message_start", "ping", "content_block_start", "":
		return wire.Hold
	case "message_stop":
		return wire.Terminal
	}
	return wire.Output
}

// IsDelta reports an event that carries a piece of the answer:
// content_block_delta (Anthropic sends a few tokens a delta, so the count
// is a floor).
func IsDelta(name string) bool { return name == "content_block_delta" }

// OnceStarted is f's frame: the events are named the same before output
// and after.
func (Format) OnceStarted(f wire.Facts) wire.Frame { return f.Frame }

// Seen notes nothing: Messages' error event names nothing of its stream.
func (Format) Seen(*wire.Responding, sse.Event, wire.Facts) {}

// Continuation is Messages': an answer broken inside its text goes on
// from a partial assistant turn (continue.go).
func (Format) Continuation() format.Continuation { return continuation{} }

// TakesComments is true: the Anthropic SDKs skip SSE comment lines.
func (Format) TakesComments() bool { return true }
