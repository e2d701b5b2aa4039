package wire

import (
	"encoding/json"
	"testing"
)

func TestLookWhole(t *testing.T) {
	for _, r := range []struct {
		body         string
		valid, error bool
	}{
		{`{"id":"c1","object":"chat.completion","choices":[{"message":{"content":"hi"}}]}`, true, false},
		{`{"id":"resp_1","object":"response","error":null,"output":[]}`, true, false},
		{`{"type":"message","content":[{"type":"text","text":"hi"}]}`, true, false},
		{`{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}`, true, false},
		{`[{"candidates":[]}]`, true, false},
		{`{"object":"list","data":[{"embedding":[0.1]}]}`, true, false},
		{`{"error":{"message":"Overloaded","code":"server_is_overloaded"}}`, true, true},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, true},
		{`{"object":"error","message":"Service tier capacity exceeded for this model."}`, true, true},
		{`{"object":"error","message":"oops","type":"internal","code":"1000"}`, true, true},
		{`{"error":{"type":"x"},"type":"error","object":"error"}`, true, true},
		{`{"type":{"nested":"error"}}`, true, false},
		{`{"id":"c1","choices":[{"message":{"content":"cut`, false, false},
		{`{"id":"c1"} {"id":"c2"}`, false, false},
		{``, false, false},
		{`<html>502</html>`, false, false},
	} {
		if got := LookWhole([]byte(r.body)); got.Valid != r.valid || got.Error != r.error {
			t.Errorf("%s: %+v, want valid %v error %v", r.body, got, r.valid, r.error)
		}
	}
}

// FuzzLookWhole holds the whole answer's check to encoding/json.
func FuzzLookWhole(f *testing.F) {
	for _, s := range []string{`{"error":null}`, `{"type":"error","error":{}}`, `{"object":"error","type":"internal","code":"1"}`, `{"a":[1,2,{"b":"c"}]}`, `{"a":"\u00e9"`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got := LookWhole(b).Valid; got != json.Valid(b) {
			t.Fatalf("LookWhole(%q).Valid = %v, encoding/json says %v", b, got, !got)
		}
	})
}
