package report

import (
	"bytes"
	"testing"
)

// mentions finds what a lowered copy's search finds, in any case, at any
// place, with any bytes around (UTF-8 too).
func FuzzMentions(f *testing.F) {
	for _, s := range []string{"", "ERROR x", "retrying", "at CaPaCiTy", "errr", "capacit", "ÉRROR", "\xc3\xa9rror", "cerror", "rrretry"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := false
		for _, k := range keywords {
			want = want || bytes.Contains(asciiLower([]byte(s)), k)
		}
		if got := mentions([]byte(s)); got != want {
			t.Fatalf("%q: mentions %v, a lowered search %v", s, got, want)
		}
	})
}

// asciiLower lowers A-Z only, as the report always has.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
