package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
)

// String writes what encoding/json writes, for any string, with and
// without HTML escaping.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "hi", "Zürich", "a\"b\\c\n\r\t\x00\x1f\x7f", "<tag>&amp;", "\u2028\u2029", "\xff\xfe", "日本語 🙂", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := String(nil, s, true); string(got) != string(want) {
			t.Fatalf("%q html: got %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got := String(nil, s, false); string(got)+"\n" != buf.String() {
			t.Fatalf("%q: got %s, want %s", s, got, buf.String())
		}
	})
}
