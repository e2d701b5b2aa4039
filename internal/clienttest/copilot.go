package clienttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Copilot is the pinned GitHub Copilot CLI, or skips (fails in CI) without
// it.
func Copilot(t testing.TB) string { t.Helper(); return tool(t, "copilot", "GitHub Copilot CLI") }

// CopilotOptions configure a Copilot CLI run in its bring-your-own-
// provider mode.
type CopilotOptions struct {
	// BaseURL is COPILOT_PROVIDER_BASE_URL: the server's /v1 for the
	// openai type, its root for anthropic.
	BaseURL string
	// Type is COPILOT_PROVIDER_TYPE ("openai" when empty); Wire is
	// COPILOT_PROVIDER_WIRE_API ("completions" or "responses"; unset when
	// empty).
	Type, Wire string
	Model      string // COPILOT_MODEL; unset when empty
	APIKey     string // COPILOT_PROVIDER_API_KEY
	// Env, when set, is instead the variables that point Copilot at a
	// server (NAME=value: what `spillway setup copilot` printed, run by
	// sh); the fields above are then unused.
	Env []string
}

// CopilotEnv prepares a Copilot CLI run: a fresh home, and the variables
// that point it at opts' provider and keep it off the network
// (COPILOT_OFFLINE: no GitHub sign-in, telemetry, web tools or update
// checks; without it, with no network, each run waits about a minute on
// GitHub) with its package unpacked once for all runs (COPILOT_CACHE_HOME:
// unpacking its 235 MB takes five seconds a home). It returns the binary,
// the variables (see Env) and the home.
func CopilotEnv(t testing.TB, opts CopilotOptions) (bin string, env []string, home string) {
	t.Helper()
	bin = Copilot(t)
	home = t.TempDir()
	cache, err := copilotCache(bin)
	if err != nil {
		t.Fatalf("clienttest: Copilot CLI's package cache: %v", err)
	}
	env = []string{"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false", "COPILOT_CACHE_HOME=" + cache, "NO_COLOR=1"}
	if opts.Env != nil {
		return bin, append(env, opts.Env...), home
	}
	env = append(env, "COPILOT_PROVIDER_BASE_URL="+opts.BaseURL, "COPILOT_PROVIDER_API_KEY="+opts.APIKey)
	for k, v := range map[string]string{"COPILOT_PROVIDER_TYPE": opts.Type, "COPILOT_PROVIDER_WIRE_API": opts.Wire, "COPILOT_MODEL": opts.Model} {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return bin, env, home
}

// copilotCached is the package cache the Copilot CLI runs of this test
// binary share, unpacked by its first.
var copilotCached struct {
	once sync.Once
	dir  string
	err  error
}

// copilotCache is a COPILOT_CACHE_HOME holding Copilot CLI's unpacked
// package: .tools/copilot-cache beside the installed clients (git-ignored),
// unpacked there once (by `copilot --version`, into a directory of its own
// then renamed into place, so that test binaries running at once never
// share a half-unpacked cache).
func copilotCache(bin string) (string, error) {
	copilotCached.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			copilotCached.err = err
			return
		}
		dir := filepath.Join(root, ".tools", "copilot-cache")
		copilotCached.dir = dir
		if _, err := os.Stat(filepath.Join(dir, "pkg")); err == nil {
			return
		}
		tmp, err := os.MkdirTemp(filepath.Join(root, ".tools"), "copilot-cache-")
		if err != nil {
			copilotCached.err = err
			return
		}
		home, err := os.MkdirTemp("", "copilot-home-")
		if err != nil {
			copilotCached.err = err
			return
		}
		defer os.RemoveAll(home)
		cmd := exec.Command(bin, "--version")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "COPILOT_CACHE_HOME=" + tmp, "COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false"}
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(tmp)
			copilotCached.err = fmt.Errorf("copilot --version: %v: %s", err, out)
			return
		}
		if err := os.Rename(tmp, dir); err != nil {
			os.RemoveAll(tmp) // another test binary's is there already
			if _, err := os.Stat(filepath.Join(dir, "pkg")); err != nil {
				copilotCached.err = err
			}
		}
	})
	return copilotCached.dir, copilotCached.err
}
