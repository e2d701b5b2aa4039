package agentfiles

import (
	"encoding/json"
	"testing"
)

// Gemini CLI's reading of settings.json: comments blanked out (not in
// strings, an escaped quote not ending one), then strict JSON.
func TestParseGeminiSettings(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"{\"a\": \"http://x//y\" // c\n, \"b\": /* c */ 1}", `{"a":"http://x//y","b":1}`, ""},
		{`{"a": "say \"/*\" \\", "b": 2} /* left open`, `{"a":"say \"/*\" \\","b":2}`, ""},
		{"{\r\n  \"a\": 1 // c\r\n}", `{"a":1}`, ""},
		{"{\n  \"a\": [1, 2,]\n}", "", "line 2, column 13: a trailing comma before ']' (Gemini CLI reads comments, not trailing commas)"},
		{"{\n  \"a\": 1\n  \"b\": 2\n}", "", "line 3, column 3: invalid character '\"' after object key:value pair"},
		{"\"text\"", "", "not a JSON object (Gemini CLI wants {…} at the top)"},
		{"", "", "line 1, column 1: unexpected end of JSON input"},
	} {
		got, err := ParseGeminiSettings([]byte(c.in))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %s", c.in, err, c.err)
			}
			continue
		}
		if b, _ := json.Marshal(got); err != nil || string(b) != c.want {
			t.Errorf("%q: %s %v, want %s", c.in, b, err, c.want)
		}
	}
}
