package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secureStateDir is a state directory Gemini CLI reads a system settings
// file from: not below the world-writable /tmp (t.TempDir), but next to
// this package, which root owns (the test runs as root; skipped else).
func secureStateDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: Gemini CLI reads a system settings file only when root owns it; this test runs as root")
	}
	dir, err := os.MkdirTemp(".", ".state-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if dir, err = filepath.Abs(dir); err != nil {
		t.Fatal(err)
	}
	if why := geminiSkips(filepath.Join(dir, "x")); why != "" {
		t.Skipf("SKIPPED: this checkout is not a place Gemini CLI reads a system settings file from: %s", why)
	}
	return dir
}

// exec's settings for Gemini CLI go into spillway's own 0700 directory
// under the user's state directory, and only where Gemini CLI reads them:
// elsewhere it says why, writing nothing.
func TestGeminiSystemSettings(t *testing.T) {
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
	if _, err := geminiSystemSettings(env(), 0); err == nil || err.Error() != "spillway has no state directory for Gemini CLI's settings (neither XDG_STATE_HOME nor HOME is set)" {
		t.Errorf("no state directory: %v", err)
	}
	tmp := t.TempDir()
	if _, err := geminiSystemSettings(env("HOME", tmp), 1000); err == nil || err.Error() != "Gemini CLI reads a system settings file only when root owns it and every directory above it, and spillway runs as uid 1000" {
		t.Errorf("not root: %v", err)
	}
	if os.Geteuid() == 0 && strings.HasPrefix(tmp, "/tmp/") {
		_, err := geminiSystemSettings(env("HOME", tmp), 0)
		if err == nil || err.Error() != "Gemini CLI skips a system settings file below a directory that group or others can write, and /tmp is one (mode 1777)" {
			t.Errorf("below /tmp: %v", err)
		}
		if _, err := os.Stat(filepath.Join(tmp, ".local")); !os.IsNotExist(err) {
			t.Errorf("wrote below /tmp: %v", err)
		}
	}

	state := secureStateDir(t)
	path, err := geminiSystemSettings(env("XDG_STATE_HOME", state, "HOME", tmp), 0)
	if want := filepath.Join(state, "spillway", "gemini", "settings.json"); err != nil || path != want {
		t.Fatalf("%q %v, want %q", path, err, want)
	}
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(filepath.Dir(path))
	if string(b) != `{"general":{"maxAttempts":1}}`+"\n" || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s (%v): %s", path, fi.Mode(), b)
	}
	// again: the same file
	if again, err := geminiSystemSettings(env("XDG_STATE_HOME", state), 0); err != nil || again != path {
		t.Fatalf("again: %q %v", again, err)
	}
	// a link to it from below /tmp is skipped as Gemini CLI skips it
	if os.Geteuid() == 0 && strings.HasPrefix(tmp, "/tmp/") {
		link := filepath.Join(tmp, "settings.json")
		os.Symlink(path, link)
		if why := geminiSkips(link); why != "Gemini CLI skips a system settings file below a directory that group or others can write, and /tmp is one (mode 1777)" {
			t.Errorf("a link below /tmp: %q", why)
		}
	}
}
