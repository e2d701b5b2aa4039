package agent

import (
	"cmp"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
)

// OpenCode's model flag takes provider/model: exec keeps the provider the
// command named (spillway's when it named none), reads the model back, and
// adds -m after run.
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
		{"a model id with a slash gets spillway's provider", []string{"opencode", "run", "hi"}, "meta/llama", []string{"opencode", "run", "-m", "spillway/meta/llama", "hi"}, ""},
		{"a model id with a slash replaced", []string{"opencode", "run", "-m", "spillway/meta/llama", "hi"}, "meta/llama-2", []string{"opencode", "run", "-m", "spillway/meta/llama-2", "hi"}, "meta/llama"},
		{"the command's provider stays", []string{"opencode", "run", "-m", "openai/gpt-6-astra", "hi"}, "gpt-6-luna", []string{"opencode", "run", "-m", "openai/gpt-6-luna", "hi"}, "gpt-6-astra"},
		{"the command's provider stays, --model=", []string{"opencode", "run", "--model=openrouter/anthropic/claude", "hi"}, "gpt-6-luna", []string{"opencode", "run", "--model=openrouter/gpt-6-luna", "hi"}, "anthropic/claude"},
		{"a value with no provider", []string{"opencode", "run", "-m", "gpt-6-astra", "hi"}, "gpt-6-luna", []string{"opencode", "run", "-m", "spillway/gpt-6-luna", "hi"}, "gpt-6-astra"},
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
		{"its most recent, when the lookup could not run", []string{"opencode", "run", "fix it"}, opencodeContinue,
			[]string{"opencode", "run", "-m", "spillway/gpt-6.1-sol", "--continue", "go on"}, true},
		{"no session found: no resume (the run starts over)", []string{"opencode", "run", "fix it"}, "", nil, false},
		{"the command's provider stays", []string{"opencode", "run", "-m", "openai/gpt-6-astra", "fix it"}, "ses_1",
			[]string{"opencode", "run", "-m", "openai/gpt-6.1-sol", "--session", "ses_1", "go on"}, true},
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
			out := printed(c.stdout, c.stderr)
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
	bad := filepath.Join(t.TempDir(), "opencode.db")
	os.WriteFile(bad, []byte("not a database, a file of text long enough to be read as one"), 0o600)
	cases := []struct {
		name, stdout string
		env          map[string]string
		want         string
	}{
		{"json", `{"type":"step_start","sessionID":"ses_json1"}`, map[string]string{"XDG_DATA_HOME": data}, "ses_json1"},
		{"opencode.db", "hello", map[string]string{"XDG_DATA_HOME": data}, "ses_new"},
		{"OPENCODE_DB", "hello", map[string]string{"OPENCODE_DB": filepath.Join(dir, "opencode.db")}, "ses_new"},
		{"no database", "hello", map[string]string{"XDG_DATA_HOME": t.TempDir()}, ""},
		{"none of this directory's since the run", "hello", map[string]string{"XDG_DATA_HOME": data, "PWD_": "/elsewhere/not"}, ""},
		{"a database that cannot be queried", "hello", map[string]string{"OPENCODE_DB": bad}, opencodeContinue},
		{"no data directory", "hello", map[string]string{}, opencodeContinue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := printed(c.stdout, "")
			o := Options{Dir: cmp.Or(c.env["PWD_"], "/work"), Getenv: func(k string) string { return c.env[k] }}
			if got := sessionOf(t.Context(), OpenCode, []string{"opencode", "run", "hi"}, out, o, since); got != c.want {
				t.Fatalf("session %q, want %q", got, c.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// OpenCode's own model: the model of its global configuration (provider/
// model, comments allowed; config.json, opencode.json, opencode.jsonc, the
// last that sets it wins), under XDG_CONFIG_HOME or ~/.config; another
// provider's model is reported with its provider; else none.
func TestOpenCodeDefaultModel(t *testing.T) {
	jsonc := t.TempDir()
	os.MkdirAll(filepath.Join(jsonc, "opencode"), 0o700)
	os.WriteFile(filepath.Join(jsonc, "opencode", "config.json"), []byte(`{"model": "spillway/gpt-6-mini"}`), 0o600)
	os.WriteFile(filepath.Join(jsonc, "opencode", "opencode.json"), []byte(`{"model": "spillway/gpt-6-luna"}`), 0o600)
	os.WriteFile(filepath.Join(jsonc, "opencode", "opencode.jsonc"), []byte("{\n  // mine\n  \"model\": \"spillway/gpt-6-astra\",\n}\n"), 0o600)
	onlyConfig := t.TempDir()
	os.MkdirAll(filepath.Join(onlyConfig, "opencode"), 0o700)
	os.WriteFile(filepath.Join(onlyConfig, "opencode", "config.json"), []byte(`{"model": "spillway/gpt-6-mini"}`), 0o600)
	os.WriteFile(filepath.Join(onlyConfig, "opencode", "opencode.jsonc"), []byte(`{"theme": "x"}`), 0o600)
	other := t.TempDir()
	os.MkdirAll(filepath.Join(other, "opencode"), 0o700)
	os.WriteFile(filepath.Join(other, "opencode", "opencode.json"), []byte(`{"model": "anthropic/claude-x"}`), 0o600)
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
		{"opencode.jsonc wins", map[string]string{"XDG_CONFIG_HOME": jsonc}, "gpt-6-astra", filepath.Join(jsonc, "opencode", "opencode.jsonc")},
		{"config.json, the later files naming none", map[string]string{"XDG_CONFIG_HOME": onlyConfig}, "gpt-6-mini", filepath.Join(onlyConfig, "opencode", "config.json")},
		{"another provider's model, with its provider", map[string]string{"XDG_CONFIG_HOME": other}, "anthropic/claude-x", filepath.Join(other, "opencode", "opencode.json")},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, from := DefaultModel(OpenCode, func(k string) string { return c.env[k] })
			if m != c.model || from != c.from {
				t.Fatalf("%q from %q, want %q from %q", m, from, c.model, c.from)
			}
		})
	}
}
