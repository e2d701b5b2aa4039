package gemini

import (
	"github.com/spillway/spillway/internal/format"
	"strings"

	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// Look judges a streamGenerateContent chunk (alt=sse) in one walk of its
// JSON (format.Wire): an error object is an error; a candidate with a
// finishReason is the end (the stream closes after it, with no terminator
// of its own); a part with text or a function call is output; anything
// else (usage only, an empty candidate) is held. A [DONE] some servers
// add, or nothing, is passed on.
func (Format) Look(ev sse.Event) wire.Facts {
	f, d, judged := wire.Common(ev)
	if judged {
		return f
	}
	if len(d) == 0 || wire.Done(d) {
		return wire.Facts{Valid: true, Frame: wire.Output}
	}
	return look(d)
}

// OnceStarted is f's frame: a Gemini chunk is judged by what it holds
// before output and after.
func (Format) OnceStarted(f wire.Facts) wire.Frame { return f.Frame }

// Seen notes nothing: Gemini's error chunk names nothing of its stream.
func (Format) Seen(*wire.Responding, sse.Event, wire.Facts) {}

// Continuation is nil: a broken Gemini answer is not continued.
func (Format) Continuation() format.Continuation { return nil }

// TakesComments is false: Gemini's SDK (Gemini CLI) fails on SSE comment
// lines ("Incomplete JSON segment at the end"), so its streams carry the
// final route in the event log only.
func (Format) TakesComments() bool { return false }

func look(d []byte) wire.Facts {
	w := wire.NewWalker(d)
	var g facts
	g.read(&w)
	if w.Err() != nil || !w.End() {
		return wire.Facts{Frame: wire.Output}
	}
	f := wire.Facts{Valid: true, Usage: g.usage || g.finished, Delta: g.out}
	switch {
	case w.Odd():
		f.Frame = wire.Output
	case g.err:
		f.Frame = wire.Error
	case g.finished:
		f.Frame = wire.Terminal
	case g.out:
		f.Frame = wire.Output
	default:
		f.Frame = wire.Hold
	}
	return f
}

// facts is what look finds in a chunk.
type facts struct{ err, finished, out, usage bool }

func (g *facts) read(w *wire.Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "error"):
			g.err = w.Peek() != 'n'
			w.Skip()
		case strings.EqualFold(name, "usageMetadata"):
			g.usage = true
			w.Skip()
		case strings.EqualFold(name, "candidates"):
			for range w.Elems() {
				g.readCandidate(w)
			}
		case strings.EqualFold(name, "response") && w.Peek() == '{':
			g.read(w) // a Code Assist chunk: the Gemini chunk under "response"
		default:
			w.Skip()
		}
	}
}

func (g *facts) readCandidate(w *wire.Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "content"):
			for name := range w.Fields() {
				if !strings.EqualFold(string(name), "parts") {
					w.Skip()
					continue
				}
				for range w.Elems() {
					g.readPart(w)
				}
			}
		case strings.EqualFold(name, "finishReason"):
			_, nonEmpty := w.Str()
			g.finished = g.finished || nonEmpty
		default:
			w.Skip()
		}
	}
}

func (g *facts) readPart(w *wire.Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "text"):
			_, nonEmpty := w.Str()
			g.out = g.out || nonEmpty
		case strings.EqualFold(name, "functionCall"):
			g.out = true // present at all, even null, as the decoding rule read it
			w.Skip()
		default:
			w.Skip()
		}
	}
}
