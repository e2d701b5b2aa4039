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

// clineWritten is providers.json as Cline 3.0.65 writes it (`cline auth
// -p anthropic -k …` then `cline auth -p openai -k … -m … -b …`).
const clineWritten = `{
  "version": 1,
  "lastUsedProvider": "anthropic",
  "modes": {
    "voiceInput": {
      "providerId": "openai-native",
      "modelId": "whisper-1"
    }
  },
  "providers": {
    "anthropic": {
      "settings": {
        "provider": "anthropic",
        "apiKey": "sk-ant-test-0000",
        "model": "claude-sonnet-5-5"
      },
      "updatedAt": "2026-12-06T15:20:03.633Z",
      "tokenSource": "manual"
    },
    "openai-compatible": {
      "settings": {
        "provider": "openai-compatible",
        "apiKey": "sk-test-abc",
        "model": "gpt-6-astra",
        "baseUrl": "https://llm.example.test/v1",
        "headers": {
          "X-Team": "infra"
        }
      },
      "updatedAt": "2026-12-06T15:20:03.633Z",
      "tokenSource": "manual"
    }
  }
}
`

func clineEntry(t *testing.T, b []byte) (m map[string]any, entry, settings map[string]any) {
	t.Helper()
	m, err := ParseClineSettings(b)
	if err != nil {
		t.Fatalf("the merged file is not one Cline reads: %v\n%s", err, b)
	}
	entry, _ = m["providers"].(map[string]any)[ClineProvider].(map[string]any)
	settings, _ = entry["settings"].(map[string]any)
	return m, entry, settings
}

func TestApplyCline(t *testing.T) {
	now := time.Date(2026, 12, 6, 15, 40, 0, 0, time.UTC)
	cases := []struct {
		name      string
		existing  string
		model     string
		wantModel string
		keep      []string // bytes of the old file that stay
		wantKey   any      // settings.apiKey: nil for none
	}{
		{"no file", "", "gpt-6-mini", "gpt-6-mini", nil, nil},
		{"no file, --model", "", "gpt-6-luna", "gpt-6-luna", nil, nil},
		{"Cline's own file", clineWritten, "", "gpt-6-astra", []string{`"sk-ant-test-0000"`, `"voiceInput": {`, `"X-Team": "infra"`, `"updatedAt": "2026-12-06T15:20:03.633Z"`}, ""},
		{"Cline's own file, --model", clineWritten, "gpt-6.1-sol", "gpt-6.1-sol", []string{`"claude-sonnet-5-5"`}, ""},
		{"no openai-compatible entry yet", `{"version":1,"modes":{},"providers":{}}`, "gpt-6-mini", "gpt-6-mini", []string{`"modes":{}`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := ApplyCline([]byte(c.existing), "http://127.0.0.1:8787/", c.model, now)
			if err != nil {
				t.Fatal(err)
			}
			m, entry, s := clineEntry(t, out)
			if m["lastUsedProvider"] != ClineProvider || s["provider"] != ClineProvider || s["baseUrl"] != "http://127.0.0.1:8787/v1" || s["model"] != c.wantModel {
				t.Errorf("merged:\n%s", out)
			}
			if s["apiKey"] != c.wantKey {
				t.Errorf("apiKey = %#v, want %#v (Cline then sends $OPENAI_API_KEY)", s["apiKey"], c.wantKey)
			}
			if entry["updatedAt"] == nil || entry["tokenSource"] != "manual" {
				t.Errorf("entry without updatedAt/tokenSource:\n%s", out)
			}
			for _, k := range c.keep {
				if !bytes.Contains(out, []byte(k)) {
					t.Errorf("lost %s:\n%s", k, out)
				}
			}
			again, err := ApplyCline(out, "http://127.0.0.1:8787", c.model, now.Add(time.Hour))
			if err != nil || !bytes.Equal(again, out) {
				t.Errorf("a second merge changed the file (%v):\n%s\n---\n%s", err, out, again)
			}
		})
	}
}

// With no --model, setup keeps the entry's own model only when the entry
// already pointed at the gateway; a model of another endpoint gives way to
// the configuration's (the fallback). A key the entry held is reported, as
// the merge empties it.
func TestClineModel(t *testing.T) {
	const gateway = "http://127.0.0.1:8787"
	atGateway := strings.Replace(clineWritten, "https://llm.example.test/v1", gateway+"/v1", 1)
	noKey := strings.Replace(atGateway, `"apiKey": "sk-test-abc",`, "", 1)
	cases := []struct {
		name, existing string
		model          string
		keyRemoved     bool
	}{
		{"no file", "", "gpt-6.1-sol", false},
		{"another endpoint's model", clineWritten, "gpt-6.1-sol", true},
		{"the gateway's already", atGateway, "gpt-6-astra", true},
		{"no key to remove", noKey, "gpt-6-astra", false},
		{"a file Cline cannot read", "{", "gpt-6.1-sol", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ClineModel([]byte(c.existing), gateway, "gpt-6.1-sol"); got != c.model {
				t.Errorf("ClineModel = %q, want %q", got, c.model)
			}
			if got := ClineKeyRemoved([]byte(c.existing)); got != c.keyRemoved {
				t.Errorf("ClineKeyRemoved = %v, want %v", got, c.keyRemoved)
			}
		})
	}
	if _, err := ApplyCline(nil, gateway, "", time.Now()); err == nil {
		t.Error("ApplyCline with no model and no entry: no error")
	}
}

// A file Cline cannot read (it would ignore all of it and run no provider
// at all) is refused, named with what is wrong.
func TestApplyClineRefuses(t *testing.T) {
	cases := []struct{ name, existing, want string }{
		{"a comment", "{\n  // mine\n  \"version\": 1, \"providers\": {}\n}", "line 2, column 3"},
		{"a trailing comma", "{\"version\": 1, \"providers\": {},\n}", "line 2"},
		{"version 2", `{"version": 2, "providers": {}}`, `"version" is 2`},
		{"no providers", `{"version": 1}`, `"providers" is missing`},
		{"no updatedAt", `{"version":1,"providers":{"openai-compatible":{"settings":{"provider":"openai-compatible"},"tokenSource":"manual"}}}`, "providers.openai-compatible.updatedAt"},
		{"a time with an offset", `{"version":1,"providers":{"x":{"settings":{"provider":"x"},"updatedAt":"2026-12-06T15:20:03+01:00"}}}`, "providers.x.updatedAt"},
		{"a base URL that is not one", `{"version":1,"providers":{"x":{"settings":{"provider":"x","baseUrl":"localhost:8787"},"updatedAt":"2026-12-06T15:20:03Z"}}}`, "providers.x.settings.baseUrl"},
		{"a model that is not a string", `{"version":1,"providers":{"x":{"settings":{"provider":"x","model":5},"updatedAt":"2026-12-06T15:20:03Z"}}}`, "providers.x.settings.model is 5"},
		{"an unknown tokenSource", `{"version":1,"providers":{"x":{"settings":{"provider":"x"},"updatedAt":"2026-12-06T15:20:03Z","tokenSource":"env"}}}`, "providers.x.tokenSource"},
		{"an array", `[]`, "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ApplyCline([]byte(c.existing), "", "", time.Now())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("err = %v, want one naming %q", err, c.want)
			}
		})
	}
}

func TestWriteClineBackup(t *testing.T) {
	now := time.Date(2026, 12, 6, 15, 40, 0, 0, time.UTC)
	cases := []struct {
		name, existing string
		wantBackup     bool
	}{
		{"new", "", false},
		{"existing", clineWritten, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "data", "settings", "providers.json")
			if c.existing != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(c.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, backup, err := WriteCline(path, "http://127.0.0.1:8787", "gpt-6-astra", now)
			if err != nil || got != path || (backup != "") != c.wantBackup {
				t.Fatalf("WriteCline = %q %q %v", got, backup, err)
			}
			if backup != "" {
				if b, _ := os.ReadFile(backup); string(b) != c.existing {
					t.Errorf("the backup is not the old file byte for byte:\n%s", b)
				}
				if !strings.HasPrefix(filepath.Base(backup), "providers.json.spillway-backup-20261206-154000") {
					t.Errorf("backup %s", backup)
				}
			}
			b, _ := os.ReadFile(path)
			clineEntry(t, b)
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v %v, want 0600 (it holds keys)", fi.Mode(), err)
			}
			if _, backup, err := WriteCline(path, "http://127.0.0.1:8787", "gpt-6-astra", now); err != nil || backup != "" {
				t.Errorf("a second run: backup %q, err %v; want nothing to do", backup, err)
			}
		})
	}
}

func TestClineState(t *testing.T) {
	set, _ := ApplyCline(nil, "http://127.0.0.1:8787", "gpt-6-astra", time.Now())
	cases := []struct {
		name, file, want string
	}{
		{"set up", string(set), "api key"},
		{"its own provider", clineWritten, ""},
		{"a gateway on another host", strings.Replace(string(set), "127.0.0.1", "gw.example.test", 1), "api key"},
		{"OpenRouter's /api/v1", strings.Replace(string(set), "http://127.0.0.1:8787/v1", "https://openrouter.example.test/api/v1", 1), ""},
		{"OpenAI itself", strings.Replace(string(set), "http://127.0.0.1:8787/v1", "https://api.openai.com/v1", 1), ""},
		{"no file", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			path := agentfiles.ClineSettingsPath(func(k string) string { return map[string]string{"HOME": home}[k] }, "")
			if c.file != "" {
				_ = os.MkdirAll(filepath.Dir(path), 0o700)
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			state, where := ClineState(func(k string) string { return map[string]string{"HOME": home}[k] })
			if state != c.want || (state != "" && where != path) {
				t.Errorf("ClineState = %q %q, want %q", state, where, c.want)
			}
		})
	}
}
