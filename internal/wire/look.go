package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spillway/spillway/internal/sse"
)

// Facts is what one event of a stream says, found in one pass over its
// data: whether it may be passed on, what it means for the hold, whether it
// carries a piece of the answer, and whether it ends a Chat stream or may
// carry usage. A relay asks this once per event; asking ValidFrame,
// FrameOf, IsDelta and ChatFinished one after the other scanned a Chat
// chunk eight times and decoded it twice (BENCHMARKS.md: the streams
// issue's profile).
type Facts struct {
	Valid    bool  // it may be passed on (ValidFrame)
	Frame    Frame // FrameOf
	Delta    bool  // IsDelta
	Finished bool  // a Chat chunk with a finish_reason (ChatFinished)
	Usage    bool  // it may carry usage: OutputTokens is worth reading
}

// Look judges ev, an event of a stream of kind k, in one pass: a Chat or
// Gemini chunk's JSON is walked once, token by token, by a pooled
// jsontext decoder (go-json-experiment/json), which checks it is JSON as it
// goes; the other protocols name their events, so only the check walks
// their data.
func Look(k Kind, ev sse.Event) Facts {
	if ev.Comment {
		return Facts{Valid: true, Frame: Hold}
	}
	if !validName(ev.Name) {
		return Facts{Frame: Output}
	}
	d := bytes.TrimSpace(ev.Data)
	switch k {
	case Responses, Messages:
		f := Facts{Valid: len(d) == 0 || string(d) == "[DONE]" || validJSON(d), Frame: FrameOf(k, ev), Delta: IsDelta(k, ev)}
		f.Usage = f.Frame == Terminal || ev.Name == "message_delta"
		return f
	case StreamGenerateContent:
		if len(d) == 0 || string(d) == "[DONE]" { // a terminator some servers add: passed on, as ValidFrame lets it
			return Facts{Valid: true, Frame: Output}
		}
		return geminiLook(d)
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

func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return false
		}
	}
	return true
}

// walker reads one JSON value with a pooled decoder. It is the same
// grammar as encoding/json's Valid: duplicate names and invalid UTF-8 are
// allowed, as Valid allows them.
type walker struct {
	buf bytes.Buffer
	dec *jsontext.Decoder
	odd bool // a field we read is not of the type it should be: not ours to judge
}

var walkers = sync.Pool{New: func() any {
	w := &walker{}
	w.dec = jsontext.NewDecoder(&w.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return w
}}

func getWalker(d []byte) *walker {
	w := walkers.Get().(*walker)
	w.buf = *bytes.NewBuffer(d) // read in place: the decoder parses a bytes.Buffer's bytes without a copy
	w.dec.Reset(&w.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	w.odd = false
	return w
}

func (w *walker) put() {
	w.buf = bytes.Buffer{}
	// the decoder lets go of the event's bytes too: a pooled walker keeps
	// no stream's buffer alive
	w.dec.Reset(&w.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	walkers.Put(w)
}

// end reports whether nothing but space follows the value read.
func (w *walker) end() bool {
	_, err := w.dec.ReadToken()
	return errors.Is(err, io.EOF)
}

// open reads the '{' or '[' that is next, or a null (false: nothing to
// read in it); anything else is odd, and skipped.
func (w *walker) open(kind jsontext.Kind) (in, ok bool) {
	switch w.dec.PeekKind() {
	case kind:
		_, err := w.dec.ReadToken()
		return err == nil, err == nil
	case 'n':
		return false, w.skip()
	}
	w.odd = true
	return false, w.skip()
}

// name reads the next name of the object being read; end at its '}'
// (read).
func (w *walker) name() (tok jsontext.Token, end, ok bool) {
	if w.dec.PeekKind() == '}' {
		_, err := w.dec.ReadToken()
		return tok, true, err == nil
	}
	tok, err := w.dec.ReadToken() // a name is always a string: anything else fails
	return tok, false, err == nil
}

// more reports whether the array being read has another element; at its
// ']' it reads it.
func (w *walker) more() (more, ok bool) {
	if w.dec.PeekKind() == ']' {
		_, err := w.dec.ReadToken()
		return false, err == nil
	}
	return true, true
}

// skip reads the next value whatever it is.
func (w *walker) skip() bool { return w.dec.SkipValue() == nil }

// str reads the next value, a string or null (anything else is odd), and
// reports whether it was a string, and whether a non-empty one.
func (w *walker) str() (isString, nonEmpty, ok bool) {
	switch w.dec.PeekKind() {
	case '"':
		tok, err := w.dec.ReadToken()
		return true, err == nil && tok.String() != "", err == nil
	case 'n':
	default:
		w.odd = true
	}
	return false, false, w.skip()
}

// validJSON is json.Valid by the pooled decoder (faster, and the same
// grammar).
func validJSON(d []byte) bool {
	w := getWalker(d)
	defer w.put()
	return w.skip() && w.end()
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
	w := getWalker(d)
	defer w.put()
	var c chatFacts
	ok := c.read(w) && w.end()
	if !ok {
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

func (c *chatFacts) read(w *walker) bool {
	in, ok := w.open('{')
	for in && ok {
		var tok jsontext.Token
		var end bool
		if tok, end, ok = w.name(); end || !ok {
			break
		}
		switch name := tok.String(); {
		case strings.EqualFold(name, "error"):
			c.err = w.dec.PeekKind() != 'n'
			ok = w.skip()
		case strings.EqualFold(name, "usage"):
			c.usage = true // present at all, as FrameOf read it
			ok = w.skip()
		case strings.EqualFold(name, "choices"):
			c.choices = 0
			ok = c.readChoices(w)
		default:
			ok = w.skip()
		}
	}
	return ok
}

func (c *chatFacts) readChoices(w *walker) bool {
	in, ok := w.open('[')
	for in && ok {
		var more bool
		if more, ok = w.more(); !more || !ok {
			break
		}
		c.choices++
		var choice bool
		choice, ok = w.open('{')
		for choice && ok {
			var tok jsontext.Token
			var end bool
			if tok, end, ok = w.name(); end || !ok {
				break
			}
			switch name := tok.String(); {
			case strings.EqualFold(name, "delta"):
				ok = c.readDelta(w)
			case strings.EqualFold(name, "finish_reason"):
				var isString bool
				isString, _, ok = w.str()
				c.finished = c.finished || isString
			default:
				ok = w.skip()
			}
		}
	}
	return ok
}

func (c *chatFacts) readDelta(w *walker) bool {
	in, ok := w.open('{')
	for in && ok {
		var tok jsontext.Token
		var end bool
		if tok, end, ok = w.name(); end || !ok {
			break
		}
		switch name := tok.String(); {
		case strings.EqualFold(name, "content"):
			var nonEmpty bool
			_, nonEmpty, ok = w.str()
			c.text = c.text || nonEmpty
		case strings.EqualFold(name, "refusal"):
			var isString bool
			isString, _, ok = w.str()
			c.out = c.out || isString
		case strings.EqualFold(name, "tool_calls"):
			c.out = true // present at all, even null, as FrameOf read it
			c.toolArr = c.toolArr || w.dec.PeekKind() == '['
			ok = w.skip()
		default:
			ok = w.skip()
		}
	}
	return ok
}

// geminiLook judges a streamGenerateContent chunk (alt=sse): an error
// object is an error; a candidate with a finishReason is the end (the
// stream closes after it, with no terminator of its own); a part with text
// or a function call is output; anything else (usage only, an empty
// candidate) is held.
func geminiLook(d []byte) Facts {
	w := getWalker(d)
	defer w.put()
	var g geminiFacts
	if !g.read(w) || !w.end() {
		return Facts{Frame: Output}
	}
	f := Facts{Valid: true, Usage: g.usage || g.finished, Delta: g.out}
	switch {
	case w.odd:
		f.Frame = Output
	case g.err:
		f.Frame = Error
	case g.finished:
		f.Frame = Terminal
	case g.out:
		f.Frame = Output
	default:
		f.Frame = Hold
	}
	return f
}

// geminiFacts is what geminiLook finds in a chunk.
type geminiFacts struct{ err, finished, out, usage bool }

func (g *geminiFacts) read(w *walker) bool {
	in, ok := w.open('{')
	for in && ok {
		var tok jsontext.Token
		var end bool
		if tok, end, ok = w.name(); end || !ok {
			break
		}
		switch name := tok.String(); {
		case strings.EqualFold(name, "error"):
			g.err = w.dec.PeekKind() != 'n'
			ok = w.skip()
		case strings.EqualFold(name, "usageMetadata"):
			g.usage = true
			ok = w.skip()
		case strings.EqualFold(name, "candidates"):
			ok = g.readCandidates(w)
		default:
			ok = w.skip()
		}
	}
	return ok
}

func (g *geminiFacts) readCandidates(w *walker) bool {
	in, ok := w.open('[')
	for in && ok {
		var more bool
		if more, ok = w.more(); !more || !ok {
			break
		}
		var cand bool
		cand, ok = w.open('{')
		for cand && ok {
			var tok jsontext.Token
			var end bool
			if tok, end, ok = w.name(); end || !ok {
				break
			}
			switch name := tok.String(); {
			case strings.EqualFold(name, "content"):
				ok = g.readContent(w)
			case strings.EqualFold(name, "finishReason"):
				var nonEmpty bool
				_, nonEmpty, ok = w.str()
				g.finished = g.finished || nonEmpty
			default:
				ok = w.skip()
			}
		}
	}
	return ok
}

func (g *geminiFacts) readContent(w *walker) bool {
	in, ok := w.open('{')
	for in && ok {
		var tok jsontext.Token
		var end bool
		if tok, end, ok = w.name(); end || !ok {
			break
		}
		if !strings.EqualFold(tok.String(), "parts") {
			ok = w.skip()
			continue
		}
		var parts bool
		parts, ok = w.open('[')
		for parts && ok {
			var more bool
			if more, ok = w.more(); !more || !ok {
				break
			}
			var part bool
			part, ok = w.open('{')
			for part && ok {
				var tok jsontext.Token
				var end bool
				if tok, end, ok = w.name(); end || !ok {
					break
				}
				switch name := tok.String(); {
				case strings.EqualFold(name, "text"):
					var nonEmpty bool
					_, nonEmpty, ok = w.str()
					g.out = g.out || nonEmpty
				case strings.EqualFold(name, "functionCall"):
					g.out = true // present at all, even null, as geminiFrame read it
					ok = w.skip()
				default:
					ok = w.skip()
				}
			}
		}
	}
	return ok
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
