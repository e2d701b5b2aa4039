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
		msg = cutText(redact.String(e.Error.Message), maxErrorMessage)
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

// cutText is s cut to at most n bytes, at a character's start, with "…"
// when cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
