// Package jsonw appends JSON values to a byte slice without allocating:
// what encoding/json writes, for the few shapes spillway writes on every
// request (a translated stream's text, an event record). The standard
// library exports no append form of its encoder, and its Encoder spends a
// reflection walk and an allocation per value; the fuzz tests hold these
// to its output byte for byte.
package jsonw

import "unicode/utf8"

// String appends v as a JSON string as encoding/json writes it: quotes,
// backslashes, control characters and U+2028/U+2029 escaped, invalid UTF-8
// as U+FFFD; with html, also <, > and & (json.Marshal's default; an
// Encoder with SetEscapeHTML(false) leaves them).
func String(b []byte, v string, html bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, v[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, v[start:i]...)
			if r == utf8.RuneError {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, v[start:]...), '"')
}
