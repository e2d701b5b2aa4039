package format

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// failingWriter is a client's writer whose Write fails.
type failingWriter struct{ *httptest.ResponseRecorder }

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("client gone") }

// Cut's text is valid UTF-8 of at most n bytes, cut at a character's
// start, and ends in "…" when anything was cut.
func TestCut(t *testing.T) {
	for _, tt := range []struct {
		name, s string
		n       int
		want    string
	}{
		{"fits", "abc", 3, "abc"},
		{"empty", "", 0, ""},
		{"cut", "abcdef", 3, "abc…"},
		{"nothing kept", "abc", 0, "…"},
		{"two-byte characters", "ééé", 3, "é…"},
		{"four-byte character", "a😀b", 4, "a…"},
		{"whole four-byte character", "a😀b", 5, "a😀…"},
		{"invalid UTF-8 that fits", "caf\xe9", 10, "caf\uFFFD"},
		{"each invalid byte", "\xff\xfe", 6, "\uFFFD\uFFFD"},
		{"invalid UTF-8 past n", "ab\xff", 3, "ab…"},
		{"a cut rune is no character", "ab\xe2\x82", 5, "ab\uFFFD…"},
		{"U+FFFD itself", "\uFFFDx", 3, "\uFFFD…"},
	} {
		got := Cut(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("%s: Cut(%q, %d) = %q, want %q", tt.name, tt.s, tt.n, got, tt.want)
		}
		if !utf8.ValidString(got) || len(strings.TrimSuffix(got, "…")) > tt.n {
			t.Errorf("%s: %q is not valid UTF-8 of at most %d bytes", tt.name, got, tt.n)
		}
	}
}

func TestHeldError(t *testing.T) {
	// shape is a cloud's: its status 1 past the held one, the type and
	// message as its body, its own header.
	shape := func(h http.Header, status int, typ, msg string) (int, []byte) {
		h.Set("Content-Type", "text/test")
		h.Set("X-Cloud", "yes")
		return status + 1, []byte(typ + "|" + msg)
	}
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"spillway: full"}}`
	for _, tt := range []struct {
		name     string
		status   int               // held (0: none)
		header   map[string]string // set before the error is sent
		writes   []string
		code     int // the client's status (0: nothing written)
		body     string
		encoding bool // Content-Encoding stays
	}{
		{"nothing held", 0, nil, nil, 0, "", true},
		{"a 2xx is not held", 200, nil, nil, 0, "", true},
		{"a Messages error, in pieces", 529, nil, []string{overloaded[:20], overloaded[20:]}, 530, "overloaded_error|spillway: full", false},
		{"another body", 502, map[string]string{"Retry-After": "3"}, []string{"bad\ngateway"}, 503, "|bad gateway", false},
		{"compressed: not read", 503, map[string]string{"Content-Encoding": "gzip"}, []string{overloaded}, 504, "|Service Unavailable", false},
		{"identity, any case", 529, map[string]string{"Content-Encoding": "Identity"}, []string{overloaded}, 530, "overloaded_error|spillway: full", false},
		{"past the bound", 500, nil, []string{strings.Repeat("z", MaxErrorBody-1), "yy", "xx"}, 501, "|" + strings.Repeat("z", 300) + "…", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			for k, v := range tt.header {
				rec.Header().Set(k, v)
			}
			var e HeldError
			if tt.status != 0 {
				e.Hold(tt.status)
			}
			if e.Held() != (tt.status >= 400) {
				t.Fatalf("Held %v after Hold(%d)", e.Held(), tt.status)
			}
			for _, w := range tt.writes {
				e.Write([]byte(w))
			}
			if e.Len() > MaxErrorBody {
				t.Errorf("held %d bytes", e.Len())
			}
			for range 2 { // the second Send writes nothing more
				if err := e.Send(rec, shape); err != nil {
					t.Fatal(err)
				}
			}
			e.Write([]byte("after"))
			if e.Len() != 0 && tt.code != 0 {
				t.Errorf("held %d bytes after Send", e.Len())
			}
			if tt.code == 0 {
				if rec.Body.Len() != 0 || rec.Header().Get("X-Cloud") != "" {
					t.Errorf("wrote %q %v with no error held", rec.Body, rec.Header())
				}
				return
			}
			h := rec.Header()
			if rec.Code != tt.code || rec.Body.String() != tt.body || h.Get("Content-Length") != strconv.Itoa(len(tt.body)) ||
				h.Get("Content-Type") != "text/test" || h.Get("X-Cloud") != "yes" || (h.Get("Content-Encoding") != "") != tt.encoding {
				t.Errorf("%d %q %v, want %d %q", rec.Code, rec.Body, h, tt.code, tt.body)
			}
			for k, v := range tt.header {
				if k != "Content-Encoding" && h.Get(k) != v {
					t.Errorf("%s: %q, want %q kept", k, h.Get(k), v)
				}
			}
		})
	}
	t.Run("the client's writer fails", func(t *testing.T) {
		var e HeldError
		e.Hold(500)
		e.Write(bytes.Repeat([]byte("x"), 10))
		if err := e.Send(failingWriter{httptest.NewRecorder()}, shape); err == nil {
			t.Error("no error from a failing writer")
		}
	})
}
