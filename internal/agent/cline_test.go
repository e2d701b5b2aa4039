package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spillway/spillway/classify"
)

func TestClineArgs(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		model     string
		want      []string
		wantModel string // ModelIn(args)
	}{
		{"added after the command", []string{"cline", "fix the tests"}, "gpt-6.1-sol", []string{"cline", "-m", "gpt-6.1-sol", "fix the tests"}, ""},
		{"-m replaced", []string{"/opt/bin/cline", "-m", "gpt-6-astra", "fix"}, "gpt-6-luna", []string{"/opt/bin/cline", "-m", "gpt-6-luna", "fix"}, "gpt-6-astra"},
		{"--model replaced", []string{"cline", "--model", "gpt-6-astra", "--json", "fix"}, "gpt-6-luna", []string{"cline", "--model", "gpt-6-luna", "--json", "fix"}, "gpt-6-astra"},
		{"--model= replaced", []string{"cline", "--model=gpt-6-astra", "fix"}, "gpt-6-luna", []string{"cline", "--model=gpt-6-luna", "fix"}, "gpt-6-astra"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if k := KindOf(c.args[0]); k != Cline {
				t.Fatalf("KindOf(%q) = %q", c.args[0], k)
			}
			if got := ModelIn(c.args); got != c.wantModel {
				t.Errorf("ModelIn = %q, want %q", got, c.wantModel)
			}
			got, ok := WithModel(c.args, c.model)
			if !ok || !slices.Equal(got, c.want) {
				t.Errorf("WithModel = %q %v, want %q", got, ok, c.want)
			}
			if _, ok := resumeArgs(c.args, "1796570679580_c3gm8", c.model, "Continue"); ok {
				t.Error("Cline resumes only on a terminal: resumeArgs must refuse")
			}
			if typeOf(Cline) != "openai" {
				t.Errorf("typeOf(Cline) = %q", typeOf(Cline))
			}
		})
	}
}

// What Cline 3.0.65 printed (stderr, captured to a file: still red) when
// its model stayed full and when its key was refused, against the lines
// of its tool output and its answers.
func TestClineErrorLines(t *testing.T) {
	cases := []struct {
		name, stderr, stdout string
		want                 classify.Class
	}{
		{"full (red)", "\x1b[31merror:\x1b[0m Our servers are currently overloaded. Please try again later.\n", "", classify.Capacity},
		{"full (NO_COLOR)", "error: Our servers are currently overloaded. Please try again later.\n", "", classify.Capacity},
		{"full (--json)", "", `{"ts":"2026-12-06T15:29:51.063Z","type":"error","message":"Our servers are currently overloaded. Please try again later."}` + "\n", classify.Capacity},
		{"bad key", "\x1b[31merror:\x1b[0m Incorrect API key provided: sk-***key. You can find your API key at https://platform.openai.com/account/api-keys.\n", "", classify.Auth},
		{"tool output", "", "\x1b[36m[run_commands]\x1b[0m cat log.txt\n   \x1b[90m⎿ \x1b[0m\x1b[2merror: Our servers are currently overloaded\x1b[0m\n", classify.Unknown},
		{"tool output, plain", "", "[run_commands] cat log.txt\n   ⎿ error: 503 Service Unavailable overloaded\n", classify.Unknown},
		{"an answer quoting an error", "", "The log says: error: rate limit exceeded\n", classify.Unknown},
		{"a --json event that is not an error", "", `{"ts":"2026-12-06T15:29:50.050Z","type":"agent_event","event":{"type":"error","error":{"message":"Our servers are currently overloaded."}}}` + "\n", classify.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := printed(c.stdout, c.stderr)
			v := judge(classify.Classify, Cline, out)
			if v.Class != c.want {
				t.Errorf("judge = %s, want %s", v.Class, c.want)
			}
			if strings.Contains(v.Message, "\x1b") {
				t.Errorf("the verdict's message keeps the terminal's codes: %q", v.Message)
			}
		})
	}
}

func TestClineDefaultModel(t *testing.T) {
	// as `cline auth -p openai -k KEY -m M -b URL/v1` writes it
	const written = `{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "modes": {},
  "providers": {
    "anthropic": {"settings": {"provider": "anthropic", "model": "claude-opus-5-5"}, "updatedAt": "2026-12-06T15:20:03.633Z", "tokenSource": "manual"},
    "openai-compatible": {
      "settings": {
        "provider": "openai-compatible",
        "apiKey": "sk-test-abc",
        "model": "gpt-6-astra",
        "baseUrl": "http://127.0.0.1:9/v1"
      },
      "updatedAt": "2026-12-06T15:20:03.633Z",
      "tokenSource": "manual"
    }
  }
}
`
	home, moved := t.TempDir(), t.TempDir()
	for _, dir := range []string{filepath.Join(home, ".cline"), moved} {
		p := filepath.Join(dir, "data", "settings", "providers.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		body := written
		if dir == moved {
			body = `{"version":1,"lastUsedProvider":"anthropic","modes":{},"providers":{"anthropic":{"settings":{"provider":"anthropic","model":"claude-sonnet-5-5"},"updatedAt":"x","tokenSource":"manual"}}}`
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		env       map[string]string
		want      string
		wantWhere string
	}{
		{"HOME", map[string]string{"HOME": home}, "gpt-6-astra", filepath.Join(home, ".cline", "data", "settings", "providers.json")},
		{"CLINE_DIR", map[string]string{"HOME": home, "CLINE_DIR": moved}, "claude-sonnet-5-5", filepath.Join(moved, "data", "settings", "providers.json")},
		{"no file", map[string]string{"HOME": t.TempDir()}, "", ""},
		// where setup cline writes it, too (agentfiles.ClineSettingsPath)
		{"CLINE_DATA_DIR", map[string]string{"HOME": home, "CLINE_DATA_DIR": filepath.Join(moved, "data")}, "claude-sonnet-5-5", filepath.Join(moved, "data", "settings", "providers.json")},
		{"CLINE_PROVIDER_SETTINGS_PATH", map[string]string{"HOME": home, "CLINE_PROVIDER_SETTINGS_PATH": filepath.Join(moved, "data", "settings", "providers.json")}, "claude-sonnet-5-5", filepath.Join(moved, "data", "settings", "providers.json")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, where := DefaultModel(Cline, func(k string) string { return c.env[k] })
			if got != c.want || where != c.wantWhere {
				t.Errorf("DefaultModel = %q from %q, want %q from %q", got, where, c.want, c.wantWhere)
			}
		})
	}
}

func TestClineModelOfBrokenFiles(t *testing.T) {
	for _, b := range []string{``, `// a comment Cline's JSON.parse refuses` + "\n{}", `{"lastUsedProvider":"x","providers":{}}`, `[]`} {
		if m := clineModel([]byte(b)); m != "" {
			t.Errorf("clineModel(%q) = %q, want none", b, m)
		}
	}
}

// exec keeps the bytes of the providers.json Cline reads (cline -m saves
// the model it is given there) and puts them back after its runs.
func TestClineKeepsSettings(t *testing.T) {
	const mine = "{\"version\": 1, \"mine\": true}\n"
	cases := []struct {
		name string
		env  func(home string) map[string]string
		args []string
		file func(home, work string) string
	}{
		{"HOME", func(h string) map[string]string { return map[string]string{"HOME": h} }, []string{"cline", "hi"},
			func(h, _ string) string { return filepath.Join(h, ".cline", "data", "settings", "providers.json") }},
		{"CLINE_DATA_DIR", func(h string) map[string]string {
			return map[string]string{"HOME": h, "CLINE_DATA_DIR": filepath.Join(h, "d")}
		}, []string{"cline", "hi"},
			func(h, _ string) string { return filepath.Join(h, "d", "settings", "providers.json") }},
		{"--config relative to the run's directory", func(h string) map[string]string { return map[string]string{"HOME": h} }, []string{"cline", "--config", "cfg", "hi"},
			func(_, w string) string { return filepath.Join(w, "cfg", "data", "settings", "providers.json") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home, work := t.TempDir(), t.TempDir()
			path := c.file(home, work)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(mine), 0o600); err != nil {
				t.Fatal(err)
			}
			env := c.env(home)
			o := Options{Command: c.args, Dir: work, Getenv: func(k string) string { return env[k] }}
			cleanup, err := failFast(Cline, &o)
			if err != nil {
				t.Fatal(err)
			}
			// what cline -m does to it
			if err := os.WriteFile(path, []byte(`{"version": 1, "model": "gpt-6.1-sol"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			cleanup()
			got, _ := os.ReadFile(path)
			fi, _ := os.Stat(path)
			if string(got) != mine || fi.Mode().Perm() != 0o600 {
				t.Fatalf("after exec: %q (%v), want the user's bytes back %q (-rw-------)", got, fi.Mode().Perm(), mine)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*spillway*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
