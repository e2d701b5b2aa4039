package format

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spillway/spillway/internal/redact"
)

// MaxErrorBody is the most of an error body a cloud envelope's answer
// (bedrock.Answer, vertex.Answer) holds to re-shape it: an error is a
// sentence, and what is past this is dropped.
const MaxErrorBody = 1 << 20

// maxErrorText is the longest message ErrorOf makes of a body that is not
// a Messages error; maxErrorMessage the longest it keeps of a Messages
// error's message.
const (
	maxErrorText    = 300
	maxErrorMessage = 8 << 10
)

// ErrorOf is the type and message of body, a Messages error
// ({"type":"error","error":{"type":T,"message":M}}), what a cloud's
// envelope says in its own shape. For any other body, typ is "" and msg
// a short text of it: its first few hundred characters, control
// characters and runs of spaces made one space, secrets redacted; for an
// empty one, status's text. A Messages error's message is redacted too,
// and cut past 8 KiB.
func ErrorOf(status int, body []byte) (typ, msg string) {
	var e struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Type != "" {
		msg = Cut(redact.String(e.Error.Message), maxErrorMessage)
		if msg == "" {
			msg = statusText(status)
		}
		return e.Error.Type, msg
	}
	if msg = shortText(body); msg == "" {
		msg = statusText(status)
	}
	return "", redact.String(msg)
}

// statusText is status's text ("Service Unavailable"), or "error NNN" for
// one without a text.
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "error " + strconv.Itoa(status)
}

// shortText is b as a short line of text: invalid UTF-8 and control
// characters made spaces, runs of space one, cut at maxErrorText bytes
// (with "…").
func shortText(b []byte) string {
	var s strings.Builder
	space := true // no leading space
	for len(b) > 0 && s.Len() < maxErrorText {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) {
			if !space {
				s.WriteByte(' ')
				space = true
			}
			continue
		}
		s.WriteRune(r)
		space = false
	}
	t := strings.TrimRight(s.String(), " ")
	if len(b) > 0 && t != "" {
		t += "…"
	}
	return t
}

// Cut is s as valid UTF-8 (each byte that is not UTF-8 made U+FFFD) of
// at most n bytes, cut at a character's start, with "…" after it when
// anything was cut. It reads no further into s than it keeps.
func Cut(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), max(n, 0)) + len("…"))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i : i+size]
		if r == utf8.RuneError && size == 1 {
			c = string(utf8.RuneError)
		}
		if b.Len()+len(c) > n {
			b.WriteString("…")
			break
		}
		b.WriteString(c)
		i += size
	}
	return b.String()
}

// ErrorShape is a cloud's error answer for a Messages error of type typ
// ("" for a body that is no Messages error) and message msg answered with
// status: it sets the answer's headers in h (its Content-Type, a name
// header such as Bedrock's x-amzn-errortype) and returns its status and
// body.
type ErrorShape func(h http.Header, status int, typ, msg string) (int, []byte)

// HeldError is the error a cloud's envelope (bedrock.Answer,
// vertex.Answer) holds until it can re-shape it whole: its status (Hold)
// and up to MaxErrorBody of its body (Write); Send writes it out, once, in
// the cloud's shape. The zero value holds nothing.
type HeldError struct {
	status int    // ≥ 400: an error, held
	body   []byte // up to MaxErrorBody of it
	sent   bool
}

// Hold makes the error's status status (≥ 400).
func (e *HeldError) Hold(status int) { e.status = status }

// Held reports whether an error is held (Hold was called with a status ≥
// 400), sent or not.
func (e *HeldError) Held() bool { return e.status >= 400 }

// Len is how many bytes of the error's body it holds.
func (e *HeldError) Len() int { return len(e.body) }

// Write keeps what of b fits within MaxErrorBody (nothing once the error
// is sent); the rest is dropped.
func (e *HeldError) Write(b []byte) {
	if !e.sent {
		e.body = append(e.body, b[:min(len(b), max(0, MaxErrorBody-len(e.body)))]...)
	}
}

// Send writes the held error to w (once; nothing when none is held): the
// type and message ErrorOf reads in its body (none when w's
// Content-Encoding is other than identity, in any case: compressed, not
// text to read) in the shape shape gives, its Content-Length set and
// Content-Encoding dropped; the other headers of w stay. The error is w's
// Write's.
func (e *HeldError) Send(w http.ResponseWriter, shape ErrorShape) error {
	if !e.Held() || e.sent {
		return nil
	}
	e.sent = true
	h := w.Header()
	body := e.body
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		body = nil
	}
	typ, msg := ErrorOf(e.status, body)
	e.body = nil
	h.Del("Content-Encoding")
	status, out := shape(h, e.status, typ, msg)
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, err := w.Write(out)
	return err
}
