package setup

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/agentfiles"
)

// The user's own opencode.jsonc: comments, a trailing comma, a provider
// of its own and a model setting of its own on one of spillway's models.
const userOpenCode = `{
  // my OpenCode settings
  "$schema": "https://opencode.ai/config.json",
  "theme": "tokyonight", /* keep */
  "provider": {
    "ollama": { "npm": "@ai-sdk/openai-compatible", "options": { "baseURL": "http://127.0.0.1:11434/v1" } },
    "spillway": { "models": { "gpt-6-astra": { "limit": { "context": 1000 } } } },
  },
}
`

// setup opencode merges the spillway provider into what OpenCode has:
// every other byte stays, the result reads as OpenCode reads it, the key
// is an {env:VAR}, and merging again changes nothing.
func TestApplyOpenCode(t *testing.T) {
	settings := OpenCodeSettings("http://127.0.0.1:8787/", "OPENAI_API_KEY", []string{"gpt-6-astra", "gpt-6.1-sol"})
	cases := []struct {
		name, old string
		keep      []string
	}{
		{"no file", "", nil},
		{"empty object", "{}\n", nil},
		{"trailing commas where the provider goes", "{\n  \"provider\": {\n    \"ollama\": { \"npm\": \"x\" }, // mine\n  },\n}\n", []string{"// mine"}},
		{"the user's file", userOpenCode, []string{"// my OpenCode settings", `"theme": "tokyonight", /* keep */`, `"baseURL": "http://127.0.0.1:11434/v1"`, `"limit": { "context": 1000 }`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := ApplyOpenCode([]byte(c.old), settings)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range c.keep {
				if !bytes.Contains(out, []byte(k)) {
					t.Errorf("lost %q:\n%s", k, out)
				}
			}
			got, err := agentfiles.ParseOpenCodeConfig(out)
			if err != nil {
				t.Fatalf("OpenCode could not read it: %v\n%s", err, out)
			}
			p := got["provider"].(map[string]any)["spillway"].(map[string]any)
			opts := p["options"].(map[string]any)
			if p["npm"] != "@ai-sdk/openai-compatible" || opts["baseURL"] != "http://127.0.0.1:8787/v1" || opts["apiKey"] != "{env:OPENAI_API_KEY}" {
				t.Errorf("provider %v", p)
			}
			models := p["models"].(map[string]any)
			for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol"} {
				if models[m].(map[string]any)["name"] != m {
					t.Errorf("model %s: %v", m, models[m])
				}
			}
			if again, err := ApplyOpenCode(out, settings); err != nil || !bytes.Equal(again, out) {
				t.Errorf("merging again changed it (%v):\n%s", err, again)
			}
		})
	}
}

// A file OpenCode cannot read is refused with where it breaks, and left
// as it is; so is a file whose top level is not an object.
func TestApplyOpenCodeRefuses(t *testing.T) {
	settings := OpenCodeSettings("", "OPENAI_API_KEY", []string{"gpt-6-astra"})
	for _, c := range []struct{ name, old, want string }{
		{"unclosed", "{\n  \"theme\": \"x\",\n", "line 3"},
		{"missing comma", "{\n  \"theme\": \"x\"\n  \"model\": \"a/b\"\n}\n", "line 3, column 3"},
		{"an array", "[1]\n", "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ApplyOpenCode([]byte(c.old), settings)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "OpenCode cannot start with this file") {
				t.Fatalf("err = %v, want one naming %q", err, c.want)
			}
		})
	}
}

// WriteOpenCode merges into opencode.jsonc when there is one (OpenCode
// reads it last), else opencode.json; the backup is the old file byte for
// byte; OpenCodeState then says it is set up, and where.
func TestWriteOpenCode(t *testing.T) {
	settings := OpenCodeSettings("", "MY_KEY", []string{"gpt-6-astra"})
	now := time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)
	for _, c := range []struct{ name, existing, want string }{
		{"nothing yet", "", "opencode.json"},
		{"opencode.json", "opencode.json", "opencode.json"},
		{"opencode.jsonc", "opencode.jsonc", "opencode.jsonc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := t.TempDir()
			dir := filepath.Join(cfg, "opencode")
			getenv := func(k string) string { return map[string]string{"XDG_CONFIG_HOME": cfg}[k] }
			if st, _ := OpenCodeState(getenv); st != "" {
				t.Fatalf("state %q before setup", st)
			}
			if c.existing != "" {
				os.MkdirAll(dir, 0o700)
				os.WriteFile(filepath.Join(dir, c.existing), []byte(userOpenCode), 0o600)
			}
			path, backup, err := WriteOpenCode(dir, settings, now)
			if err != nil || path != filepath.Join(dir, c.want) {
				t.Fatalf("%s, %v; want %s", path, err, c.want)
			}
			if c.existing == "" && backup != "" {
				t.Errorf("a backup %s of nothing", backup)
			}
			if c.existing != "" {
				if b, _ := os.ReadFile(backup); string(b) != userOpenCode || !strings.HasPrefix(filepath.Base(backup), c.want+".spillway-backup-20261206-150000") {
					t.Errorf("backup %s holds %q", backup, b)
				}
			}
			if st, where := OpenCodeState(getenv); st != "api key" || where != path {
				t.Errorf("state %q at %q", st, where)
			}
		})
	}
}
