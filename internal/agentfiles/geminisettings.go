package agentfiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// GeminiSettingsError is why Gemini CLI cannot read a settings.json: where
// (1-based line and column, in bytes) and what.
type GeminiSettingsError struct {
	Line, Column int
	Msg          string
}

func (e *GeminiSettingsError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// ParseGeminiSettings reads a settings.json as Gemini CLI 0.61 reads it:
// its loader blanks out the comments (// and /* */, with the
// strip-json-comments package) and hands the rest to JSON.parse, which
// takes strict JSON only: no trailing comma, no byte order mark. The top
// level must be an object. The error says where the file stops being
// readable.
func ParseGeminiSettings(b []byte) (map[string]any, error) {
	if bytes.HasPrefix(b, []byte("\uFEFF")) {
		return nil, &GeminiSettingsError{Line: 1, Column: 1, Msg: "the file starts with a byte order mark, which Gemini CLI does not read; save it as UTF-8 without one"}
	}
	plain := StripJSONComments(b)
	var v any
	err := json.Unmarshal(plain, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off := min(int(se.Offset), len(plain))
		msg := se.Error()
		if off > 0 {
			// the offset is just past the byte that failed
			at := off - 1
			if c := plain[at]; c == '}' || c == ']' {
				if prev := bytes.TrimRight(plain[:at], " \t\r\n"); bytes.HasSuffix(prev, []byte(",")) {
					off = len(prev)
					msg = fmt.Sprintf("a trailing comma before %q (Gemini CLI reads comments, not trailing commas)", c)
				}
			}
		}
		at := max(off-1, 0) // the byte that failed
		if off >= len(plain) && strings.HasSuffix(msg, "end of JSON input") {
			at = len(b) // past the end
		}
		line, col := position(b, at)
		return nil, &GeminiSettingsError{Line: line, Column: col, Msg: msg}
	case err != nil:
		return nil, &GeminiSettingsError{Msg: err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &GeminiSettingsError{Msg: "not a JSON object (Gemini CLI wants {…} at the top)"}
	}
	return obj, nil
}

// StripJSONComments blanks out the comments of a JSON text the way
// strip-json-comments 3 does for Gemini CLI: a // comment up to its line's
// end, a /* */ comment up to its close (one left open runs to the end of
// the text), neither inside a string (a quote preceded by an odd number of
// backslashes does not end a string). Each byte of a comment but tabs and
// line ends becomes a space, so that offsets, lines and columns stay.
func StripJSONComments(b []byte) []byte {
	out := bytes.Clone(b)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if c := out[i]; c != '\n' && c != '\r' && c != '\t' {
				out[i] = ' '
			}
		}
	}
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '"' && !escaped(b, i) {
			inString = !inString
			continue
		}
		if inString || c != '/' || i+1 >= len(b) {
			continue
		}
		switch b[i+1] {
		case '/':
			end := bytes.IndexByte(b[i:], '\n')
			if end < 0 {
				end = len(b) - i
			}
			blank(i, i+end)
			i += end
		case '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				blank(i, len(b))
				return out
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		}
	}
	return out
}

// escaped reports whether the quote at i follows an odd number of
// backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// position is the 1-based line and column (in bytes) of offset off.
func position(b []byte, off int) (line, col int) {
	off = min(off, len(b))
	line = bytes.Count(b[:off], []byte("\n")) + 1
	return line, off - (bytes.LastIndexByte(b[:off], '\n') + 1) + 1
}
