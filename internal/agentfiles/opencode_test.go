package agentfiles

import (
	"strings"
	"testing"
)

// OpenCode reads JSONC: comments and trailing commas pass, broken JSON is
// refused with where it breaks.
func TestParseOpenCodeConfig(t *testing.T) {
	cases := []struct {
		name, text string
		want       string // the model it holds, or the error's words
		err        bool
	}{
		{"plain", `{"model": "spillway/gpt-6-astra"}`, "spillway/gpt-6-astra", false},
		{"comments and trailing commas", "{\n  // mine\n  \"model\": \"a/b\", /* x */\n  \"provider\": {},\n}\n", "a/b", false},
		{"unclosed", "{\n  \"model\": \"a/b\",\n", "line 3", true},
		{"missing comma", "{\n  \"model\": \"a/b\"\n  \"x\": 1\n}", "line 3", true},
		{"not an object", `["a"]`, "not a JSON object", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseOpenCodeConfig([]byte(tc.text))
			if tc.err {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one saying %q", err, tc.want)
				}
				return
			}
			if err != nil || m["model"] != tc.want {
				t.Fatalf("got %v, %v; want model %q", m, err, tc.want)
			}
		})
	}
}
