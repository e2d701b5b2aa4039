package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fill sets every field of a Record by its kind, so that a field added to
// Record and not to appendRecord makes the two encodings differ.
func fill(s string, n int64, on bool) Record {
	var r Record
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(s + v.Type().Field(i).Name[:1])
		case reflect.Int, reflect.Int64:
			f.SetInt(n + int64(i))
		case reflect.Bool:
			f.SetBool(on)
		}
	}
	return r
}

// appendRecord writes what the Encoder writes for every record.
func FuzzAppendRecord(f *testing.F) {
	f.Add("", int64(0), false, int64(0))
	f.Add("gpt-6-astra", int64(529), true, int64(1764633600123))
	f.Add("a\"b\\c\n<tag>&\u2028\xff", int64(-1), true, int64(-62135596800000))
	f.Fuzz(func(t *testing.T, s string, n int64, on bool, ms int64) {
		r := fill(s, n, on)
		if !on { // the omitempty strings empty too
			r.Deployment, r.Route, r.TranslatedFrom = "", "", ""
		}
		ts := time.UnixMilli(ms).UTC()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(wireRecord{TS: ts.Format(tsLayout), Record: &r}); err != nil {
			t.Skip(err)
		}
		if got := appendRecord(nil, ts, &r); string(got) != want.String() {
			t.Fatalf("got  %s\nwant %s", got, want.String())
		}
	})
}

func BenchmarkAppendRecord(b *testing.B) {
	r := fill("gpt-6-astra", 200, true)
	ts := time.Now().UTC()
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendRecord(buf[:0], ts, &r)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			enc.Encode(wireRecord{TS: ts.Format(tsLayout), Record: &r})
		}
	})
}

// wireRecord is a Record as the standard library writes it, ts replaced
// by its written form: what appendRecord must match.
type wireRecord struct {
	TS string `json:"ts"` // shadows Record.TS
	*Record
}
