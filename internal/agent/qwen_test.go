package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

func TestQwenModelFlag(t *testing.T) {
	cases := []struct {
		in    []string
		model string
		want  []string
	}{
		{[]string{"qwen", "--yolo", "fix it"}, "m2", []string{"qwen", "-m", "m2", "--yolo", "fix it"}},
		{[]string{"qwen", "-m", "m1", "--yolo", "fix it"}, "m2", []string{"qwen", "-m", "m2", "--yolo", "fix it"}},
		{[]string{"/opt/bin/qwen", "--model=m1", "x"}, "m2", []string{"/opt/bin/qwen", "--model=m2", "x"}},
	}
	for _, c := range cases {
		got, ok := WithModel(c.in, c.model)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("WithModel(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
		if m := ModelIn(got); m != c.model {
			t.Errorf("ModelIn(%q) = %q, want %q", got, m, c.model)
		}
	}
	if k := KindOf("/usr/local/bin/qwen"); k != Qwen {
		t.Fatalf("KindOf(qwen) = %q", k)
	}
}

func TestQwenResumeArgs(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		id   string
		want []string
		ok   bool
	}{
		{"a positional prompt, by id", []string{"qwen", "--auth-type", "openai", "--yolo", "fix it"}, "0b5e…",
			[]string{"qwen", "-m", "m2", "--auth-type", "openai", "--yolo", "go on", "-r", "0b5e…"}, true},
		{"its latest, when the session lookup could not run", []string{"qwen", "--yolo", "fix it"}, qwenLatest,
			[]string{"qwen", "-m", "m2", "--yolo", "go on", "--continue"}, true},
		{"no session found: started over, never --continue", []string{"qwen", "--yolo", "fix it"}, "", nil, false},
		{"the old model, session and --continue go", []string{"qwen", "-m", "m1", "-r", "old", "--continue", "-o", "json", "fix it"}, "new",
			[]string{"qwen", "-m", "m2", "-o", "json", "go on", "-r", "new"}, true},
		{"-p PROMPT", []string{"qwen", "-p", "fix it", "--yolo"}, "id",
			[]string{"qwen", "-m", "m2", "-p", "go on", "--yolo", "-r", "id"}, true},
		{"--prompt=PROMPT", []string{"qwen", "--yolo", "--prompt=fix it"}, "id",
			[]string{"qwen", "-m", "m2", "--yolo", "--prompt=go on", "-r", "id"}, true},
		{"a flag's value is no prompt", []string{"qwen", "--approval-mode", "yolo"}, "id", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := resumeArgs(c.in, c.id, "m2", "go on")
			if ok != c.ok || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("resumeArgs(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

// Its own failure lines only: what Qwen Code 0.24.4 printed when full, when
// its key was refused; never what a tool printed.
func TestQwenErrorLines(t *testing.T) {
	cases := []struct {
		stderr, stdout string
		want           string
	}{
		{"Ripgrep not available: spawn rg EACCES. Falling back to built-in grep.\n[API Error: 503 Our servers are currently overloaded. Please try again later.]", "", "capacity"},
		{"[API Error: 401 Incorrect API key provided: sk-***wen. You can find your API key at https://platform.openai.com/account/api-keys.]", "", "auth"},
		{"", "Command: cat log.txt\nOutput: API Error: 503 overloaded\nExit Code: 0", "unknown"},
		{"", "The command printed Error: EACCES: permission denied", "unknown"},
		{"", "  [API Error: 529 Overloaded] (quoted by the model)", "unknown"},
	}
	for _, c := range cases {
		out := printed(c.stdout, c.stderr)
		if got := string(judge(classify.Classify, Qwen, out).Class); got != c.want {
			t.Errorf("judge(%q, %q) = %s, want %s", c.stderr, c.stdout, got, c.want)
		}
	}
}

// The session a run used: the newest chat of the run directory's own
// project (never another directory's), --continue only when there was no
// looking.
func TestQwenSession(t *testing.T) {
	home := t.TempDir()
	work := filepath.Join(t.TempDir(), "my repo.v2")
	os.MkdirAll(work, 0o700)
	work, _ = filepath.EvalSymlinks(work)
	wd, _ := os.Getwd()
	wd, _ = filepath.EvalSymlinks(wd)
	since := time.Now()
	oldID, newID, siblingID, cwdID := "19840b9b-61d1-4273-83fb-4681a5920a45", "d54d6ac5-4b07-48d4-af45-ae931d5fbe0e", "6f1d0b7e-3c35-4c1b-9d0e-2f1f5a0c9a11", "0c7bb0a4-5a3e-4f4e-8d4f-7e4b2b9d7f22"
	write := func(qwen, dir, id string, at time.Time) {
		chats := filepath.Join(qwen, "projects", qwenProject(dir), "chats")
		os.MkdirAll(chats, 0o700)
		p := filepath.Join(chats, id+".jsonl")
		os.WriteFile(p, []byte("{}\n"), 0o600)
		os.Chtimes(p, at, at)
	}
	qwen := filepath.Join(home, ".qwen")
	write(qwen, work, oldID, since.Add(-time.Hour)) // from before the run
	write(qwen, work, newID, since.Add(time.Second))
	write(qwen, work+"-other", siblingID, since.Add(time.Minute)) // another directory's, newer
	write(qwen, wd, cwdID, since.Add(2*time.Second))
	write(filepath.Join(work, "rel"), work, siblingID, since.Add(time.Second))
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	o := Options{Dir: work, Getenv: env("HOME", home)}
	cases := []struct {
		name string
		args []string
		o    Options
		want string
	}{
		{"the newest of the run directory's written since the run began", []string{"qwen", "fix it"}, o, newID},
		{"no Dir: the current directory's", []string{"qwen", "fix it"}, Options{Getenv: env("HOME", home)}, cwdID},
		{"the one -r names", []string{"qwen", "-r", oldID, "go on"}, o, oldID},
		{"the one --session-id names", []string{"qwen", "--session-id=" + oldID, "x"}, o, oldID},
		{"QWEN_HOME moves the directory: none there", []string{"qwen", "x"}, Options{Dir: work, Getenv: env("HOME", home, "QWEN_HOME", filepath.Join(home, "elsewhere"))}, ""},
		{"a relative QWEN_HOME, from the run directory", []string{"qwen", "x"}, Options{Dir: work, Getenv: env("HOME", home, "QWEN_HOME", "rel")}, siblingID},
		{"no Qwen Code directory: its latest", []string{"qwen", "x"}, Options{Dir: work, Getenv: env()}, qwenLatest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sessionOf(t.Context(), Qwen, c.args, runOut{}, c.o, since); got != c.want {
				t.Fatalf("session %q, want %q", got, c.want)
			}
		})
	}
}

func TestQwenProject(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/work/repo": "-home-me-work-repo",
		"/tmp/my repo.v2_x":  "-tmp-my-repo-v2-x",
		"/w/é":               "-w--",  // one UTF-16 unit
		"/w/😀":               "-w---", // two
	} {
		if got := qwenProject(in); got != want {
			t.Errorf("qwenProject(%q) = %q, want %q", in, got, want)
		}
	}
}

// exec's system defaults for Qwen Code: maxRetries 0 added to what Qwen
// Code would read as its system defaults, in a file of spillway's.
func TestQwenFailFast(t *testing.T) {
	cases := []struct {
		name     string
		defaults string // the system defaults Qwen Code reads; "" for none
		env      bool   // want QWEN_CODE_SYSTEM_DEFAULTS_PATH set
		want     map[string]any
		err      string
	}{
		{"no defaults of its own", "", true,
			map[string]any{"$version": 4.0, "model": map[string]any{"generationConfig": map[string]any{"maxRetries": 0.0}}}, ""},
		{"the admin's defaults kept, with comments", "{\n  // the admin's\n  \"$version\": 4, \"ui\": {\"theme\": \"GitHub\"}, \"model\": {\"generationConfig\": {\"timeout\": 9000}}\n}", true,
			map[string]any{"$version": 4.0, "ui": map[string]any{"theme": "GitHub"}, "model": map[string]any{"generationConfig": map[string]any{"timeout": 9000.0, "maxRetries": 0.0}}}, ""},
		{"maxRetries set already: theirs", `{"model": {"generationConfig": {"maxRetries": 2}}}`, false, nil, ""},
		{"a file Qwen Code cannot read", `{"model": {},}`, false, nil, "cannot read its system defaults"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			env := map[string]string{"HOME": home}
			if c.defaults != "" {
				p := filepath.Join(home, "etc", "system-defaults.json")
				os.MkdirAll(filepath.Dir(p), 0o700)
				os.WriteFile(p, []byte(c.defaults), 0o600)
				env["QWEN_CODE_SYSTEM_SETTINGS_PATH"] = filepath.Join(home, "etc", "settings.json")
			} else {
				env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] = filepath.Join(home, "none.json")
			}
			o := Options{Getenv: func(k string) string { return env[k] }, Env: []string{}}
			for k, v := range env {
				o.Env = append(o.Env, k+"="+v)
			}
			cleanup, err := failFast(Qwen, &o)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var path string
			for _, kv := range o.Env {
				if v, ok := strings.CutPrefix(kv, "QWEN_CODE_SYSTEM_DEFAULTS_PATH="); ok && strings.HasPrefix(v, filepath.Join(home, ".local", "state", "spillway", "qwen")) {
					path = v
				}
			}
			if (path != "") != c.env {
				t.Fatalf("env %q: want spillway's defaults %v", o.Env, c.env)
			}
			if path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var got map[string]any
				if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, c.want) {
					t.Fatalf("spillway's defaults %s (%v), want %v", b, err, c.want)
				}
			}
			cleanup()
			if path != "" {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Fatalf("the run's defaults file outlived it: %v", err)
				}
			}
			if c.defaults != "" {
				if b, _ := os.ReadFile(filepath.Join(home, "etc", "system-defaults.json")); string(b) != c.defaults {
					t.Fatal("the admin's file changed")
				}
			}
		})
	}
}

func TestQwenDefaultModel(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".qwen"), 0o700)
	os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte("\uFEFF{\n  // as setup qwen keeps it\n  \"model\": { \"name\": \"gpt-6-sol\" } /* mine */\n}\n"), 0o600)
	m, from := DefaultModel(Qwen, func(k string) string { return map[string]string{"HOME": home}[k] })
	if m != "gpt-6-sol" || from != filepath.Join(home, ".qwen", "settings.json") {
		t.Fatalf("%q from %q", m, from)
	}
	if m, _ := DefaultModel(Qwen, func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] }); m != "" {
		t.Fatalf("no settings: %q, want none", m)
	}
	if !slices.Contains(Kinds, Qwen) {
		t.Fatal("Qwen is not among the Kinds")
	}
}

// A model of a modelProviders entry ignores model.generationConfig: exec
// gives the entries in force maxRetries 0 in a system settings file of its
// own, the user's file untouched, an entry's own maxRetries kept.
func TestQwenFailFastProviderEntries(t *testing.T) {
	home := t.TempDir()
	user := filepath.Join(home, ".qwen", "settings.json")
	os.MkdirAll(filepath.Dir(user), 0o700)
	orig := `{
  // mine
  "modelProviders": {"openai": [
    {"id": "qwen-max", "baseUrl": "https://dashscope.example/v1", "envKey": "DASHSCOPE_API_KEY"},
    {"id": "mine", "generationConfig": {"maxRetries": 2, "timeout": 9}}
  ]}
}`
	os.WriteFile(user, []byte(orig), 0o600)
	env := map[string]string{"HOME": home, "QWEN_CODE_SYSTEM_SETTINGS_PATH": filepath.Join(home, "etc", "settings.json")}
	o := Options{Getenv: func(k string) string { return env[k] }, Env: []string{"HOME=" + home, "QWEN_CODE_SYSTEM_SETTINGS_PATH=" + env["QWEN_CODE_SYSTEM_SETTINGS_PATH"]}}
	cleanup, err := failFast(Qwen, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	got := map[string]string{}
	for _, kv := range o.Env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	sys := got["QWEN_CODE_SYSTEM_SETTINGS_PATH"]
	if !strings.HasPrefix(sys, filepath.Join(home, ".local", "state", "spillway", "qwen")) {
		t.Fatalf("QWEN_CODE_SYSTEM_SETTINGS_PATH %q: want spillway's", sys)
	}
	b, _ := os.ReadFile(sys)
	var s map[string]any
	json.Unmarshal(b, &s)
	entries := s["modelProviders"].(map[string]any)["openai"].([]any)
	if g := entries[0].(map[string]any)["generationConfig"]; !reflect.DeepEqual(g, map[string]any{"maxRetries": 0.0}) {
		t.Fatalf("qwen-max's generationConfig %v", g)
	}
	if g := entries[1].(map[string]any)["generationConfig"]; !reflect.DeepEqual(g, map[string]any{"maxRetries": 2.0, "timeout": 9.0}) {
		t.Fatalf("mine's generationConfig %v: want the user's own kept", g)
	}
	if b, _ := os.ReadFile(user); string(b) != orig {
		t.Fatal("the user's settings.json changed")
	}
	cleanup()
	if _, err := os.Stat(sys); !os.IsNotExist(err) {
		t.Fatal("spillway's system settings outlived the run")
	}
}

// With no Dir, exec runs Qwen Code in spillway's own directory: a project
// .qwen/settings.json there with modelProviders of its own is left to Qwen
// Code (no system settings of spillway's override it).
func TestQwenFailFastProjectProviders(t *testing.T) {
	home, work, plain := t.TempDir(), t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(home, ".qwen", "settings.json"), filepath.Join(work, ".qwen", "settings.json")} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(`{"modelProviders": {"openai": [{"id": "qwen-max", "baseUrl": "https://dashscope.example/v1"}]}}`), 0o600)
	}
	t.Chdir(work)
	cases := []struct {
		name   string
		dir    string
		system bool // want spillway's system settings
	}{
		{"no Dir: the current directory's project", "", false},
		{"Dir: its project", work, false},
		{"Dir without a project's providers: the user's get maxRetries 0", plain, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"HOME": home, "QWEN_CODE_SYSTEM_SETTINGS_PATH": filepath.Join(home, "etc", "settings.json")}
			o := Options{Dir: c.dir, Getenv: func(k string) string { return env[k] }, Env: []string{"HOME=" + home, "QWEN_CODE_SYSTEM_SETTINGS_PATH=" + env["QWEN_CODE_SYSTEM_SETTINGS_PATH"]}}
			cleanup, err := failFast(Qwen, &o)
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			got := slices.ContainsFunc(o.Env, func(kv string) bool {
				return strings.HasPrefix(kv, "QWEN_CODE_SYSTEM_SETTINGS_PATH="+filepath.Join(home, ".local", "state", "spillway", "qwen"))
			})
			if got != c.system {
				t.Fatalf("spillway's system settings %v, want %v (env %q)", got, c.system, o.Env)
			}
		})
	}
}

// Copies of Qwen Code's system files that a killed exec left behind (they
// may hold a key) go at the next run once a day old; a running exec's stay.
func TestQwenFailFastStaleCopies(t *testing.T) {
	home := t.TempDir()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	dir := filepath.Join(home, ".local", "state", "spillway", "qwen")
	os.MkdirAll(dir, 0o700)
	cases := []struct {
		name string
		age  time.Duration
		gone bool
	}{
		{"system-settings-1.json", 25 * time.Hour, true},
		{"system-defaults-2.json", 48 * time.Hour, true},
		{"system-settings-3.json", time.Hour, false},
		{"notes.json", 48 * time.Hour, false},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, []byte(`{"security": {"auth": {"apiKey": "sk-test-x"}}}`), 0o600)
		os.Chtimes(p, now.Add(-c.age), now.Add(-c.age))
	}
	env := map[string]string{"HOME": home, "QWEN_CODE_SYSTEM_SETTINGS_PATH": filepath.Join(home, "etc", "settings.json")}
	o := Options{Dir: home, Getenv: func(k string) string { return env[k] },
		Engine: policy.New(config.Default(), policy.WithClock(policytest.New(now)))}
	cleanup, err := failFast(Qwen, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	for _, c := range cases {
		_, err := os.Stat(filepath.Join(dir, c.name))
		if gone := os.IsNotExist(err); gone != c.gone {
			t.Errorf("%s (%v old): gone %v, want %v", c.name, c.age, gone, c.gone)
		}
	}
}
