package agentfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestQwenHome(t *testing.T) {
	wd, _ := os.Getwd()
	cases := []struct {
		name string
		env  map[string]string
		dir  string
		want string
	}{
		{"~/.qwen", map[string]string{"HOME": "/h"}, "/run", "/h/.qwen"},
		{"$QWEN_HOME", map[string]string{"HOME": "/h", "QWEN_HOME": "/q"}, "/run", "/q"},
		{"~ in $QWEN_HOME", map[string]string{"HOME": "/h", "QWEN_HOME": "~/q"}, "/run", "/h/q"},
		{"a relative $QWEN_HOME, from the run's directory", map[string]string{"HOME": "/h", "QWEN_HOME": "q"}, "/run", "/run/q"},
		{"a relative $QWEN_HOME, from the current directory", map[string]string{"HOME": "/h", "QWEN_HOME": "q"}, "", filepath.Join(wd, "q")},
		{"neither", map[string]string{}, "/run", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := QwenHome(func(k string) string { return c.env[k] }, c.dir); got != c.want {
				t.Fatalf("QwenHome = %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseQwenSettings(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		model string
		err   string
	}{
		{"comments", "{\n  // mine\n  \"model\": {\"name\": \"m\"} /* x */\n}", "m", ""},
		{"a byte order mark, dropped", "\uFEFF{\"model\": {\"name\": \"m\"}}", "m", ""},
		{"a trailing comma, after a byte order mark", "\uFEFF{\"ui\": {},}", "", "line 1, column 13: a trailing comma before '}' (Qwen Code reads comments"},
		{"not an object", "[1]", "", "not a JSON object (Qwen Code wants"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseQwenSettings([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || QwenModel(s) != c.model {
				t.Fatalf("%v %v, want model %q", s, err, c.model)
			}
		})
	}
}
