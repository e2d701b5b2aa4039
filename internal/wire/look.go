package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/spillway/spillway/internal/sse"
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

// Look judges ev, an event of a stream of kind k, in one pass: a Chat or
// Gemini chunk's JSON is walked once (walker), which checks it is JSON as
// it goes; the other protocols name their events, so only the check walks
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
	case Responses:
		f := Facts{Valid: len(d) == 0 || string(d) == "[DONE]", Frame: FrameOf(k, ev), Delta: IsDelta(k, ev), Seq: -1}
		if !f.Valid {
			f.Valid, f.Seq = responsesLook(d) // the check's walk finds the sequence_number on its way
		}
		f.Usage = f.Frame == Terminal
		return f
	case Messages:
		f := Facts{Valid: len(d) == 0 || string(d) == "[DONE]" || validJSON(d), Frame: FrameOf(k, ev), Delta: IsDelta(k, ev)}
		f.Usage = f.Frame == Terminal || ev.Name == "message_delta"
		return f
	case StreamGenerateContent:
		if len(d) == 0 || string(d) == "[DONE]" { // a terminator some servers add: passed on
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

// walker reads one JSON value in place, checking it as encoding/json's
// Valid does (the same grammar and nesting limit; names may repeat and
// strings need not be UTF-8), and lets its caller look at the few names it
// judges on the way.
//
// It is written here rather than taken from a library because it is on
// every event of every stream: go-json-experiment's jsontext decoder,
// which it replaced, cost 1.1–1.4 µs a Chat chunk through its token API
// (BENCHMARKS.md), most of the relay's own CPU after the syscalls, and
// encoding/json's Valid alone costs 1.1 µs. FuzzLook and FuzzParseBody
// hold it to encoding/json.
type walker struct {
	d     []byte
	i     int
	depth int   // containers open
	odd   bool  // a field we read is not of the type it should be: not ours to judge
	err   error // what is not JSON, once found
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

func newWalker(d []byte) walker { return walker{d: d} }

// syntaxError is what is not JSON, and where.
type syntaxError struct {
	what string
	at   int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.what, e.at) }

func (w *walker) fail(what string) {
	if w.err == nil {
		if w.i >= len(w.d) {
			what = "unexpected end of JSON"
		}
		w.err = &syntaxError{what, w.i}
	}
	w.i = len(w.d)
}

func (w *walker) ws() {
	for w.i < len(w.d) {
		switch w.d[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// peek is the kind of the next value: '{', '[', '"', 'n', 't', 'f', '0'
// (a number), or what else is next ('}', ']', 0 at the end or after an
// error).
func (w *walker) peek() byte {
	w.ws()
	if w.err != nil || w.i >= len(w.d) {
		return 0
	}
	switch c := w.d[w.i]; {
	case c == '-' || c >= '0' && c <= '9':
		return '0'
	default:
		return c
	}
}

// end reports whether nothing but space follows the value read.
func (w *walker) end() bool {
	w.ws()
	return w.err == nil && w.i == len(w.d)
}

// expect reads the byte c, after space.
func (w *walker) expect(c byte) bool {
	w.ws()
	if w.i < len(w.d) && w.d[w.i] == c {
		w.i++
		return true
	}
	w.fail(fmt.Sprintf("expected %q", c))
	return false
}

// fields reads the object that is next, yielding each name; the loop's
// body must read the name's value. A null is an object with no names;
// anything else is odd, and skipped. A syntax error ends it, in w.err.
func (w *walker) fields() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !w.open('{') {
			return
		}
		if w.peek() == '}' {
			w.i++
			w.depth--
			return
		}
		for w.err == nil {
			if w.peek() != '"' {
				w.fail("expected a name")
				return
			}
			name := w.text()
			if !w.expect(':') || !yield(name) || w.err != nil {
				return
			}
			switch w.peek() {
			case ',':
				w.i++
			case '}':
				w.i++
				w.depth--
				return
			default:
				w.fail("expected ',' or '}'")
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
		if w.peek() == ']' {
			w.i++
			w.depth--
			return
		}
		for n := 0; w.err == nil; n++ {
			if !yield(n) || w.err != nil {
				return
			}
			switch w.peek() {
			case ',':
				w.i++
			case ']':
				w.i++
				w.depth--
				return
			default:
				w.fail("expected ',' or ']'")
				return
			}
		}
	}
}

// open reads the '{' or '[' that is next and reports true; false after
// reading a null, or anything else (odd).
func (w *walker) open(kind byte) bool {
	switch w.peek() {
	case kind:
		if w.depth++; w.depth > maxDepth {
			w.fail("exceeded max depth")
			return false
		}
		w.i++
		return true
	case 'n':
	default:
		w.odd = true
	}
	w.skip()
	return false
}

// text reads the string that is next (a name, or a value): its text,
// unescaped when it has escapes or bytes past ASCII, as encoding/json
// reads it.
func (w *walker) text() []byte {
	start := w.i
	plain := w.str1()
	raw := w.d[start:w.i]
	if w.err != nil {
		return nil
	}
	if plain {
		return raw[1 : len(raw)-1]
	}
	var s string
	_ = json.Unmarshal(raw, &s) // checked: a string
	return []byte(s)
}

// str1 reads the string that is next (its '"' included) and reports
// whether it is plain: no escapes, ASCII only.
func (w *walker) str1() (plain bool) {
	w.i++ // the '"'
	plain = true
	for w.i < len(w.d) {
		c := w.d[w.i]
		switch {
		case c == '"':
			w.i++
			return plain
		case c == '\\':
			plain = false
			if w.i+1 >= len(w.d) {
				w.i = len(w.d)
				break
			}
			switch w.d[w.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				w.i += 2
			case 'u':
				if w.i+6 > len(w.d) || !isHex(w.d[w.i+2]) || !isHex(w.d[w.i+3]) || !isHex(w.d[w.i+4]) || !isHex(w.d[w.i+5]) {
					w.i++
					w.fail("invalid escape in a string")
					return false
				}
				w.i += 6
			default:
				w.i++
				w.fail("invalid escape in a string")
				return false
			}
		case c < 0x20:
			w.fail("control character in a string")
			return false
		default:
			if c >= 0x80 {
				plain = false
			}
			w.i++
		}
	}
	w.fail("unterminated string")
	return false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// str reads the next value, a string or null (anything else is odd), and
// reports whether it was a string, and whether a non-empty one.
func (w *walker) str() (isString, nonEmpty bool) {
	switch w.peek() {
	case '"':
		start := w.i
		w.str1()
		return w.err == nil, w.i-start > 2
	case 'n':
	default:
		w.odd = true
	}
	w.skip()
	return false, false
}

// skip reads the next value whatever it is, without recursion (a value
// may nest 10,000 deep).
func (w *walker) skip() {
	var stack0 [16]byte
	stack := stack0[:0] // the containers skip opened: '{' or '['
	for w.err == nil {
		// a value
		switch w.peek() {
		case '{', '[':
			c := w.d[w.i]
			if w.depth+len(stack)+1 > maxDepth {
				w.fail("exceeded max depth")
				return
			}
			w.i++
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			if w.peek() == end {
				w.i++
				break
			}
			stack = append(stack, c)
			if c == '{' && !w.member() {
				return
			}
			continue
		case '"':
			w.str1()
		case 'n':
			w.lit("null")
		case 't':
			w.lit("true")
		case 'f':
			w.lit("false")
		case '0':
			w.num()
		default:
			w.fail("invalid character at the start of a value")
			return
		}
		// after a value: the containers it closes
		for w.err == nil {
			if len(stack) == 0 {
				return
			}
			top := stack[len(stack)-1]
			c := w.peek()
			if c == ',' {
				w.i++
				if top == '{' && !w.member() {
					return
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				w.i++
				stack = stack[:len(stack)-1]
				continue
			}
			w.fail("expected ',' or the end of a container")
			return
		}
	}
}

// member reads an object member's name and its ':'.
func (w *walker) member() bool {
	if w.peek() != '"' {
		w.fail("expected a name")
		return false
	}
	w.str1()
	return w.err == nil && w.expect(':')
}

func (w *walker) lit(word string) {
	if !bytes.HasPrefix(w.d[w.i:], []byte(word)) {
		w.fail("invalid literal")
		return
	}
	w.i += len(word)
}

// num reads a number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (w *walker) num() {
	d := w.d
	if d[w.i] == '-' {
		w.i++
	}
	switch {
	case w.i < len(d) && d[w.i] == '0':
		w.i++
	case w.i < len(d) && d[w.i] >= '1' && d[w.i] <= '9':
		for w.i < len(d) && d[w.i] >= '0' && d[w.i] <= '9' {
			w.i++
		}
	default:
		w.fail("invalid number")
		return
	}
	if w.i < len(d) && d[w.i] == '.' {
		w.i++
		if !w.digits() {
			return
		}
	}
	if w.i < len(d) && (d[w.i] == 'e' || d[w.i] == 'E') {
		w.i++
		if w.i < len(d) && (d[w.i] == '+' || d[w.i] == '-') {
			w.i++
		}
		w.digits()
	}
}

func (w *walker) digits() bool {
	start := w.i
	for w.i < len(w.d) && w.d[w.i] >= '0' && w.d[w.i] <= '9' {
		w.i++
	}
	if w.i == start {
		w.fail("invalid number")
		return false
	}
	return true
}

// validJSON is json.Valid by the walker (faster, and the same grammar).
func validJSON(d []byte) bool {
	w := newWalker(d)
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
	w := newWalker(d)
	var c chatFacts
	c.read(&w)
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
		switch name := string(name); {
		case strings.EqualFold(name, "error"):
			c.err = w.peek() != 'n'
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
		switch name := string(name); {
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
		switch name := string(name); {
		case strings.EqualFold(name, "content"):
			_, nonEmpty := w.str()
			c.text = c.text || nonEmpty
		case strings.EqualFold(name, "refusal"):
			isString, _ := w.str()
			c.out = c.out || isString
		case strings.EqualFold(name, "tool_calls"):
			c.out = true // present at all, even null, as FrameOf read it
			c.toolArr = c.toolArr || w.peek() == '['
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
	w := newWalker(d)
	var g geminiFacts
	g.read(&w)
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
		switch name := string(name); {
		case strings.EqualFold(name, "error"):
			g.err = w.peek() != 'n'
			w.skip()
		case strings.EqualFold(name, "usageMetadata"):
			g.usage = true
			w.skip()
		case strings.EqualFold(name, "candidates"):
			for range w.elems() {
				g.readCandidate(w)
			}
		case strings.EqualFold(name, "response") && w.peek() == '{':
			g.read(w) // a Code Assist chunk: the Gemini chunk under "response"
		default:
			w.skip()
		}
	}
}

func (g *geminiFacts) readCandidate(w *walker) {
	for name := range w.fields() {
		switch name := string(name); {
		case strings.EqualFold(name, "content"):
			for name := range w.fields() {
				if !strings.EqualFold(string(name), "parts") {
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
		switch name := string(name); {
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
	w := newWalker(d)
	var errorShaped bool
	if w.peek() == '{' {
		for name := range w.fields() {
			switch name := string(name); {
			case strings.EqualFold(name, "error"):
				errorShaped = errorShaped || w.peek() != 'n'
				w.skip()
			case (strings.EqualFold(name, "type") || strings.EqualFold(name, "object")) && w.peek() == '"':
				if string(w.text()) == "error" { // (read whatever is known already)
					errorShaped = true
				}
			default:
				w.skip()
			}
		}
	} else {
		w.skip()
	}
	if w.err != nil || !w.end() {
		return Whole{}
	}
	return Whole{Valid: true, Error: errorShaped}
}
