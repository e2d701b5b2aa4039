package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
)

// Walker reads one JSON value in place, checking it as encoding/json's
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
type Walker struct {
	d     []byte
	i     int
	depth int   // containers open
	odd   bool  // a field we read is not of the type it should be: not ours to judge
	err   error // what is not JSON, once found
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// NewWalker is a Walker at the start of d.
func NewWalker(d []byte) Walker { return Walker{d: d} }

// Err is what is not JSON in what was read, nil while it all is.
func (w *Walker) Err() error { return w.err }

// Odd reports a field read that is not of the type it should be (a
// Fields or Elems of something else, a Str of a non-string): not the
// reader's to judge.
func (w *Walker) Odd() bool { return w.odd }

// syntaxError is what is not JSON, and where.
type syntaxError struct {
	what string
	at   int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.what, e.at) }

func (w *Walker) fail(what string) {
	if w.err == nil {
		if w.i >= len(w.d) {
			what = "unexpected end of JSON"
		}
		w.err = &syntaxError{what, w.i}
	}
	w.i = len(w.d)
}

func (w *Walker) ws() {
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
func (w *Walker) Peek() byte {
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
func (w *Walker) End() bool {
	w.ws()
	return w.err == nil && w.i == len(w.d)
}

// expect reads the byte c, after space.
func (w *Walker) expect(c byte) bool {
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
func (w *Walker) Fields() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !w.open('{') {
			return
		}
		if w.Peek() == '}' {
			w.i++
			w.depth--
			return
		}
		for w.err == nil {
			if w.Peek() != '"' {
				w.fail("expected a name")
				return
			}
			name := w.Text()
			if !w.expect(':') || !yield(name) || w.err != nil {
				return
			}
			switch w.Peek() {
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
func (w *Walker) Elems() iter.Seq[int] {
	return func(yield func(int) bool) {
		if !w.open('[') {
			return
		}
		if w.Peek() == ']' {
			w.i++
			w.depth--
			return
		}
		for n := 0; w.err == nil; n++ {
			if !yield(n) || w.err != nil {
				return
			}
			switch w.Peek() {
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
func (w *Walker) open(kind byte) bool {
	switch w.Peek() {
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
	w.Skip()
	return false
}

// text reads the string that is next (a name, or a value): its text,
// unescaped when it has escapes or bytes past ASCII, as encoding/json
// reads it.
func (w *Walker) Text() []byte {
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
func (w *Walker) str1() (plain bool) {
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
func (w *Walker) Str() (isString, nonEmpty bool) {
	switch w.Peek() {
	case '"':
		start := w.i
		w.str1()
		return w.err == nil, w.i-start > 2
	case 'n':
	default:
		w.odd = true
	}
	w.Skip()
	return false, false
}

// skip reads the next value whatever it is, without recursion (a value
// may nest 10,000 deep).
func (w *Walker) Skip() {
	var stack0 [16]byte
	stack := stack0[:0] // the containers skip opened: '{' or '['
	for w.err == nil {
		// a value
		switch w.Peek() {
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
			if w.Peek() == end {
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
			c := w.Peek()
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
func (w *Walker) member() bool {
	if w.Peek() != '"' {
		w.fail("expected a name")
		return false
	}
	w.str1()
	return w.err == nil && w.expect(':')
}

func (w *Walker) lit(word string) {
	if !bytes.HasPrefix(w.d[w.i:], []byte(word)) {
		w.fail("invalid literal")
		return
	}
	w.i += len(word)
}

// num reads a number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (w *Walker) num() {
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

func (w *Walker) digits() bool {
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

// ValidJSON is json.Valid by the Walker (faster, and the same grammar).
func ValidJSON(d []byte) bool {
	w := NewWalker(d)
	w.Skip()
	return w.err == nil && w.End()
}

// int reads the next value as a non-negative integer of up to 18 digits
// (a sequence number, a time); ok is false for any other value, skipped.
func (w *Walker) Int() (n int64, ok bool) {
	if w.Peek() != '0' {
		w.Skip()
		return 0, false
	}
	start := w.i
	w.num()
	d := w.d[start:w.i]
	if w.err != nil || len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
