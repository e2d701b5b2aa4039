package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/agentfiles"
)

// setup qwen: with no --model, the configuration's codex chain (never the
// file's own model.name, which may be a provider's of the user's); an
// entry of the user's with that id is refused, the file left as it is;
// --env-key takes a variable's name only.
func TestSetupQwenModelAndEnvKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		existing string // settings.json before; "" for none
		args     []string
		code     int
		model    string // model.name after
		stderr   string
	}{
		{"no --model: the codex chain's first, not the file's model.name",
			`{"model": {"name": "qwen3-coder-plus"}, "modelProviders": {"openai": [{"id": "qwen3-coder-plus", "baseUrl": "https://dashscope.example/v1", "envKey": "DASHSCOPE_API_KEY"}]}}`,
			nil, ExitOK, "gpt-6-astra", ""},
		{"an entry of the user's with the model's id: refused",
			`{"modelProviders": {"openai": [{"id": "gpt-6-astra", "baseUrl": "https://mine.example/v1"}]}}`,
			nil, ExitFail, "", `id "gpt-6-astra" (baseUrl "https://mine.example/v1")`},
		{"a pasted key as --env-key", "", []string{"--env-key", "sk-proj-abc123"}, ExitUsage, "", "never the key"},
		{"an empty --env-key", "", []string{"--env-key", ""}, ExitUsage, "", "never the key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env, _ := setupEnv(t)
			dir := filepath.Join(env["HOME"], ".qwen")
			path := filepath.Join(dir, "settings.json")
			if c.existing != "" {
				os.MkdirAll(dir, 0o700)
				os.WriteFile(path, []byte(c.existing), 0o600)
			}
			_, stderr, code := runSetup(t, env, append([]string{"qwen", "--url", "http://127.0.0.1:8790"}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.stderr)
			}
			b, _ := os.ReadFile(path)
			if c.code != ExitOK {
				if string(b) != c.existing {
					t.Fatalf("a refused setup changed the file:\n%s", b)
				}
				return
			}
			s, err := agentfiles.ParseQwenSettings(b)
			if err != nil || agentfiles.QwenModel(s) != c.model {
				t.Fatalf("model.name %q (%v), want %q", agentfiles.QwenModel(s), err, c.model)
			}
			if strings.Contains(string(b), "sk-") {
				t.Fatal("a key in settings.json")
			}
			// the user's own entry stays
			if c.existing != "" && !strings.Contains(string(b), "https://dashscope.example/v1") {
				t.Fatalf("the user's entry is gone:\n%s", b)
			}
		})
	}
}
