package chat

import (
	"github.com/spillway/spillway/internal/format"
	"strings"

	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// Look judges a Chat Completions chunk in one walk of its JSON
// (format.Wire): [DONE] is the end; nothing is passed on unjudged; else
// look's rules.
func (Format) Look(ev sse.Event) wire.Facts {
	f, d, judged := wire.Common(ev)
	if judged {
		return f
	}
	if wire.Done(d) {
		return wire.Facts{Valid: true, Frame: wire.Terminal}
	}
	if len(d) == 0 {
		return wire.Facts{Valid: true, Frame: wire.Output} // nothing to judge: pass it on
	}
	return look(d)
}

// OnceStarted is f's frame after output started, when only errors and the
// end still matter: a chunk is then output whatever it holds (a second
// role chunk is not held).
func (Format) OnceStarted(f wire.Facts) wire.Frame {
	if f.Frame == wire.Hold {
		return wire.Output
	}
	return f.Frame
}

// Seen notes nothing: a Chat error chunk names nothing of its stream.
func (Format) Seen(*wire.Responding, sse.Event, wire.Facts) {}

// Continuation is nil: a broken Chat answer is not continued.
func (Format) Continuation() format.Continuation { return nil }

// TakesComments is true: the OpenAI SDKs skip SSE comment lines.
func (Format) TakesComments() bool { return true }

// look judges a Chat Completions chunk: an "error" that is not null is
// the provider's error; a choice whose delta has text, tool calls or a
// refusal, or that has a finish_reason, is output (the finish_reason also
// ends the stream for providers that send no [DONE]); a chunk with no
// choices and a "usage" is output too; anything else (the role's opening
// chunk) is held. A chunk whose fields are not of their types is passed on
// unjudged, as output. Names match as encoding/json matches them
// (case-insensitively), as the decoding rules did.
func look(d []byte) wire.Facts {
	w := wire.NewWalker(d)
	var c facts
	c.read(&w)
	if w.Err() != nil || !w.End() {
		return wire.Facts{Frame: wire.Output} // not JSON: never passed on
	}
	f := wire.Facts{Valid: true, Finished: c.finished, Usage: c.usage, Delta: c.text || c.toolArr}
	switch {
	case w.Odd():
		f.Frame = wire.Output // not ours to judge: pass it on
	case c.err:
		f.Frame = wire.Error
	case c.out || c.text || c.finished || c.choices == 0 && c.usage:
		f.Frame = wire.Output
	default:
		f.Frame = wire.Hold
	}
	return f
}

// facts is what chatLook finds in a chunk.
type facts struct {
	err, out, usage, text, toolArr, finished bool
	choices                                  int
}

func (c *facts) read(w *wire.Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "error"):
			c.err = w.Peek() != 'n'
			w.Skip()
		case strings.EqualFold(name, "usage"):
			c.usage = true // present at all, as the decoding rule read it
			w.Skip()
		case strings.EqualFold(name, "choices"):
			c.choices = 0
			for range w.Elems() {
				c.choices++
				c.readChoice(w)
			}
		default:
			w.Skip()
		}
	}
}

func (c *facts) readChoice(w *wire.Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "delta"):
			c.readDelta(w)
		case strings.EqualFold(name, "finish_reason"):
			isString, _ := w.Str()
			c.finished = c.finished || isString
		default:
			w.Skip()
		}
	}
}

func (c *facts) readDelta(w *wire.Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "content"):
			_, nonEmpty := w.Str()
			c.text = c.text || nonEmpty
		case strings.EqualFold(name, "refusal"):
			isString, _ := w.Str()
			c.out = c.out || isString
		case strings.EqualFold(name, "tool_calls"):
			c.out = true // present at all, even null, as the decoding rule read it
			c.toolArr = c.toolArr || w.Peek() == '['
			w.Skip()
		default:
			w.Skip()
		}
	}
}
