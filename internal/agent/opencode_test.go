package agent

import (
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
)

// OpenCode's model flag takes provider/model: exec sets spillway's
// provider, reads the model back, and adds -m after run.
func TestOpenCodeModelFlag(t *testing.T) {
	cases := []struct {
		name  string
		in    []string
		model string
		want  []string
		named string // ModelIn of in
	}{
		{"added after run", []string{"opencode", "run", "hi"}, "gpt-6.1-sol", []string{"opencode", "run", "-m", "spillway/gpt-6.1-sol", "hi"}, ""},
		{"replaced", []string{"opencode", "run", "-m", "spillway/gpt-6-astra", "hi"}, "gpt-6.1-sol", []string{"opencode", "run", "-m", "spillway/gpt-6.1-sol", "hi"}, "gpt-6-astra"},
		{"--model=", []string{"opencode", "run", "--model=spillway/gpt-6-astra", "hi"}, "gpt-6-luna", []string{"opencode", "run", "--model=spillway/gpt-6-luna", "hi"}, "gpt-6-astra"},
		{"a model with its provider stays", []string{"opencode", "run", "hi"}, "openrouter/x/y", []string{"opencode", "run", "-m", "openrouter/x/y", "hi"}, ""},
		{"another provider's model id", []string{"opencode", "run", "-m", "openrouter/anthropic/claude", "hi"}, "gpt-6-luna", []string{"opencode", "run", "-m", "spillway/gpt-6-luna", "hi"}, "anthropic/claude"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if KindOf(c.in[0]) != OpenCode {
				t.Fatalf("KindOf(%q) = %q", c.in[0], KindOf(c.in[0]))
			}
			if got := ModelIn(c.in); got != c.named {
				t.Errorf("ModelIn = %q, want %q", got, c.named)
			}
			got, ok := WithModel(c.in, c.model)
			if !ok || !reflect.DeepEqual(got, c.want) {
				t.Errorf("WithModel = %v, %v; want %v", got, ok, c.want)
			}
		})
	}
}

// Resuming: the message words give way to the prompt, the model and
// session flags to the new ones; the other flags stay with their values.
func TestOpenCodeResume(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		id   string
		want []string
		ok   bool
	}{
		{"a session", []string{"opencode", "run", "-m", "spillway/gpt-6-astra", "fix", "the", "bug"}, "ses_1",
			[]string{"opencode", "run", "-m", "spillway/gpt-6.1-sol", "--session", "ses_1", "go on"}, true},
		{"its most recent", []string{"opencode", "run", "fix it"}, "",
			[]string{"opencode", "run", "-m", "spillway/gpt-6.1-sol", "--continue", "go on"}, true},
		{"flags with values kept, old session dropped", []string{"opencode", "run", "--agent", "build", "--session", "ses_0", "-c", "--format=json", "--title", "t", "--auto", "fix", "--", "-x"}, "ses_2",
			[]string{"opencode", "run", "--agent", "build", "--format=json", "--title", "t", "--auto", "-m", "spillway/gpt-6.1-sol", "--session", "ses_2", "go on"}, true},
		{"the TUI: no", []string{"opencode", "-m", "spillway/gpt-6-astra"}, "ses_1", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := resumeArgs(c.in, c.id, "gpt-6.1-sol", "go on")
			if ok != c.ok || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("resumeArgs = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// Only OpenCode's own failure line counts (as 1.18.33 printed it with
// its model full, the 401 of a bad key, and --format json's error event),
// never a tool's output.
func TestOpenCodeJudge(t *testing.T) {
	cases := []struct {
		name, stderr, stdout string
		want                 classify.Class
	}{
		{"full", "\x1b[0m\n> build · gpt-6-astra\n\x1b[0m\n\x1b[91m\x1b[1mError: \x1b[0mOur servers are currently overloaded. Please try again later.\n", "", classify.Capacity},
		{"bad key", "\x1b[91m\x1b[1mError: \x1b[0mIncorrect API key provided: sk-test-bad. You can find your API key at https://platform.openai.com/account/api-keys.\n", "", classify.Auth},
		{"json event", "", `{"type":"error","timestamp":1,"sessionID":"ses_x","error":{"name":"APIError","data":{"message":"Our servers are currently overloaded. Please try again later.","statusCode":503,"isRetryable":true}}}`, classify.Capacity},
		{"a tool's output", "\x1b[0m$ \x1b[0mcat log\nError: Our servers are currently overloaded. Please try again later.\n429 Too Many Requests\n", "", classify.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := runOut{stdout: newTail(1 << 12), stderr: newTail(1 << 12)}
			out.stderr.Write([]byte(c.stderr))
			out.stdout.Write([]byte(c.stdout))
			if got := judge(classify.Classify, OpenCode, out).Class; got != c.want {
				t.Fatalf("judge = %s, want %s", got, c.want)
			}
		})
	}
}

// The session a run used: --format json's events, else the newest
// top-level session of the run's directory in opencode.db.
func TestOpenCodeSession(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "opencode")
	os.MkdirAll(dir, 0o700)
	db, err := sql.Open("sqlite", filepath.Join(dir, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	since := time.UnixMilli(1796570700000)
	ms := since.UnixMilli()
	for _, q := range []string{
		"CREATE TABLE session (id text PRIMARY KEY, parent_id text, directory text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL)",
		"INSERT INTO session VALUES ('ses_old', NULL, '/work', 1, 1)",
		"INSERT INTO session VALUES ('ses_other_dir', NULL, '/elsewhere', " + itoa(ms+5) + ", " + itoa(ms+5) + ")",
		"INSERT INTO session VALUES ('ses_child', 'ses_new', '/work', " + itoa(ms+4) + ", " + itoa(ms+6) + ")",
		"INSERT INTO session VALUES ('ses_new', NULL, '/work', " + itoa(ms+1) + ", " + itoa(ms+3) + ")",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	cases := []struct {
		name, stdout string
		env          map[string]string
		want         string
	}{
		{"json", `{"type":"step_start","sessionID":"ses_json1"}`, map[string]string{"XDG_DATA_HOME": data}, "ses_json1"},
		{"opencode.db", "hello", map[string]string{"XDG_DATA_HOME": data}, "ses_new"},
		{"OPENCODE_DB", "hello", map[string]string{"OPENCODE_DB": filepath.Join(dir, "opencode.db")}, "ses_new"},
		{"no database", "hello", map[string]string{"XDG_DATA_HOME": t.TempDir()}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := runOut{stdout: newTail(1 << 10), stderr: newTail(1 << 10)}
			out.stdout.Write([]byte(c.stdout))
			o := Options{Dir: "/work", Getenv: func(k string) string { return c.env[k] }}
			if got := sessionOf(OpenCode, []string{"opencode", "run", "hi"}, out, o, since); got != c.want {
				t.Fatalf("session %q, want %q", got, c.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// OpenCode's own model: opencode.json's model (provider/model, comments
// allowed), under XDG_CONFIG_HOME or ~/.config; else none.
func TestOpenCodeDefaultModel(t *testing.T) {
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "opencode"), 0o700)
	os.WriteFile(filepath.Join(cfg, "opencode", "opencode.json"), []byte("{\n  // mine\n  \"model\": \"spillway/gpt-6-luna\",\n}\n"), 0o600)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".config", "opencode"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "opencode", "opencode.json"), []byte(`{"model": "spillway/gpt-6.1-sol"}`), 0o600)
	for _, c := range []struct {
		name        string
		env         map[string]string
		model, from string
	}{
		{"XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": cfg, "HOME": home}, "gpt-6-luna", filepath.Join(cfg, "opencode", "opencode.json")},
		{"~/.config", map[string]string{"HOME": home}, "gpt-6.1-sol", filepath.Join(home, ".config", "opencode", "opencode.json")},
		{"none", map[string]string{"HOME": t.TempDir()}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, from := DefaultModel(OpenCode, func(k string) string { return c.env[k] })
			if m != c.model || from != c.from {
				t.Fatalf("%q from %q, want %q from %q", m, from, c.model, c.from)
			}
		})
	}
}
