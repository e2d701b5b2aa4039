package setup

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/agentfiles"
)

var qwenOpts = QwenOptions{BaseURL: "http://127.0.0.1:8790/v1", Models: []string{"gpt-6-sol", "gpt-6.1-sol"}, EnvKey: "OPENAI_API_KEY"}

func TestApplyQwen(t *testing.T) {
	mine := `{ "id": "local", "name": "Local", "baseUrl": "http://127.0.0.1:11434/v1", "envKey": "OLLAMA_KEY" }`
	cases := []struct {
		name     string
		existing string
		keep     []string // text of the user's that stays
		err      string
		// what Qwen Code then reads
		model     string
		ids       []string
		fallbacks any
		version   any
	}{
		{name: "no file", existing: "", model: "gpt-6-sol", ids: []string{"gpt-6-sol", "gpt-6.1-sol"}, version: 4.0},
		{name: "comments, another provider and own fallbacks", existing: "{\n  // mine\n  \"ui\": {\"theme\": \"GitHub\"}, /* theme */\n  \"modelProviders\": {\"openai\": [" + mine + "]},\n  \"modelFallbacks\": \"qwen-plus\",\n  \"$version\": 4\n}\n",
			keep: []string{"// mine", "/* theme */", `"ui": {"theme": "GitHub"}`}, model: "gpt-6-sol", ids: []string{"local", "gpt-6-sol", "gpt-6.1-sol"}, fallbacks: "", version: 4.0},
		{name: "spillway's old entries replaced", existing: `{"modelProviders": {"openai": [{"id": "gpt-5.5", "description": "` + QwenMarker + `", "baseUrl": "http://old/v1"}, {"id": "gpt-6-sol", "description": "` + QwenMarker + `"}, ` + mine + `]}}`,
			model: "gpt-6-sol", ids: []string{"local", "gpt-6-sol", "gpt-6.1-sol"}},
		{name: "an entry of yours with a model's id: refused, named", existing: `{"model": {"name": "gpt-6-sol"}, "modelProviders": {"openai": [{"id": "gpt-6-sol", "baseUrl": "https://dashscope.example/v1", "envKey": "DASHSCOPE_API_KEY"}]}}`,
			err: `an entry of yours with id "gpt-6-sol" (baseUrl "https://dashscope.example/v1")`},
		{name: "a byte order mark, which Qwen Code drops", existing: "\uFEFF{\"model\": {\"name\": \"x\"}}", keep: []string{"\uFEFF{"}, model: "gpt-6-sol", ids: []string{"gpt-6-sol", "gpt-6.1-sol"}},
		{name: "a trailing comma", existing: "{\n  \"ui\": {},\n}\n", err: "line 2, column 11: a trailing comma before '}' (Qwen Code reads comments, not trailing commas)"},
		{name: "modelProviders.openai not an array", existing: `{"modelProviders": {"openai": {"id": "x"}}}`, err: "modelProviders.openai is not an array"},
		{name: "not an object", existing: `[1]`, err: "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := ApplyQwen([]byte(c.existing), qwenOpts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range c.keep {
				if !bytes.Contains(out, []byte(k)) {
					t.Fatalf("lost %q:\n%s", k, out)
				}
			}
			s, err := agentfiles.ParseQwenSettings(out)
			if err != nil {
				t.Fatalf("Qwen Code could not read the result: %v\n%s", err, out)
			}
			if m := s["model"].(map[string]any)["name"]; m != c.model {
				t.Fatalf("model.name %v", m)
			}
			if a := s["security"].(map[string]any)["auth"].(map[string]any)["selectedType"]; a != "openai" {
				t.Fatalf("auth %v", a)
			}
			var ids []string
			for _, e := range s["modelProviders"].(map[string]any)["openai"].([]any) {
				m := e.(map[string]any)
				ids = append(ids, m["id"].(string))
				if m["description"] == QwenMarker && (m["baseUrl"] != qwenOpts.BaseURL || m["envKey"] != "OPENAI_API_KEY" || m["wireApi"] != "responses" ||
					!reflect.DeepEqual(m["generationConfig"], map[string]any{"maxRetries": 0.0})) {
					t.Fatalf("spillway's entry %v", m)
				}
			}
			if !reflect.DeepEqual(ids, c.ids) {
				t.Fatalf("entries %v, want %v", ids, c.ids)
			}
			if s["modelFallbacks"] != c.fallbacks || s["$version"] != c.version {
				t.Fatalf("modelFallbacks %v, $version %v", s["modelFallbacks"], s["$version"])
			}
			// again: nothing changes
			if again, err := ApplyQwen(out, qwenOpts); err != nil || !bytes.Equal(again, out) {
				t.Fatalf("a second run changed the file (%v):\n%s", err, again)
			}
		})
	}
}

func TestWriteQwenAndState(t *testing.T) {
	home := t.TempDir()
	env := func(k string) string { return map[string]string{"HOME": home}[k] }
	if s, _ := QwenState(env); s != "" {
		t.Fatalf("state %q before setup", s)
	}
	dir := agentfiles.QwenHome(env, "")
	os.MkdirAll(dir, 0o700)
	orig := []byte("{\n  // mine\n  \"ui\": {\"theme\": \"GitHub\"}\n}\n")
	os.WriteFile(filepath.Join(dir, "settings.json"), orig, 0o600)
	path, backup, err := WriteQwen(dir, qwenOpts, time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC))
	if err != nil || backup != filepath.Join(dir, "settings.json.spillway-backup-20261206-150000") {
		t.Fatalf("%q %q %v", path, backup, err)
	}
	if b, _ := os.ReadFile(backup); !bytes.Equal(b, orig) {
		t.Fatal("the backup is not the old file byte for byte")
	}
	if s, where := QwenState(env); s != "api key" || where != path {
		t.Fatalf("state %q at %q", s, where)
	}
	// QWEN_HOME moves it
	other := filepath.Join(home, "q")
	if got := agentfiles.QwenHome(func(k string) string { return map[string]string{"HOME": home, "QWEN_HOME": "~/q"}[k] }, ""); got != other {
		t.Fatalf("QwenHome %q, want %q", got, other)
	}
	if _, _, err := WriteQwen("", qwenOpts, time.Now()); err == nil {
		t.Fatal("no directory: want an error")
	}
	// the user's own entry of a model's id: refused, the file named and
	// left as it is
	clash := filepath.Join(home, "clash")
	os.MkdirAll(clash, 0o700)
	mine := []byte(`{"modelProviders": {"openai": [{"id": "gpt-6.1-sol", "baseUrl": "https://mine.example/v1"}]}}`)
	os.WriteFile(filepath.Join(clash, "settings.json"), mine, 0o600)
	_, _, err = WriteQwen(clash, qwenOpts, time.Now())
	if err == nil || !strings.Contains(err.Error(), filepath.Join(clash, "settings.json")) || !strings.Contains(err.Error(), `"gpt-6.1-sol" (baseUrl "https://mine.example/v1")`) {
		t.Fatalf("err %v: want the file, the id and its baseUrl named", err)
	}
	if b, _ := os.ReadFile(filepath.Join(clash, "settings.json")); !bytes.Equal(b, mine) {
		t.Fatal("a refused setup changed the file")
	}
}
