package wire

import (
	"bytes"
	"errors"
	"io"
	"iter"
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
	odd bool  // a field we read is not of the type it should be: not ours to judge
	err error // what is not JSON, once found
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
	w.odd, w.err = false, nil
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

// fields reads the object that is next, yielding each name; the loop's
// body must read the name's value. A null is an object with no names;
// anything else is odd, and skipped. A syntax error ends it, in w.err.
func (w *walker) fields() iter.Seq[jsontext.Token] {
	return func(yield func(jsontext.Token) bool) {
		if !w.open('{') {
			return
		}
		for w.err == nil {
			if w.dec.PeekKind() == '}' {
				w.read()
				return
			}
			name, err := w.dec.ReadToken() // a name is always a string: anything else fails
			if err != nil {
				w.err = err
				return
			}
			if !yield(name) {
				return
			}
		}
	}
}

// elems reads the array that is next, yielding once for each element; the
// loop's body must read it. A null is an empty array; anything else is
// odd, and skipped.
func (w *walker) elems() iter.Seq[int] {
	return func(yield func(int) bool) {
		if !w.open('[') {
			return
		}
		for i := 0; w.err == nil; i++ {
			if w.dec.PeekKind() == ']' {
				w.read()
				return
			}
			if !yield(i) {
				return
			}
		}
	}
}

// open reads the '{' or '[' that is next and reports true; false after
// reading a null, or anything else (odd).
func (w *walker) open(kind jsontext.Kind) bool {
	switch w.dec.PeekKind() {
	case kind:
		w.read()
		return w.err == nil
	case 'n':
	default:
		w.odd = true
	}
	w.skip()
	return false
}

// read reads one token.
func (w *walker) read() {
	if _, err := w.dec.ReadToken(); err != nil {
		w.err = err
	}
}

// skip reads the next value whatever it is.
func (w *walker) skip() {
	if err := w.dec.SkipValue(); err != nil {
		w.err = err
	}
}

// str reads the next value, a string or null (anything else is odd), and
// reports whether it was a string, and whether a non-empty one.
func (w *walker) str() (isString, nonEmpty bool) {
	switch w.dec.PeekKind() {
	case '"':
		tok, err := w.dec.ReadToken()
		if err != nil {
			w.err = err
		}
		return true, err == nil && tok.String() != ""
	case 'n':
	default:
		w.odd = true
	}
	w.skip()
	return false, false
}

// validJSON is json.Valid by the pooled decoder (faster, and the same
// grammar).
func validJSON(d []byte) bool {
	w := getWalker(d)
	defer w.put()
	w.skip()
	return w.err == nil && w.end()
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
	c.read(w)
	if w.err != nil || !w.end() {
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

func (c *chatFacts) read(w *walker) {
	for name := range w.fields() {
		switch name := name.String(); {
		case strings.EqualFold(name, "error"):
			c.err = w.dec.PeekKind() != 'n'
			w.skip()
		case strings.EqualFold(name, "usage"):
			c.usage = true // present at all, as FrameOf read it
			w.skip()
		case strings.EqualFold(name, "choices"):
			c.choices = 0
			for range w.elems() {
				c.choices++
				c.readChoice(w)
			}
		default:
			w.skip()
		}
	}
}

func (c *chatFacts) readChoice(w *walker) {
	for name := range w.fields() {
		switch name := name.String(); {
		case strings.EqualFold(name, "delta"):
			c.readDelta(w)
		case strings.EqualFold(name, "finish_reason"):
			isString, _ := w.str()
			c.finished = c.finished || isString
		default:
			w.skip()
		}
	}
}

func (c *chatFacts) readDelta(w *walker) {
	for name := range w.fields() {
		switch name := name.String(); {
		case strings.EqualFold(name, "content"):
			_, nonEmpty := w.str()
			c.text = c.text || nonEmpty
		case strings.EqualFold(name, "refusal"):
			isString, _ := w.str()
			c.out = c.out || isString
		case strings.EqualFold(name, "tool_calls"):
			c.out = true // present at all, even null, as FrameOf read it
			c.toolArr = c.toolArr || w.dec.PeekKind() == '['
			w.skip()
		default:
			w.skip()
		}
	}
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
	g.read(w)
	if w.err != nil || !w.end() {
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

func (g *geminiFacts) read(w *walker) {
	for name := range w.fields() {
		switch name := name.String(); {
		case strings.EqualFold(name, "error"):
			g.err = w.dec.PeekKind() != 'n'
			w.skip()
		case strings.EqualFold(name, "usageMetadata"):
			g.usage = true
			w.skip()
		case strings.EqualFold(name, "candidates"):
			for range w.elems() {
				g.readCandidate(w)
			}
		default:
			w.skip()
		}
	}
}

func (g *geminiFacts) readCandidate(w *walker) {
	for name := range w.fields() {
		switch name := name.String(); {
		case strings.EqualFold(name, "content"):
			for name := range w.fields() {
				if !strings.EqualFold(name.String(), "parts") {
					w.skip()
					continue
				}
				for range w.elems() {
					g.readPart(w)
				}
			}
		case strings.EqualFold(name, "finishReason"):
			_, nonEmpty := w.str()
			g.finished = g.finished || nonEmpty
		default:
			w.skip()
		}
	}
}

func (g *geminiFacts) readPart(w *walker) {
	for name := range w.fields() {
		switch name := name.String(); {
		case strings.EqualFold(name, "text"):
			_, nonEmpty := w.str()
			g.out = g.out || nonEmpty
		case strings.EqualFold(name, "functionCall"):
			g.out = true // present at all, even null, as geminiFrame read it
			w.skip()
		default:
			w.skip()
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
