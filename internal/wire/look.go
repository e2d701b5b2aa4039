package wire

import (
	"bytes"
	"strings"

	"github.com/spillway/spillway/internal/sse"
)

// Look judges ev, an event of a stream of kind k, in one pass: a Chat or
// Gemini chunk's JSON is walked once (Walker), which checks it is JSON as
// it goes; the other protocols name their events, so only the check walks
// their data.
func KindLook(k Kind, ev sse.Event) Facts {
	if ev.Comment {
		return Facts{Valid: true, Frame: Hold}
	}
	if !validName(ev.Name) {
		return Facts{Frame: Output}
	}
	d := bytes.TrimSpace(ev.Data)
	switch k {
	case Responses:
		f := Facts{Valid: len(d) == 0 || string(d) == "[DONE]", Frame: KindFrame(k, ev), Delta: KindDelta(k, ev), Seq: -1}
		if !f.Valid {
			f.Valid, f.Seq = responsesLook(d) // the check's walk finds the sequence_number on its way
		}
		f.Usage = f.Frame == Terminal
		return f
	case Messages:
		f := Facts{Valid: len(d) == 0 || string(d) == "[DONE]" || ValidJSON(d), Frame: KindFrame(k, ev), Delta: KindDelta(k, ev)}
		f.Usage = f.Frame == Terminal || ev.Name == "message_delta"
		return f
	}
	// Chat Completions (and what is not named)
	if string(d) == "[DONE]" {
		return Facts{Valid: true, Frame: Terminal}
	}
	if len(d) == 0 {
		return Facts{Valid: true, Frame: Output} // nothing to judge: pass it on
	}
	return chatLook(d)
}

// chatLook judges a Chat Completions chunk: an "error" that is not null is
// the provider's error; a choice whose delta has text, tool calls or a
// refusal, or that has a finish_reason, is output (the finish_reason also
// ends the stream for providers that send no [DONE]); a chunk with no
// choices and a "usage" is output too; anything else (the role's opening
// chunk) is held. A chunk whose fields are not of their types is passed on
// unjudged, as output. Names match as encoding/json matches them
// (case-insensitively), which FrameOf did.
func chatLook(d []byte) Facts {
	w := NewWalker(d)
	var c chatFacts
	c.read(&w)
	if w.err != nil || !w.End() {
		return Facts{Frame: Output} // not JSON: never passed on
	}
	f := Facts{Valid: true, Finished: c.finished, Usage: c.usage, Delta: c.text || c.toolArr}
	switch {
	case w.odd:
		f.Frame = Output // not ours to judge: pass it on
	case c.err:
		f.Frame = Error
	case c.out || c.text || c.finished || c.choices == 0 && c.usage:
		f.Frame = Output
	default:
		f.Frame = Hold
	}
	return f
}

// chatFacts is what chatLook finds in a chunk.
type chatFacts struct {
	err, out, usage, text, toolArr, finished bool
	choices                                  int
}

func (c *chatFacts) read(w *Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "error"):
			c.err = w.Peek() != 'n'
			w.Skip()
		case strings.EqualFold(name, "usage"):
			c.usage = true // present at all, as FrameOf read it
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

func (c *chatFacts) readChoice(w *Walker) {
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

func (c *chatFacts) readDelta(w *Walker) {
	for name := range w.Fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "content"):
			_, nonEmpty := w.Str()
			c.text = c.text || nonEmpty
		case strings.EqualFold(name, "refusal"):
			isString, _ := w.Str()
			c.out = c.out || isString
		case strings.EqualFold(name, "tool_calls"):
			c.out = true // present at all, even null, as FrameOf read it
			c.toolArr = c.toolArr || w.Peek() == '['
			w.Skip()
		default:
			w.Skip()
		}
	}
}

// OnceStarted is f's frame for an event of a stream of kind k after its
// output started, when only errors and the end still matter: a Chat chunk
// is then output whatever it holds (a second role chunk is not held).
func (f Facts) OnceStarted(k Kind) Frame {
	if f.Frame == Hold && k != Responses && k != Messages && k != StreamGenerateContent {
		return Output
	}
	return f.Frame
}
