package clienttest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// OpenCode is the pinned OpenCode (opencode-ai 1.18.33), or skips (fails
// in CI) without it.
func OpenCode(t testing.TB) string { t.Helper(); return tool(t, "opencode", "OpenCode") }

// OpenCodeVars are the variables that keep an OpenCode run under home to
// itself, offline and quiet: its configuration, sessions, cache and state
// under home (XDG_*), no update check, no models.dev catalog, no sharing,
// no LSP downloads, no reading of Claude Code's files. Add them to Env's
// (run adds PATH, HOME and TMPDIR).
func OpenCodeVars(home string) []string {
	return []string{
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
	}
}

// OpenCodeConfigDir is the configuration directory of an OpenCode run under
// home (OpenCodeVars): home/.config/opencode.
func OpenCodeConfigDir(home string) string { return filepath.Join(home, ".config", "opencode") }

// WriteOpenCodeConfig writes home's opencode.json with the provider
// spillway (as spillway setup opencode writes it) at baseURL/v1, its key
// from $OPENAI_API_KEY, and models.
func WriteOpenCodeConfig(t testing.TB, home, baseURL string, models ...string) {
	t.Helper()
	ms := map[string]any{}
	for _, m := range models {
		ms[m] = map[string]any{"name": m}
	}
	cfg := map[string]any{"provider": map[string]any{"spillway": map[string]any{
		"npm": "@ai-sdk/openai-compatible", "name": "Spillway",
		"options": map[string]any{"baseURL": baseURL + "/v1", "apiKey": "{env:OPENAI_API_KEY}"},
		"models":  ms,
	}}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	dir := OpenCodeConfigDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// RunOpenCode runs `opencode run ARGS` under home (see run: a working
// directory home/work, stdin /dev/null, PATH, HOME, TMPDIR, OpenCodeVars
// and extra only). OpenCode's run runs its bash tool without asking.
func RunOpenCode(t testing.TB, ctx context.Context, timeout time.Duration, home string, args, extra []string) Result {
	t.Helper()
	return run(t, ctx, timeout, home, OpenCode(t), append([]string{"run"}, args...), append(OpenCodeVars(home), extra...))
}
