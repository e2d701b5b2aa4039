package redact

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
)

// minSecret is the shortest value Secrets takes: a shorter one would blank
// common words wherever they appear.
const minSecret = 6

// Secrets redacts known secret values (a configuration's keys and URL
// passwords, a request's own credential) wherever they appear in text,
// besides the shapes String knows: a key of a shape no pattern knows, an
// upstream that echoes it, still never reaches a client, a log or a
// record. The zero value knows none. It is a value: With makes another.
type Secrets struct {
	vals []string // longest first: a secret that holds another goes whole
}

// NewSecrets knows vals (empty and too short ones are left out).
func NewSecrets(vals ...string) Secrets { return Secrets{}.With(vals...) }

// With is s knowing vals too.
func (s Secrets) With(vals ...string) Secrets {
	out := Secrets{vals: slices.Clip(s.vals)}
	for _, v := range vals {
		if len(v) >= minSecret && !slices.Contains(out.vals, v) {
			out.vals = append(out.vals, v)
		}
	}
	slices.SortFunc(out.vals, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Known reports whether s knows any secret.
func (s Secrets) Known() bool { return len(s.vals) > 0 }

// String is t with every known secret replaced and every secret-looking
// substring redacted (String).
func (s Secrets) String(t string) string {
	for _, v := range s.vals {
		if strings.Contains(t, v) {
			t = strings.ReplaceAll(t, v, "[redacted]")
		}
	}
	return String(t)
}

// Bytes is b with every known secret replaced (b itself when none is in
// it; the shapes are String's, for text: bytes on their way to a client
// are the upstream's, and only what is known is taken out of them).
func (s Secrets) Bytes(b []byte) []byte {
	for _, v := range s.vals {
		if bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte("[redacted]"))
		}
	}
	return b
}

// Header replaces every known secret in h's values, in place.
func (s Secrets) Header(h http.Header) {
	for _, vs := range h {
		for i, v := range vs {
			for _, sec := range s.vals {
				if strings.Contains(v, sec) {
					v = strings.ReplaceAll(v, sec, "[redacted]")
					vs[i] = v
				}
			}
		}
	}
}
