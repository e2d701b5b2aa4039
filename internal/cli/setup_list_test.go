package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot is every file under dir and its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// setup with no agent lists every agent, where it is on PATH and whether
// it is set up, and changes nothing.
func TestSetupAloneListsTheAgents(t *testing.T) {
	t.Parallel()
	env, codexHome := setupEnv(t)
	bin := t.TempDir()
	for _, name := range []string{"qwen", "cn"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err) // not executable: not found
	}
	env["PATH"] = bin + string(os.PathListSeparator) + filepath.Join(bin, "missing")
	if _, errOut, code := runSetup(t, env, "codex", "--url", "http://127.0.0.1:9000"); code != 0 {
		t.Fatalf("setup codex: %s", errOut)
	}
	if _, errOut, code := runSetup(t, env, "gemini", "--url", "http://127.0.0.1:9000"); code != 0 {
		t.Fatalf("setup gemini: %s", errOut)
	}
	env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9000"
	before := snapshot(t, env["HOME"])

	out, errOut, code := runSetup(t, env)
	if code != 0 {
		t.Fatalf("setup: exit %d: %s", code, errOut)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			for _, name := range []string{"codex", "claude", "gemini", "opencode", "copilot", "qwen", "cline", "continue"} {
				if strings.Contains(l, "spillway setup "+name+" ") {
					rows[name] = l
				}
			}
		}
	}
	tests := []struct {
		agent string
		want  []string
	}{
		{"codex", []string{"Codex CLI", "not found", "api key (" + filepath.Join(codexHome, "config.toml") + ")"}},
		{"claude", []string{"Claude Code", "not found", "its own key or login (ANTHROPIC_BASE_URL=http://127.0.0.1:9000)"}},
		{"gemini", []string{"Gemini CLI", "api key, but GOOGLE_GEMINI_BASE_URL is not set here (" + filepath.Join(env["HOME"], ".gemini", "settings.json") + ")"}},
		{"qwen", []string{"Qwen Code", filepath.Join(bin, "qwen"), " no"}},
		{"continue", []string{"Continue (cn)", filepath.Join(bin, "cn"), " no"}},
		{"opencode", []string{"OpenCode", "not found", " no"}},
		{"copilot", []string{"GitHub Copilot CLI", "not found"}},
		{"cline", []string{"Cline", "not found"}},
	}
	for _, tt := range tests {
		row, ok := rows[tt.agent]
		if !ok {
			t.Errorf("no row for %s in:\n%s", tt.agent, out)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(row, w) {
				t.Errorf("%s's row %q lacks %q", tt.agent, row, w)
			}
		}
	}
	if after := snapshot(t, env["HOME"]); len(after) != len(before) {
		t.Errorf("setup alone changed the files under HOME: %d before, %d after", len(before), len(after))
	} else {
		for p, b := range before {
			if after[p] != b {
				t.Errorf("setup alone changed %s", p)
			}
		}
	}
}
