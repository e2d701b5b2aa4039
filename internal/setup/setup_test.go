package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/spillway/spillway/internal/agentfiles"
)

// table is the [model_providers.spillway] table for the default URL and key.
var table = codexTable(DefaultURL, DefaultEnvKey, false)

func TestCodexBlock(t *testing.T) {
	b := CodexBlock("http://127.0.0.1:9000/", "MY_KEY")
	var got struct {
		ModelProvider  string `toml:"model_provider"`
		ModelProviders map[string]struct {
			Name                string `toml:"name"`
			BaseURL             string `toml:"base_url"`
			WireAPI             string `toml:"wire_api"`
			EnvKey              string `toml:"env_key"`
			RequestMaxRetries   int    `toml:"request_max_retries"`
			StreamMaxRetries    int    `toml:"stream_max_retries"`
			StreamIdleTimeoutMS int    `toml:"stream_idle_timeout_ms"`
		} `toml:"model_providers"`
	}
	if err := toml.Unmarshal([]byte(b), &got); err != nil {
		t.Fatalf("block does not parse: %v\n%s", err, b)
	}
	p := got.ModelProviders["spillway"]
	if got.ModelProvider != "spillway" || p.Name != "spillway" || p.BaseURL != "http://127.0.0.1:9000/v1" ||
		p.WireAPI != "responses" || p.EnvKey != "MY_KEY" || p.RequestMaxRetries != 1 || p.StreamMaxRetries != 1 ||
		p.StreamIdleTimeoutMS != 300000 {
		t.Errorf("decoded %+v", got)
	}
	if len(got.ModelProviders) != 1 {
		t.Errorf("providers %v", got.ModelProviders)
	}
	if !strings.HasPrefix(b, "model_provider = \"spillway\"\n\n[model_providers.spillway]\n") {
		t.Errorf("root key must come first:\n%s", b)
	}
	for _, want := range []string{"Bearer", "ChatGPT", "retr"} {
		if !strings.Contains(b, want) {
			t.Errorf("block does not explain %q:\n%s", want, b)
		}
	}
	for _, bad := range []string{"analytics", "features", "plugins"} {
		if strings.Contains(b, bad) {
			t.Errorf("block contains test-only setting %q", bad)
		}
	}
	// Defaults, and a base URL given with /v1 is not doubled.
	if d := CodexBlock("", ""); !strings.Contains(d, `base_url = "http://127.0.0.1:8787/v1"`) || !strings.Contains(d, `env_key = "OPENAI_API_KEY"`) {
		t.Errorf("defaults:\n%s", d)
	}
	if d := CodexBlock("http://localhost:8787/v1/", ""); !strings.Contains(d, `base_url = "http://localhost:8787/v1"`+"\n") {
		t.Errorf("/v1 doubled:\n%s", d)
	}
}

func TestApplyCodex(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", CodexBlock("", "")},
		{"only comments", "# my codex config\n",
			"# my codex config\n\nmodel_provider = \"spillway\"\n\n[model_providers.spillway]\n" + table[len("[model_providers.spillway]\n"):]},
		{"root keys and tables",
			"model = \"gpt-6.1-sol\"\napproval_policy = \"on-request\"\n\n[tui]\nnotifications = true\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--port\", \"0\"]\n",
			"model = \"gpt-6.1-sol\"\napproval_policy = \"on-request\"\nmodel_provider = \"spillway\"\n\n[tui]\nnotifications = true\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--port\", \"0\"]\n\n" + table},
		{"tables only, comment above the first one stays with it",
			"# Codex\n\n# the TUI\n[tui]\nnotifications = true",
			"# Codex\n\nmodel_provider = \"spillway\"\n\n# the TUI\n[tui]\nnotifications = true\n\n" + table},
		{"existing model_provider and spillway table are replaced",
			"model = \"o3\"\nmodel_provider = \"openai\" # was the default\n\n[model_providers.spillway]\nname = \"old\"\nbase_url = \"http://127.0.0.1:1/v1\"\n# old note\nenv_key = \"X\"\n\n# MCP\n[mcp_servers.a]\ncommand = \"a\"\n",
			"model = \"o3\"\n# spillway: was model_provider = \"openai\" # was the default\nmodel_provider = \"spillway\"\n\n" + table + "\n# MCP\n[mcp_servers.a]\ncommand = \"a\"\n"},
		{"spillway table followed by its sub-table",
			"model_provider = \"spillway\"\n[model_providers.spillway]\nname = \"x\"\n[model_providers.spillway.http_headers]\nX-Team = \"a\"\n",
			"model_provider = \"spillway\"\n" + table + "[model_providers.spillway.http_headers]\nX-Team = \"a\"\n"},
		{"profiles, comments and tricky values preserved",
			`# Codex configuration
model = "gpt-6.1-sol"   # default model
notice = """
[model_providers.spillway]
# not a comment, and not a table
model_provider = "inside a string"
"""
paths = [
  "a", # first
  "b",
]

[profiles.fast]
model = "gpt-6-luna"
model_provider = "openai"

# profile for the local gateway
[profiles.local]
model_provider = "spillway"

[[hooks]]
name = "one"
`,
			`# Codex configuration
model = "gpt-6.1-sol"   # default model
notice = """
[model_providers.spillway]
# not a comment, and not a table
model_provider = "inside a string"
"""
paths = [
  "a", # first
  "b",
]
model_provider = "spillway"

[profiles.fast]
model = "gpt-6-luna"
model_provider = "openai"

# profile for the local gateway
[profiles.local]
model_provider = "spillway"

[[hooks]]
name = "one"

` + table},
		{"reserved ids untouched",
			"model_provider = \"ollama\"\n\n[model_providers.openai]\nname = \"mine\"\nbase_url = \"http://example.invalid/v1\"\n\n[model_providers.ollama]\nbase_url = \"http://localhost:11434/v1\"\n\n[model_providers.lmstudio]\nname = \"lm\"\n\n[model_providers.other]\nname = \"other\"\n",
			"# spillway: was model_provider = \"ollama\"\nmodel_provider = \"spillway\"\n\n[model_providers.openai]\nname = \"mine\"\nbase_url = \"http://example.invalid/v1\"\n\n[model_providers.ollama]\nbase_url = \"http://localhost:11434/v1\"\n\n[model_providers.lmstudio]\nname = \"lm\"\n\n[model_providers.other]\nname = \"other\"\n\n" + table},
		{"model_provider in a [model_providers] table is not the root key",
			"[model_providers]\nother = { name = \"o\", base_url = \"http://o/v1\" }\n",
			"model_provider = \"spillway\"\n\n[model_providers]\nother = { name = \"o\", base_url = \"http://o/v1\" }\n\n" + table},
		{"older spillway note is replaced, not stacked",
			"# spillway: was model_provider = \"openai\"\nmodel_provider = \"ollama\"\n",
			"# spillway: was model_provider = \"ollama\"\nmodel_provider = \"spillway\"\n\n" + table},
		{"root model_provider already spillway is left as written",
			"model_provider='spillway'   # keep\n",
			"model_provider='spillway'   # keep\n\n" + table},
		{"byte order mark kept",
			"\uFEFF# c\n[tui]\nx = 1\n",
			"\uFEFFmodel_provider = \"spillway\"\n\n# c\n[tui]\nx = 1\n\n" + table},
		{"CRLF line endings",
			"model = \"o3\"\r\n\r\n[tui]\r\nnotifications = true\r\n",
			"model = \"o3\"\r\nmodel_provider = \"spillway\"\r\n\r\n[tui]\r\nnotifications = true\r\n\r\n" + strings.ReplaceAll(table, "\n", "\r\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyCodex([]byte(tt.in), "", "")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			again, err := ApplyCodex(got, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(got) {
				t.Errorf("not idempotent; second run:\n%s", again)
			}
			// Everything but our two keys decodes the same as before.
			before, after := decode(t, tt.in), decode(t, string(got))
			strip(before)
			strip(after)
			if !reflect.DeepEqual(before, after) {
				t.Errorf("other settings changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := toml.Unmarshal([]byte(strings.TrimPrefix(s, "\uFEFF")), &m); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return m
}

// strip removes what ApplyCodex owns from a decoded config.
func strip(m map[string]any) {
	delete(m, "model_provider")
	if p, ok := m["model_providers"].(map[string]any); ok {
		if s, ok := p["spillway"].(map[string]any); ok {
			for _, k := range []string{"name", "base_url", "wire_api", "env_key", "request_max_retries", "stream_max_retries", "stream_idle_timeout_ms"} {
				delete(s, k)
			}
			if len(s) == 0 {
				delete(p, "spillway")
			}
		}
		if len(p) == 0 {
			delete(m, "model_providers")
		}
	}
}

func TestApplyCodexURLAndKey(t *testing.T) {
	in := "[model_providers.spillway]\nbase_url = \"http://127.0.0.1:8787/v1\"\nenv_key = \"OPENAI_API_KEY\"\n"
	got, err := ApplyCodex([]byte(in), "https://gw.example.com:9443/v1/", "SPILLWAY_KEY")
	if err != nil {
		t.Fatal(err)
	}
	want := "model_provider = \"spillway\"\n\n" + codexTable("https://gw.example.com:9443", "SPILLWAY_KEY", false)
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(want, `base_url = "https://gw.example.com:9443/v1"`) || !strings.Contains(want, `env_key = "SPILLWAY_KEY"`) {
		t.Errorf("table:\n%s", want)
	}
	// Switching back to the defaults replaces the values.
	back, err := ApplyCodex(got, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != CodexBlock("", "") {
		t.Errorf("back to defaults:\n%s", back)
	}

	for _, bad := range []struct{ url, key string }{
		{"127.0.0.1:8787", ""}, {"ftp://x", ""}, {"http://x?y=1", ""}, {"", "NOT-A-NAME"}, {"", "1X"}, {"", "A B"},
	} {
		if _, err := ApplyCodex(nil, bad.url, bad.key); err == nil {
			t.Errorf("url %q key %q: no error", bad.url, bad.key)
		}
	}
}

func TestApplyCodexErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int    // >0: a *ParseError on this line
		contains string // in the error text
	}{
		{"value missing", "model = \"o3\"\n\n[tui]\nnotifications =\n", 4, "line 4"},
		{"unterminated string", "a = 1\nb = \"oops\n", 2, "line 2"},
		{"duplicate key", "a = 1\n[t]\nx = 1\nx = 2\n", 4, "line 4"},
		{"duplicate table", "[t]\n[u]\n[t]\n", 3, "line 3"},
		{"dotted key at root", "model_providers.spillway.base_url = \"http://x/v1\"\n", 0, "line 1: the key model_providers.spillway.base_url"},
		{"inline table in [model_providers]", "a = 1\n[model_providers]\nspillway = { base_url = \"http://x/v1\" }\n", 0, "line 3: the key model_providers.spillway"},
		{"inline model_providers", "model_providers = { other = { name = \"o\" } }\n", 0, "line 1: the key model_providers"},
		{"array of tables", "[[model_providers.spillway]]\nname = \"x\"\n", 0, "line 1: the array of tables [[model_providers.spillway]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ApplyCodex([]byte(tt.in), "", "")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			var pe *ParseError
			if tt.line > 0 {
				if !errors.As(err, &pe) {
					t.Fatalf("%T %v is not a *ParseError", err, err)
				}
				if pe.Line != tt.line || pe.Column < 1 || pe.Context == "" {
					t.Errorf("position %d:%d context %q, want line %d", pe.Line, pe.Column, pe.Context, tt.line)
				}
			}
		})
	}
}

func TestCodexHome(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := agentfiles.CodexHome(env(map[string]string{"CODEX_HOME": "/c", "HOME": "/h"})); got != "/c" {
		t.Errorf("CODEX_HOME: %s", got)
	}
	if got := agentfiles.CodexHome(env(map[string]string{"HOME": "/h"})); got != filepath.Join("/h", ".codex") {
		t.Errorf("HOME: %s", got)
	}
	if got := agentfiles.CodexHome(env(nil)); got != "" {
		t.Errorf("nothing set: %q", got)
	}
}

func TestWriteCodex(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 30, 5, 0, time.Local)

	t.Run("new file and directory", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "codex")
		path, backup, err := WriteCodex(home, "", "", now)
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(home, "config.toml") || backup != "" {
			t.Errorf("path %s backup %q", path, backup)
		}
		if got := readFile(t, path); got != CodexBlock("", "") {
			t.Errorf("content:\n%s", got)
		}
		checkMode(t, path, 0o600)
		checkMode(t, home, 0o700)
		checkFiles(t, home, "config.toml")
	})

	t.Run("existing file: backup, merge, idempotent", func(t *testing.T) {
		home := t.TempDir()
		path := filepath.Join(home, "config.toml")
		old := "model = \"o3\"\n\n[tui]\nnotifications = true\n"
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		p, backup, err := WriteCodex(home, "", "", now)
		if err != nil {
			t.Fatal(err)
		}
		wantBackup := filepath.Join(home, "config.toml.spillway-backup-20261125-093005")
		if p != path || backup != wantBackup {
			t.Errorf("path %s backup %s, want %s", p, backup, wantBackup)
		}
		if got := readFile(t, backup); got != old {
			t.Errorf("backup:\n%s", got)
		}
		checkMode(t, backup, 0o600)
		checkMode(t, path, 0o600)
		first := readFile(t, path)
		want, _ := ApplyCodex([]byte(old), "", "")
		if first != string(want) {
			t.Errorf("merged:\n%s", first)
		}

		// Second run: nothing to do, no new backup.
		_, backup2, err := WriteCodex(home, "", "", now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if backup2 != "" || readFile(t, path) != first {
			t.Errorf("second run wrote: backup %q", backup2)
		}
		checkFiles(t, home, "config.toml", "config.toml.spillway-backup-20261125-093005")

		// A change in the same second does not overwrite the first backup.
		_, backup3, err := WriteCodex(home, "http://127.0.0.1:9999", "", now)
		if err != nil {
			t.Fatal(err)
		}
		if backup3 != wantBackup+"-2" || readFile(t, backup3) != first || readFile(t, wantBackup) != old {
			t.Errorf("third backup %s", backup3)
		}
	})

	t.Run("invalid file is left alone", func(t *testing.T) {
		home := t.TempDir()
		path := filepath.Join(home, "config.toml")
		old := "model = \"o3\"\n[tui\n"
		if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		_, backup, err := WriteCodex(home, "", "", now)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 2 || !strings.Contains(err.Error(), path+": line 2") {
			t.Fatalf("err = %v", err)
		}
		if backup != "" || readFile(t, path) != old {
			t.Error("invalid file was changed")
		}
		checkFiles(t, home, "config.toml")
	})

	t.Run("symlinked config.toml stays a link", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("symlinks")
		}
		home, dots := t.TempDir(), t.TempDir()
		real := filepath.Join(dots, "codex.toml")
		if err := os.WriteFile(real, []byte("model = \"o3\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(home, "config.toml")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, _, err := WriteCodex(home, "", "", now); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("link replaced: %v", err)
		}
		if got := readFile(t, real); !strings.Contains(got, "model_provider = \"spillway\"") {
			t.Errorf("target:\n%s", got)
		}
	})

	t.Run("no home", func(t *testing.T) {
		if _, _, err := WriteCodex("", "", "", now); err == nil {
			t.Error("no error")
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	if runtime.GOOS == "windows" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", path, got, want)
	}
}

// checkFiles checks the directory holds exactly these names (no temp files).
func checkFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}
}

func TestClaudeEnv(t *testing.T) {
	tests := []struct{ shell, url, line string }{
		{"sh", "", "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787\n"},
		{"bash", "http://127.0.0.1:9000/v1/", "export ANTHROPIC_BASE_URL=http://127.0.0.1:9000\n"},
		{"/usr/bin/zsh", "http://[::1]:8787", "export ANTHROPIC_BASE_URL='http://[::1]:8787'\n"},
		{"fish", "", "set -gx ANTHROPIC_BASE_URL http://127.0.0.1:8787\n"},
		{"powershell", "", "$env:ANTHROPIC_BASE_URL = \"http://127.0.0.1:8787\"\n"},
		{"pwsh", "http://localhost:8787", "$env:ANTHROPIC_BASE_URL = \"http://localhost:8787\"\n"},
		{"", "", "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787\n"},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			got := ClaudeEnv(tt.url, tt.shell)
			if !strings.HasSuffix(got, "\n"+tt.line) {
				t.Errorf("got:\n%s\nwant last line %q", got, tt.line)
			}
			if !strings.Contains(got, "ANTHROPIC_API_KEY") || !strings.Contains(got, "login") {
				t.Errorf("no note on the key:\n%s", got)
			}
			// Every other line is a comment, in all three shells.
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "# ") {
					t.Errorf("not a comment: %q", l)
				}
			}
		})
	}
}

func TestClaudeEnvShellRuns(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out, err := exec.Command(sh, "-c", ClaudeEnv("http://[::1]:8787/v1", "sh")+`printf %s "$ANTHROPIC_BASE_URL"`).Output()
	if err != nil || string(out) != "http://[::1]:8787" {
		t.Errorf("sh: %q %v", out, err)
	}
}

// codexBin is the real Codex CLI installed for tests (scripts/install-clients).
const codexBin = "../../.tools/npm/node_modules/.bin/codex"

// TestRealCodexLoadsConfig runs Codex CLI's "features list", which loads and
// validates config.toml (it fails on invalid TOML, an unknown model_provider,
// a reserved provider id or a wire_api other than responses) without any
// network access.
func TestRealCodexLoadsConfig(t *testing.T) {
	bin, err := filepath.Abs(codexBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("Codex CLI not installed at " + codexBin)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	runCodex := func(home string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "features", "list")
		cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "OPENAI_API_KEY=test")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	home := t.TempDir()
	old := "model = \"gpt-6.1-sol\"\nmodel_provider = \"openai\"\n\n[tui]\nnotifications = true\n\n[model_providers.other]\nname = \"other\"\nbase_url = \"http://127.0.0.1:1/v1\"\nwire_api = \"responses\"\n\n[mcp_servers.x]\ncommand = \"true\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	path, _, err := WriteCodex(home, "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runCodex(home); err != nil || !strings.Contains(out, "stable") {
		t.Fatalf("codex rejects the merged config: %v\n%s\n%s", err, out, readFile(t, path))
	}

	// Controls: Codex does read this file and would notice a broken provider.
	merged := readFile(t, path)
	for name, broken := range map[string]string{
		"unknown provider": strings.Replace(merged, "model_provider = \"spillway\"\n", "model_provider = \"nope\"\n", 1),
		"wire_api":         strings.Replace(merged, "wire_api = \"responses\"\n# env_key", "wire_api = \"chat\"\n# env_key", 1),
	} {
		if broken == merged {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := runCodex(home); err == nil {
			t.Errorf("%s: codex accepted a broken config:\n%s", name, out)
		}
	}
}

// Gemini CLI's settings: API-key auth and one attempt merged in, every
// other byte kept (comments, order, the file's own indentation and line
// ends; testdata/gemini/NAME.in.json gives NAME.out.json, or the same
// bytes without one), and the result one Gemini CLI reads; a file it
// cannot read is refused with NAME.err, whole.
func TestApplyGemini(t *testing.T) {
	ins, _ := filepath.Glob("testdata/gemini/*.in.json")
	if len(ins) < 10 {
		t.Fatalf("%d cases", len(ins))
	}
	for _, in := range ins {
		name := strings.TrimSuffix(in, ".in.json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			old := readFile(t, in)
			out, err := ApplyGemini([]byte(old))
			if want, e := os.ReadFile(name + ".err"); e == nil {
				if err == nil || err.Error() != string(want) {
					t.Fatalf("error:\n%v\nwant:\n%s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := old
			if b, e := os.ReadFile(name + ".out.json"); e == nil {
				want = string(b)
			}
			if string(out) != want {
				t.Fatalf("merged:\n%s\nwant:\n%s", out, want)
			}
			got, err := agentfiles.ParseGeminiSettings(out)
			if err != nil {
				t.Fatalf("Gemini CLI could not read it: %v", err)
			}
			if b, _ := json.Marshal([]any{got["security"], got["general"].(map[string]any)["maxAttempts"]}); string(b) != `[{"auth":{"selectedType":"gemini-api-key"}},1]` {
				t.Fatalf("settings %s", b)
			}
			if again, err := ApplyGemini(out); err != nil || !bytes.Equal(again, out) {
				t.Fatalf("applying it again: %v\n%s", err, again)
			}
		})
	}
	// signed in with Google: the one attempt only, the sign-in kept
	out, err := ApplyGeminiGoogle([]byte("{\n  \"security\": { \"auth\": { \"selectedType\": \"oauth-personal\" } }\n}\n"))
	if want := "{\n  \"security\": { \"auth\": { \"selectedType\": \"oauth-personal\" } },\n  \"general\": {\n    \"maxAttempts\": 1\n  }\n}\n"; err != nil || string(out) != want {
		t.Fatalf("--google: %v\n%s", err, out)
	}
	if env := GeminiEnv("http://127.0.0.1:8787/v1", "fish"); !strings.Contains(env, "set -gx GOOGLE_GEMINI_BASE_URL http://127.0.0.1:8787\n") {
		t.Fatalf("fish env:\n%s", env)
	}
}

// WriteGemini keeps the file it read, byte for byte, as the backup, and
// writes nothing over a file Gemini CLI cannot read.
func TestWriteGeminiBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	old, _ := os.ReadFile("testdata/gemini/comments.in.json")
	os.WriteFile(path, old, 0o600)
	_, backup, err := WriteGemini(dir, time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(backup); !bytes.Equal(b, old) {
		t.Fatalf("the backup is not the file as it was:\n%s", b)
	}
	want, _ := os.ReadFile("testdata/gemini/comments.out.json")
	if b, _ := os.ReadFile(path); !bytes.Equal(b, want) {
		t.Fatalf("settings.json:\n%s", b)
	}

	bad, _ := os.ReadFile("testdata/gemini/trailing-comma.in.json")
	os.WriteFile(path, bad, 0o600)
	_, backup, err = WriteGemini(dir, time.Date(2026, 12, 1, 9, 31, 0, 0, time.UTC))
	if err == nil || backup != "" {
		t.Fatalf("a file Gemini CLI cannot read: %v, backup %q", err, backup)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, bad) {
		t.Fatalf("the file was changed:\n%s", b)
	}
}

// Codex signed in with ChatGPT: the table sends its own sign-in to the
// gateway's /backend-api/codex, merged as the API-key table is, and
// replaced by it (and back) in place.
func TestApplyCodexChatGPT(t *testing.T) {
	in := "# mine\nmodel = \"gpt-6-astra\"\n\n[model_providers.spillway]\nbase_url = \"http://127.0.0.1:8787/v1\"\nenv_key = \"OPENAI_API_KEY\"\n\n[tui]\ntheme = \"dark\"\n"
	got, err := ApplyCodexChatGPT([]byte(in), "http://127.0.0.1:8787")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ModelProvider  string `toml:"model_provider"`
		Model          string
		ModelProviders map[string]map[string]any `toml:"model_providers"`
		TUI            map[string]any            `toml:"tui"`
	}
	if err := toml.Unmarshal(got, &cfg); err != nil {
		t.Fatal(err)
	}
	p := cfg.ModelProviders["spillway"]
	if cfg.ModelProvider != "spillway" || cfg.Model != "gpt-6-astra" || cfg.TUI["theme"] != "dark" ||
		p["base_url"] != "http://127.0.0.1:8787/backend-api/codex" || p["wire_api"] != "responses" || p["requires_openai_auth"] != true || p["env_key"] != nil {
		t.Fatalf("merged:\n%s", got)
	}
	if again, _ := ApplyCodexChatGPT(got, "http://127.0.0.1:8787"); string(again) != string(got) {
		t.Fatalf("applying it again changed it:\n%s", again)
	}
	back, err := ApplyCodex(got, "http://127.0.0.1:8787", "OPENAI_API_KEY")
	if err != nil || strings.Contains(string(back), "requires_openai_auth") || !strings.Contains(string(back), `env_key = "OPENAI_API_KEY"`) {
		t.Fatalf("back to the API-key table (%v):\n%s", err, back)
	}
}

// The sign-in a config.toml is set up for, from its spillway table.
func TestCodexSetUp(t *testing.T) {
	chatgpt, _ := ApplyCodexChatGPT(nil, "")
	apikey, _ := ApplyCodex(nil, "", "")
	for _, c := range []struct{ config, want string }{
		{string(chatgpt), "chatgpt"},
		{"\uFEFF" + string(chatgpt), "chatgpt"},
		{string(apikey), "apikey"},
		{"model = \"gpt-6-astra\"\n", ""},
		{"[tui\n", ""},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.toml"), []byte(c.config), 0o600)
		if got := CodexSetUp(dir); got != c.want {
			t.Errorf("%q: %q, want %q", c.config, got, c.want)
		}
	}
	if got := CodexSetUp(t.TempDir()); got != "" {
		t.Errorf("no config.toml: %q", got)
	}
}
