package clienttest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cline is the pinned Cline CLI, or skips (fails in CI) without it.
func Cline(t testing.TB) string { t.Helper(); return tool(t, "cline", "Cline") }

// ClineQuiet is the environment that keeps Cline 3.0.65 local and quiet:
// sessions in its own process (CLINE_SESSION_BACKEND_MODE=local; by
// default every run starts a detached `cline --cline-hub-daemon`, in a
// session of its own, which outlives it), no update check.
var ClineQuiet = []string{"CLINE_SESSION_BACKEND_MODE=local", "CLINE_NO_AUTO_UPDATE=1"}

// ClineHome makes a fresh HOME for Cline: ~/.cline/data/settings with
// global-settings.json saying no telemetry and no auto-update, and
// providers.json when providers is not "" (its bytes as given). It
// registers a cleanup that kills any Cline hub daemon running with this
// HOME (ReapClineDaemons). It returns the home and the providers.json
// path.
func ClineHome(t testing.TB, providers string) (home, providersPath string) {
	t.Helper()
	home = t.TempDir()
	dir := filepath.Join(home, ".cline", "data", "settings")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "global-settings.json"), []byte(`{"telemetryOptOut":true,"autoUpdateEnabled":false}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	providersPath = filepath.Join(dir, "providers.json")
	if providers != "" {
		if err := os.WriteFile(providersPath, []byte(providers), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if n := ReapClineDaemons(home); n > 0 {
			t.Logf("killed %d cline hub daemon(s) left under %s", n, home)
		}
	})
	return home, providersPath
}

// ClineProviders is a providers.json whose openai-compatible provider
// (the one `cline auth -p openai` saves) is baseURL (with /v1) with key
// and model, the provider Cline runs.
func ClineProviders(baseURL, key, model string) string {
	return `{"version":1,"lastUsedProvider":"openai-compatible","modes":{},"providers":{"openai-compatible":{"settings":{"provider":"openai-compatible","apiKey":` +
		strconv.Quote(key) + `,"model":` + strconv.Quote(model) + `,"baseUrl":` + strconv.Quote(baseURL) + `},"updatedAt":"2026-12-06T15:20:03.633Z","tokenSource":"manual"}}}` + "\n"
}

// RunCline runs `cline [args…] prompt` under home (see ClineHome) with
// stdin from /dev/null (headless: it acts, auto-approving its tools) and
// the quiet environment plus extra.
func RunCline(t testing.TB, ctx context.Context, home string, timeout time.Duration, extra []string, args ...string) Result {
	t.Helper()
	return run(t, ctx, timeout, home, Cline(t), args, append(append([]string(nil), ClineQuiet...), extra...))
}

// ReapClineDaemons kills every `cline --cline-hub-daemon` whose HOME is
// home (read from /proc: Linux only; elsewhere none are found) and says
// how many. The daemon calls setsid, so killing the group of the cline
// that started it does not reach it.
func ReapClineDaemons(home string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.Contains(cmdline, []byte("--cline-hub-daemon")) {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for _, kv := range strings.Split(string(environ), "\x00") {
			if kv == "HOME="+home {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
				break
			}
		}
	}
	return n
}
