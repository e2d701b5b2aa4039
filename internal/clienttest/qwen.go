package clienttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Qwen is the pinned Qwen Code, or skips (fails in CI) without it.
func Qwen(t testing.TB) string { t.Helper(); return tool(t, "qwen", "Qwen Code") }

// QwenOptions configure one headless `qwen --yolo PROMPT` run.
type QwenOptions struct {
	// BaseURL is the server root, such as http://127.0.0.1:PORT: Qwen
	// Code then runs with --auth-type openai and OPENAI_BASE_URL
	// BaseURL/v1. Empty: its settings.json says (Settings, or what
	// spillway setup qwen wrote into Home).
	BaseURL string
	// Model is -m; empty leaves it out (the settings' model.name).
	Model  string
	Prompt string
	// APIKey is OPENAI_API_KEY.
	APIKey string
	// Home is the HOME to run in (a fresh one when empty).
	Home string
	// Settings, when set, is written as ~/.qwen/settings.json.
	Settings string
	// ExtraArgs go after the other flags, before the prompt.
	ExtraArgs []string
	// Args, when set, are the whole argument list instead.
	Args []string
	// Env are more variables (NAME=value).
	Env []string
	// Timeout bounds the run; DefaultTimeout when 0.
	Timeout time.Duration
}

// RunQwen runs `qwen --yolo [-m MODEL] PROMPT` (its shell tool allowed)
// with QwenEnv's home and variables.
func RunQwen(t testing.TB, ctx context.Context, opts QwenOptions) Result {
	t.Helper()
	bin, env, home := QwenEnv(t, opts)
	return run(t, ctx, opts.Timeout, home, bin, QwenArgs(opts), env)
}

// QwenArgs are the arguments RunQwen gives qwen.
func QwenArgs(opts QwenOptions) []string {
	if opts.Args != nil {
		return opts.Args
	}
	args := []string{"--yolo"}
	if opts.BaseURL != "" {
		args = append(args, "--auth-type", "openai")
	}
	if opts.Model != "" {
		args = append(args, "-m", opts.Model)
	}
	return append(append(args, opts.ExtraArgs...), opts.Prompt)
}

// QwenEnv prepares what RunQwen runs in: the home (opts.Home, else a
// fresh one) with opts.Settings as ~/.qwen/settings.json when given, and
// the variables: the key, the base URL when opts.BaseURL is set, and the
// supported settings that keep Qwen Code quiet and offline (no usage
// statistics, whose sending to Alibaba Cloud holds the exit up when there
// is no network; no --yolo warning).
func QwenEnv(t testing.TB, opts QwenOptions) (bin string, env []string, home string) {
	t.Helper()
	bin = Qwen(t)
	home = opts.Home
	if home == "" {
		home = t.TempDir()
	}
	if opts.Settings != "" {
		dir := filepath.Join(home, ".qwen")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(opts.Settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env = QwenQuiet(t, home)
	if opts.APIKey != "" {
		env = append(env, "OPENAI_API_KEY="+opts.APIKey)
	}
	if opts.BaseURL != "" {
		env = append(env, "OPENAI_BASE_URL="+opts.BaseURL+"/v1")
	}
	env = append(env, opts.Env...)
	return bin, env, home
}

// QwenQuiet are the variables that keep Qwen Code 0.24.4 quiet, offline
// and to the point, under home: no usage statistics
// (QWEN_USAGE_STATISTICS_ENABLED; their sending to Alibaba Cloud holds the
// exit up when there is no network), no warning about --yolo, and system
// defaults (QWEN_CODE_SYSTEM_DEFAULTS_PATH, a file under home) that turn
// off its managed auto-memory and its "dream": two background agents that
// otherwise send a request each after the answer (the dream with a shell
// tool), which a scripted model would answer with its tool calls too.
func QwenQuiet(t testing.TB, home string) []string {
	t.Helper()
	path := filepath.Join(home, "qwen-system-defaults.json")
	const defaults = `{"$version": 4, "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false}}` + "\n"
	if err := os.WriteFile(path, []byte(defaults), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"QWEN_USAGE_STATISTICS_ENABLED=false", "QWEN_CODE_SUPPRESS_YOLO_WARNING=1", "QWEN_CODE_SYSTEM_DEFAULTS_PATH=" + path}
}
