package format

import (
	"strings"
	"testing"
)

func TestErrorOf(t *testing.T) {
	for _, tt := range []struct {
		name      string
		status    int
		body      string
		typ, want string
	}{
		{"messages", 529, `{"type":"error","error":{"type":"overloaded_error","message":"spillway: full"}}`, "overloaded_error", "spillway: full"},
		{"no message", 500, `{"type":"error","error":{"type":"api_error"}}`, "api_error", "Internal Server Error"},
		{"secret", 401, `{"type":"error","error":{"type":"authentication_error","message":"key sk-ant-api03-0123456789abcdef refused"}}`, "authentication_error", "key sk-ant-[redacted] refused"},
		{"other JSON", 502, `{"error":{"message":"x"}}`, "", `{"error":{"message":"x"}}`},
		{"text", 502, "  bad \x00\x01 gateway\r\n", "", "bad gateway"},
		{"invalid UTF-8", 502, "caf\xe9 ok", "", "caf ok"},
		{"long", 503, strings.Repeat("ab ", 200), "", strings.TrimSpace(strings.Repeat("ab ", 100)) + "…"},
		{"empty", 404, "", "", "Not Found"},
		{"long message", 529, `{"type":"error","error":{"type":"overloaded_error","message":"` + strings.Repeat("é", 5000) + `"}}`, "overloaded_error", strings.Repeat("é", 4096) + "…"},
		{"spaces", 599, " \n\t ", "", "error 599"},
	} {
		typ, msg := ErrorOf(tt.status, []byte(tt.body))
		if typ != tt.typ || msg != tt.want {
			t.Errorf("%s: %q %q, want %q %q", tt.name, typ, msg, tt.typ, tt.want)
		}
	}
}
