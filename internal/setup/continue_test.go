package setup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var cnSetup = ContinueSetup{BaseURL: "http://127.0.0.1:8787", Model: "gpt-6-astra"}

// the user's own config.yaml, with comments and other models
const cnUser = `# my Continue config
name: Local Assistant   # shown in the TUI
version: 1.0.0
schema: v1

models:
  # the one I pay for
  - name: Claude
    provider: anthropic
    model: claude-sonnet-5-5
    apiKey: ${{ secrets.ANTHROPIC_API_KEY }}
    roles: [chat, edit]

  - name: Autocomplete   # local
    provider: ollama
    model: qwen-coder
    roles:
      - autocomplete

rules:
  - Be brief.
`

func TestApplyContinue(t *testing.T) {
	cases := []struct {
		name, in string
		want     string // the whole result; "" to check by keepsAll
	}{
		{"no file", "", "name: Local Config\nversion: 1.0.0\nschema: v1\nmodels:\n" + cnSetup.Entry("  ")},
		{"comments only", "# nothing yet\n", "# nothing yet\nname: Local Config\nversion: 1.0.0\nschema: v1\nmodels:\n" + cnSetup.Entry("  ")},
		{"no models", "name: a\nversion: \"1\"\n# end", "name: a\nversion: \"1\"\n# end\nmodels:\n" + cnSetup.Entry("  ")},
		{"models: null", "name: a\nversion: \"1\"\nmodels:\nrules: [x]\n", "name: a\nversion: \"1\"\nmodels:\n" + cnSetup.Entry("  ") + "rules: [x]\n"},
		{"models: []", "name: a\nversion: \"1\"\nmodels: [] # none yet\nrules: []\n", "name: a\nversion: \"1\"\nmodels: # none yet\n" + cnSetup.Entry("  ") + "rules: []\n"},
		{"entries at the key's column", "name: a\nversion: \"1\"\nmodels:\n- name: b\n  provider: openai\n  model: m\n", "name: a\nversion: \"1\"\nmodels:\n" + cnSetup.Entry("") + "- name: b\n  provider: openai\n  model: m\n"},
		{"the user's file", cnUser, strings.Replace(cnUser, "  # the one I pay for\n", cnSetup.Entry("  ")+"  # the one I pay for\n", 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := ApplyContinue([]byte(c.in), cnSetup)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, c.want)
			}
			if ContinueFirstChat(out) != ContinueEntryName {
				t.Errorf("cn would run %q first", ContinueFirstChat(out))
			}
			again, err := ApplyContinue(out, cnSetup)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("applied again: %v\n%s", err, again)
			}
		})
	}
}

// A spillway entry already there is replaced where it stands (a new
// gateway URL, model or key variable), its neighbours and their comments
// untouched.
func TestApplyContinueReplacesItsEntry(t *testing.T) {
	first, err := ApplyContinue([]byte(cnUser), cnSetup)
	if err != nil {
		t.Fatal(err)
	}
	next := ContinueSetup{BaseURL: "http://127.0.0.1:9999/", Model: "gpt-6.1-sol", EnvKey: "SPILLWAY_KEY"}
	out, err := ApplyContinue(first, next)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(first), cnSetup.Entry("  "), next.Entry("  "), 1); string(out) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(string(out), "apiBase: http://127.0.0.1:9999/v1\n") || !strings.Contains(string(out), "${{ secrets.SPILLWAY_KEY }}") {
		t.Fatalf("the entry was not rewritten:\n%s", out)
	}
	// the entry last, moved there by the user: replaced where it is
	moved := "name: a\nversion: \"1\"\nmodels:\n  - name: b\n    provider: openai\n    model: m\n" + cnSetup.Entry("  ") + "  # trailing note\nrules: []\n"
	out, err = ApplyContinue([]byte(moved), next)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(moved, cnSetup.Entry("  "), next.Entry("  "), 1); string(out) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
}

// A file cn cannot read is refused with where and why, and so is a merge
// cn could not read.
func TestApplyContinueRefuses(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"not YAML", "name: a\nversion: 1\nmodels: [\n", "not YAML cn can read"},
		{"no version", "name: a\nmodels:\n  - name: b\n    provider: openai\n    model: m\n", "version: cn requires a string"},
		{"a model without a provider", "name: a\nversion: \"1\"\nmodels:\n  - name: b\n    model: m\n", "models.0: provider must be a string"},
		{"a role cn does not know", "name: a\nversion: \"1\"\nmodels:\n  - name: b\n    provider: openai\n    model: m\n    roles: [chat, bogus]\n", "role bogus is not one of cn's"},
		{"a list at the top", "- a\n- b\n", "the top level is not a mapping"},
		{"a flow list of models", "name: a\nversion: \"1\"\nmodels: [{name: b, provider: openai, model: m}]\n", "models is a flow sequence"},
		{"models a mapping", "name: a\nversion: \"1\"\nmodels:\n  b: c\n", "models is not a list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := ApplyContinue([]byte(c.in), cnSetup)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q\n%s", err, c.want, out)
			}
			var pe *ContinueParseError
			if !errors.As(err, &pe) {
				t.Errorf("%T is not a ContinueParseError", err)
			}
		})
	}
}

func TestWriteContinueAndState(t *testing.T) {
	home := t.TempDir()
	env := func(k string) string { return map[string]string{"HOME": home}[k] }
	dir := ContinueDir(env)
	if state, _ := ContinueState(env); state != "" {
		t.Fatalf("set up before setup: %q", state)
	}
	os.MkdirAll(dir, 0o700)
	path := filepath.Join(dir, ContinueFile)
	os.WriteFile(path, []byte(cnUser), 0o600)
	now := time.Date(2026, 12, 6, 15, 4, 5, 0, time.UTC)
	got, backup, err := WriteContinue(dir, cnSetup, now)
	if err != nil || got != path || backup != path+BackupSuffix+"20261206-150405" {
		t.Fatalf("%q %q %v", got, backup, err)
	}
	if b, _ := os.ReadFile(backup); string(b) != cnUser {
		t.Fatalf("the backup is not the old file byte for byte:\n%s", b)
	}
	if state, where := ContinueState(env); state != "api key" || where != path {
		t.Fatalf("state %q at %q", state, where)
	}
	// again: nothing to change, no new backup
	if _, backup, err := WriteContinue(dir, cnSetup, now.Add(time.Minute)); err != nil || backup != "" {
		t.Fatalf("second run: backup %q, %v", backup, err)
	}
	// a file cn cannot read stays as it is
	bad := "name: a\nmodels: [\n"
	os.WriteFile(path, []byte(bad), 0o600)
	if _, _, err := WriteContinue(dir, cnSetup, now); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != bad {
		t.Fatalf("a refused file was changed:\n%s", b)
	}
	if d := ContinueDir(func(k string) string { return map[string]string{"HOME": home, "CONTINUE_GLOBAL_DIR": "/x/cn"}[k] }); d != "/x/cn" {
		t.Errorf("CONTINUE_GLOBAL_DIR not followed: %q", d)
	}
}
