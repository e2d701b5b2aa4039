package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spillway/spillway/classify"
)

func TestContinueCommandLines(t *testing.T) {
	if k := KindOf("/x/node_modules/.bin/cn"); k != Continue {
		t.Fatalf("KindOf(cn) = %q", k)
	}
	// cn leaves no session after a failed run: exec reruns it from the start
	if got, ok := resumeArgs([]string{"cn", "-p", "fix it"}, "87c51472-b304-4287-8903-b5774123d045", "m2", "go on"); ok {
		t.Errorf("cn resumed: %v", got)
	}
	// cn has no flag naming a model: only a placeholder sets it
	for _, c := range []struct {
		in   []string
		want []string
		ok   bool
	}{
		{[]string{"cn", "-p", "--config", "/c/{model}.yaml", "x"}, []string{"cn", "-p", "--config", "/c/m2.yaml", "x"}, true},
		{[]string{"cn", "-p", "--model", "acme/gpt", "x"}, []string{"cn", "-p", "--model", "acme/gpt", "x"}, false},
	} {
		if got, ok := WithModel(c.in, "m2"); ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("WithModel(%v) = %v %v, want %v %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if m := ModelIn([]string{"cn", "-p", "--model", "acme/gpt", "x"}); m != "" {
		t.Errorf("ModelIn took the hub slug of --model for a model: %q", m)
	}
}

// What cn 1.5.47 printed when its model stayed full (observed against
// spillway sim), and what it prints of a tool's output.
func TestContinueErrorLines(t *testing.T) {
	cases := []struct {
		stderr, stdout string
		want           classify.Class
	}{
		{`{"status":"error","message":"503 Our servers are currently overloaded. Please try again later."}`, "", classify.Capacity},
		{`{"status":"error","message":"401 Incorrect API key provided: sk-test-…"}`, "", classify.Auth},
		{`{"status":"error","message":"404 The model ` + "`gpt-6-mini`" + ` does not exist or you do not have access to it."}`, "", classify.ModelNotFound},
		{"", "The log says: 503 Our servers are currently overloaded. Please try again later.", classify.Unknown},
		{"", `  {"status":"error","message":"503 overloaded"} (from the test fixture)`, classify.Unknown},
		{"Error: EACCES: permission denied, open '/etc/x'", "", classify.Unknown},
	}
	for _, c := range cases {
		out := printed(c.stdout, c.stderr)
		if got := judge(classify.Classify, Continue, out).Class; got != c.want {
			t.Errorf("judge(%q, %q) = %s, want %s", c.stderr, c.stdout, got, c.want)
		}
	}
}

// cn runs the first model with the chat role (or none), from its
// config.yaml.
func TestContinueDefaultModel(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".continue"), 0o700)
	os.WriteFile(filepath.Join(home, ".continue", "config.yaml"), []byte(`name: Local
version: 1.0.0
schema: v1
models:
  # an autocomplete model first: not the one cn chats with
  - name: Autocomplete
    provider: ollama
    model: qwen-coder
    roles: [autocomplete]
  - name: spillway
    provider: openai
    model: gpt-6-astra
    apiBase: http://127.0.0.1:8787/v1
    apiKey: ${{ secrets.SPILLWAY_API_KEY }}
    roles:
      - chat
      - edit
`), 0o600)
	m, from := DefaultModel(Continue, func(k string) string { return map[string]string{"HOME": home}[k] })
	if m != "gpt-6-astra" || from != filepath.Join(home, ".continue", "config.yaml") {
		t.Fatalf("%q from %q", m, from)
	}
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"no roles: every role", "models:\n  - {name: a, provider: openai, model: m1}\n", "m1"},
		{"a hub block first: unknown", "models:\n  - uses: acme/model\n  - {name: a, provider: openai, model: m1}\n", ""},
		{"no chat model", "models:\n  - {name: a, provider: openai, model: m1, roles: [embed]}\n", ""},
		{"not YAML", "models: [\n", ""},
	} {
		if got := ContinueChatModel([]byte(c.yaml)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
