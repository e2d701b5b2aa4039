package agent

import (
	"reflect"
	"testing"
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
