package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spillway/spillway/classify"
)

func TestWithModel(t *testing.T) {
	cases := []struct {
		in    []string
		model string
		want  []string
		ok    bool
	}{
		{[]string{"codex", "exec", "fix it"}, "m2", []string{"codex", "exec", "-m", "m2", "fix it"}, true},
		{[]string{"codex", "exec", "-m", "m1", "fix it"}, "m2", []string{"codex", "exec", "-m", "m2", "fix it"}, true},
		{[]string{"codex", "exec", "--model=m1", "x"}, "m2", []string{"codex", "exec", "--model=m2", "x"}, true},
		{[]string{"/usr/bin/claude", "-p", "x"}, "m2", []string{"/usr/bin/claude", "--model", "m2", "-p", "x"}, true},
		{[]string{"claude", "-p", "x", "--model", "opus"}, "m2", []string{"claude", "-p", "x", "--model", "m2"}, true},
		{[]string{"gemini", "-m", "a", "-p", "x"}, "b", []string{"gemini", "-m", "b", "-p", "x"}, true},
		{[]string{"my-agent", "--llm={model}", "go"}, "m2", []string{"my-agent", "--llm=m2", "go"}, true},
		{[]string{"my-agent", "go"}, "m2", []string{"my-agent", "go"}, false},
	}
	for _, c := range cases {
		got, ok := WithModel(c.in, c.model)
		if !reflect.DeepEqual(got, c.want) || ok != c.ok {
			t.Errorf("WithModel(%v, %s) = %v %v, want %v %v", c.in, c.model, got, ok, c.want, c.ok)
		}
	}
	if m := ModelIn([]string{"codex", "exec", "-m", "gpt-6-astra", "x"}); m != "gpt-6-astra" {
		t.Errorf("ModelIn = %q", m)
	}
}

func TestResumeArgs(t *testing.T) {
	got, ok := resumeArgs([]string{"codex", "exec", "--skip-git-repo-check", "--json", "-m", "a", "-c", "k=v", "do it"}, "ID", "b", "go on")
	want := []string{"codex", "exec", "--skip-git-repo-check", "--json", "-c", "k=v", "resume", "ID", "-m", "b", "go on"}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("codex resume = %v", got)
	}
	got, ok = resumeArgs([]string{"claude", "-p", "do it", "--model", "opus"}, "", "sonnet", "go on")
	want = []string{"claude", "-p", "go on", "--model", "sonnet", "--continue"}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("claude resume = %v", got)
	}
	if _, ok := resumeArgs([]string{"codex", "exec", "x"}, "", "b", "p"); ok {
		t.Error("codex cannot resume without a session id")
	}
}

func TestGeminiSessionArgs(t *testing.T) {
	const id = "33333333-2222-4333-8444-555555555555"
	resume := []struct {
		in   []string
		want []string // nil: cannot resume
	}{
		{[]string{"gemini", "-p", "do it", "-m", "pro"}, []string{"gemini", "-p", "go on", "-m", "flash", "--resume", id}},
		{[]string{"gemini", "--yolo", "--prompt=do it", "--session-id", "X"}, []string{"gemini", "-m", "flash", "--yolo", "--prompt=go on", "--resume", id}},
		{[]string{"gemini", "-r", "latest", "--model=pro", "-p", "do it"}, []string{"gemini", "--model=flash", "-p", "go on", "--resume", id}},
		{[]string{"gemini", "--resume=2", "-p", "do it"}, []string{"gemini", "-m", "flash", "-p", "go on", "--resume", id}},
		{[]string{"gemini", "do it"}, nil}, // the prompt as an argument
	}
	for _, c := range resume {
		got, ok := resumeArgs(c.in, id, "flash", "go on")
		if ok != (c.want != nil) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("resumeArgs(%v) = %v %v, want %v", c.in, got, ok, c.want)
		}
	}
	if _, ok := resumeArgs([]string{"gemini", "-p", "x"}, "", "flash", "go on"); ok {
		t.Error("gemini cannot resume without a session id")
	}
	fresh := []struct{ in, want []string }{
		{[]string{"gemini", "-p", "x"}, []string{"gemini", "-p", "x", "--session-id", id}},
		{[]string{"gemini", "--session-id=old", "-p", "x"}, []string{"gemini", "-p", "x", "--session-id", id}},
		{[]string{"gemini", "--session-id", "old", "-p", "x"}, []string{"gemini", "-p", "x", "--session-id", id}},
		{[]string{"gemini", "--resume", "latest", "-p", "x"}, []string{"gemini", "--resume", "latest", "-p", "x"}}, // the user's own session
	}
	for _, c := range fresh {
		if got := withSessionID(c.in, id); !reflect.DeepEqual(got, c.want) {
			t.Errorf("withSessionID(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// Gemini CLI's own session files (0.61, recorded against the simulator):
// a run that failed on its first request was rewound to nothing.
func TestGeminiSessionResumable(t *testing.T) {
	for _, c := range []struct {
		file string
		id   string
		want bool
	}{
		{"failed-first-turn.jsonl", "33333333-2222-4333-8444-555555555555", false},
		{"answered.jsonl", "44444444-2222-4333-8444-555555555555", true},
		{"resumed.jsonl", "22222222-2222-4333-8444-555555555555", true},
		{"rewound-answer.jsonl", "55555555-2222-4333-8444-555555555555", false},
		{"legacy.json", "66666666-2222-4333-8444-555555555555", true},
	} {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "gemini-sessions", c.file))
			if err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			chats := filepath.Join(home, ".gemini", "tmp", "work", "chats")
			if err := os.MkdirAll(chats, 0o700); err != nil {
				t.Fatal(err)
			}
			name := "session-2026-11-30T21-03-" + c.id[:8] + filepath.Ext(c.file)
			if err := os.WriteFile(filepath.Join(chats, name), src, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := geminiResumable(filepath.Join(home, ".gemini"), c.id); got != c.want {
				t.Errorf("resumable = %v, want %v", got, c.want)
			}
			// another session with the same first eight characters is not it
			other := c.id[:8] + "-0000-4000-8000-000000000000"
			if geminiResumable(filepath.Join(home, ".gemini"), other) {
				t.Error("a session was found by its first eight characters alone")
			}
		})
	}
}

func TestResumeArgsDropsWhatDoesNotApply(t *testing.T) {
	cases := []struct {
		in   []string
		want []string
	}{
		{[]string{"codex", "exec", "--add-dir", "/x", "p"}, []string{"codex", "exec", "--add-dir", "/x", "resume", "ID", "-m", "b", "go"}},
		{[]string{"codex", "exec", "--json", "--", "p"}, []string{"codex", "exec", "--json", "resume", "ID", "-m", "b", "go"}},
		{[]string{"codex", "exec", "-i", "a.png", "--future-flag", "v", "p"}, []string{"codex", "exec", "resume", "ID", "-m", "b", "go"}},
		{[]string{"codex", "exec", "--sandbox=read-only", "-C", "/w", "p"}, []string{"codex", "exec", "--sandbox=read-only", "-C", "/w", "resume", "ID", "-m", "b", "go"}},
	}
	for _, c := range cases {
		got, ok := resumeArgs(c.in, "ID", "b", "go")
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("resumeArgs(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestJudgeReadsOnlyTheAgentsOwnErrorLines(t *testing.T) {
	cases := []struct {
		stderr, stdout string
		want           string
	}{
		{"ERROR: Selected model is at capacity. Please try a different model.", "", "capacity"},
		{"", "API Error: 529 Overloaded. This is a server-side issue", "capacity"},
		{"Error: EACCES: permission denied, open '/etc/x'", "", "unknown"},
		{"error: the rate limit test failed", "", "unknown"},
		{"", `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"the API is overloaded"}`, "unknown"},
		{"", `{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"api_error_type":"overloaded_error","result":"API Error: 529"}`, "capacity"},
		{"  3 tests failed: timeout in test_io", "", "unknown"},
	}
	for _, c := range cases {
		out := printed(c.stdout, c.stderr)
		if got := string(judge(classify.Classify, Codex, out).Class); got != c.want {
			t.Errorf("judge(%q, %q) = %s, want %s", c.stderr, c.stdout, got, c.want)
		}
	}
}

// An agent's own default model: its environment, then its configuration
// file, then its built-in default.
func TestDefaultModel(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "codex"), 0o700)
	os.WriteFile(filepath.Join(home, "codex", "config.toml"), []byte("model = \"gpt-6-luna\"\n[model_providers.x]\nname = \"x\"\n"), 0o600)
	os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"model":"claude-sonnet-5-5"}`), 0o600)
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte("{\n  // as setup gemini keeps it\n  \"model\": { \"name\": \"gemini-3-flash\" } /* mine */\n}\n"), 0o600)
	for _, c := range []struct {
		name  string
		kind  Kind
		env   map[string]string
		model string
		from  string
	}{
		{"codex, nothing configured", Codex, map[string]string{"HOME": t.TempDir()}, "gpt-6.1-sol", "codex's own default"},
		{"codex, config.toml", Codex, map[string]string{"HOME": home, "CODEX_HOME": filepath.Join(home, "codex")}, "gpt-6-luna", filepath.Join(home, "codex", "config.toml")},
		{"claude, settings.json", Claude, map[string]string{"HOME": home}, "claude-sonnet-5-5", filepath.Join(home, ".claude", "settings.json")},
		{"claude, ANTHROPIC_MODEL first", Claude, map[string]string{"HOME": home, "ANTHROPIC_MODEL": "claude-haiku-5-5"}, "claude-haiku-5-5", "ANTHROPIC_MODEL"},
		{"gemini, settings.json with comments", Gemini, map[string]string{"HOME": home}, "gemini-3-flash", filepath.Join(home, ".gemini", "settings.json")},
		{"no HOME: no file read", Codex, map[string]string{}, "gpt-6.1-sol", "codex's own default"},
		{"another command", Other, map[string]string{"HOME": home}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, from := DefaultModel(c.kind, func(k string) string { return c.env[k] })
			if m != c.model || from != c.from {
				t.Fatalf("%q from %q, want %q from %q", m, from, c.model, c.from)
			}
		})
	}
}
