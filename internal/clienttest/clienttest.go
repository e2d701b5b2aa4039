// Package clienttest runs the real Codex CLI and Claude Code, as installed
// by scripts/install-clients into .tools/npm, for tests that point them at a
// local server (spillway sim, or spillway itself).
//
// Every run is sealed off from the developer's machine: a fresh HOME, config
// directory, working directory and TMPDIR, and an environment built from
// scratch (PATH plus the variables the run needs), so no credentials or
// settings (OPENAI_API_KEY, ANTHROPIC_API_KEY, CODEX_HOME, ~/.codex,
// ~/.claude …) leak in. Telemetry, analytics, plugins and update checks are
// off, so the clients talk to the given base URL only. Always give a
// 127.0.0.1 URL.
//
// When a client is not installed, tests that need it are skipped, or fail
// when CI=true.
package clienttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DefaultTimeout bounds a client run when the options give none.
const DefaultTimeout = 90 * time.Second

// Result is what a client run left behind.
type Result struct {
	Stdout, Stderr string
	// ExitCode is the client's exit status; -1 when it was killed (see
	// TimedOut).
	ExitCode int
	// TimedOut is true when the run was killed at its timeout or when ctx
	// ended.
	TimedOut bool
	Elapsed  time.Duration
	// CodexHome is the CODEX_HOME of a Codex run (sessions/, config.toml).
	CodexHome string
	// Home is the run's HOME (~/.claude, ~/.gemini, tmp/ are under it).
	Home string
}

// Codex returns the path of the installed codex binary, or skips t (fails
// it when CI=true) when it is not installed.
func Codex(t testing.TB) string { t.Helper(); return tool(t, "codex", "Codex CLI") }

// Claude returns the path of the installed claude binary, or skips t (fails
// it when CI=true) when it is not installed.
func Claude(t testing.TB) string { t.Helper(); return tool(t, "claude", "Claude Code") }

// Gemini is the pinned Gemini CLI, or skips (fails in CI) without it.
func Gemini(t testing.TB) string { t.Helper(); return tool(t, "gemini", "Gemini CLI") }

// GeminiOptions configure one `gemini -p` run.
type GeminiOptions struct {
	// BaseURL is the server root, such as http://127.0.0.1:PORT.
	BaseURL string
	Model   string
	Prompt  string
	APIKey  string
	// MaxAttempts sets general.maxAttempts in its settings (1: no retries
	// of its own); 0 keeps Gemini CLI's default (10).
	MaxAttempts int
	// ExtraArgs go after the other flags (--allowed-tools
	// run_shell_command: its shell tool, which -p leaves out otherwise).
	ExtraArgs []string
	// Timeout bounds the run; DefaultTimeout when 0.
	Timeout time.Duration
}

// RunGemini runs `gemini -p` with a fresh HOME whose settings.json selects
// API-key auth, in a trusted workspace, against opts.BaseURL.
func RunGemini(t testing.TB, ctx context.Context, opts GeminiOptions) Result {
	t.Helper()
	bin, env, home := GeminiEnv(t, opts)
	return run(t, ctx, opts.Timeout, home, bin, append([]string{"-p", opts.Prompt, "-m", opts.Model}, opts.ExtraArgs...), env)
}

// GeminiEnv prepares what RunGemini runs in: a fresh home with
// ~/.gemini/settings.json and the variables that point Gemini CLI at
// opts.BaseURL. It returns the binary, the variables (see Env) and the home.
func GeminiEnv(t testing.TB, opts GeminiOptions) (bin string, env []string, home string) {
	t.Helper()
	bin = Gemini(t)
	home = t.TempDir()
	dir := filepath.Join(home, ".gemini")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}}
	if opts.MaxAttempts > 0 {
		settings["general"] = map[string]any{"maxAttempts": opts.MaxAttempts}
	}
	b, _ := json.Marshal(settings)
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	env = []string{"GOOGLE_GEMINI_BASE_URL=" + opts.BaseURL, "GEMINI_API_KEY=" + opts.APIKey, "GEMINI_CLI_TRUST_WORKSPACE=true"}
	return bin, env, home
}

func tool(t testing.TB, bin, name string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("clienttest: %v", err)
	}
	path := filepath.Join(root, ".tools", "npm", "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed at %s (CI=true, so this is a failure): run scripts/install-clients", name, path)
		}
		t.Skipf("SKIPPED: %s not installed (run scripts/install-clients)", name)
	}
	return path
}

// repoRoot walks up from the working directory to the directory holding
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// CodexOptions configure one `codex exec` run.
type CodexOptions struct {
	// BaseURL is the Responses API base, such as http://127.0.0.1:PORT/v1.
	BaseURL string
	Model   string
	Prompt  string
	// APIKey is sent as the bearer token (through env SPILLWAY_TEST_KEY).
	APIKey string
	// JSON adds --json: JSONL events on stdout.
	JSON bool
	// RequestMaxRetries is the provider's request_max_retries (HTTP
	// retries); nil keeps Codex's default (4).
	RequestMaxRetries *int
	// StreamMaxRetries is the provider's stream_max_retries (reconnects
	// after a broken stream); nil means 0, so failures show at once.
	StreamMaxRetries *int
	// ExtraArgs go after the other flags, before the prompt.
	ExtraArgs []string
	// Timeout bounds the run; DefaultTimeout when 0.
	Timeout time.Duration
}

// RunCodex runs `codex exec` with a fresh CODEX_HOME whose config.toml
// defines the provider "spillway" at opts.BaseURL.
func RunCodex(t testing.TB, ctx context.Context, opts CodexOptions) Result {
	t.Helper()
	bin, env, home, codexHome := CodexEnv(t, opts)
	args := []string{"exec", "--skip-git-repo-check", "-m", opts.Model}
	if opts.JSON {
		args = append(args, "--json")
	}
	args = append(args, opts.ExtraArgs...)
	args = append(args, opts.Prompt)
	r := run(t, ctx, opts.Timeout, home, bin, args, env)
	r.CodexHome = codexHome
	return r
}

// CodexEnv prepares what RunCodex runs in: a fresh home with a CODEX_HOME
// whose config.toml points at opts.BaseURL. It returns the binary, the
// variables to add to PATH/HOME/TMPDIR (see Env), the home and CODEX_HOME.
// Tests that run Codex through another program (spillway exec) use it.
func CodexEnv(t testing.TB, opts CodexOptions) (bin string, env []string, home, codexHome string) {
	t.Helper()
	bin = Codex(t)
	home = t.TempDir()
	codexHome = filepath.Join(home, ".codex")
	if err := os.Mkdir(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	streamRetries := 0
	if opts.StreamMaxRetries != nil {
		streamRetries = *opts.StreamMaxRetries
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "model_provider = \"spillway\"\n\n")
	fmt.Fprintf(&cfg, "[model_providers.spillway]\n")
	fmt.Fprintf(&cfg, "name = \"Spillway\"\n")
	fmt.Fprintf(&cfg, "base_url = %s\n", strconv.Quote(opts.BaseURL))
	fmt.Fprintf(&cfg, "wire_api = \"responses\"\n")
	fmt.Fprintf(&cfg, "env_key = \"SPILLWAY_TEST_KEY\"\n")
	if opts.RequestMaxRetries != nil {
		fmt.Fprintf(&cfg, "request_max_retries = %d\n", *opts.RequestMaxRetries)
	}
	fmt.Fprintf(&cfg, "stream_max_retries = %d\n", streamRetries)
	// Analytics would look up ab.chatgpt.com; plugins run a git fetch from
	// github.com (docs/client-notes.md).
	fmt.Fprintf(&cfg, "\n[analytics]\nenabled = false\n\n[features]\nplugins = false\n")
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, []string{"CODEX_HOME=" + codexHome, "SPILLWAY_TEST_KEY=" + opts.APIKey}, home, codexHome
}

// Env is the whole environment a client gets under home: PATH (so the
// codex launcher finds node; it carries no secrets), HOME, TMPDIR, and
// extra. It creates home/work (the working directory) and home/tmp.
func Env(t testing.TB, home string, extra []string) (env []string, workDir string) {
	t.Helper()
	work, tmp := filepath.Join(home, "work"), filepath.Join(home, "tmp")
	for _, d := range []string{work, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp}, extra...), work
}

// The clouds Claude Code can be pointed at instead of Anthropic's API
// (ClaudeOptions.Cloud).
const (
	// Bedrock is Claude Code with CLAUDE_CODE_USE_BEDROCK, its base URL
	// BaseURL/bedrock, in AWS region us-east-1 (so --model NAME is asked
	// for as the inference profile us.anthropic.NAME).
	Bedrock = "bedrock"
	// Vertex is Claude Code with CLAUDE_CODE_USE_VERTEX, its base URL
	// BaseURL/vertex/v1, in region us-east5 of VertexProject.
	Vertex = "vertex"
)

// ClaudeOptions configure one `claude -p` run.
type ClaudeOptions struct {
	// BaseURL is the server root, such as http://127.0.0.1:PORT (no /v1).
	BaseURL string
	Model   string
	Prompt  string
	// APIKey is sent as ANTHROPIC_API_KEY; in a Cloud mode it is the
	// gateway key instead (Bedrock: AWS_BEARER_TOKEN_BEDROCK; Vertex AI:
	// Authorization: Bearer through ANTHROPIC_CUSTOM_HEADERS), and without
	// it Claude Code sends no credential at all.
	APIKey string
	// Cloud, Bedrock or Vertex, runs Claude Code in that cloud's mode
	// against the gateway's routes for it (no ANTHROPIC_BASE_URL or
	// ANTHROPIC_API_KEY); "" is Anthropic's API at BaseURL.
	Cloud string
	// VertexProject is ANTHROPIC_VERTEX_PROJECT_ID in Vertex mode
	// ("my-proj" when empty).
	VertexProject string
	// Env, when set, is instead the variables that point Claude Code at a
	// server and give its credentials (NAME=value: what `spillway setup
	// claude` printed, say); BaseURL, Cloud and the keys are then unused.
	Env []string
	// OAuthToken, instead of APIKey, signs Claude Code in as a Claude plan
	// does (CLAUDE_CODE_OAUTH_TOKEN): it sends Authorization: Bearer and
	// the oauth beta.
	OAuthToken string
	// AuthToken sets ANTHROPIC_AUTH_TOKEN (a bearer with no oauth beta),
	// beside APIKey when that is set too (Claude Code then sends both
	// Authorization: Bearer and x-api-key).
	AuthToken string
	// MaxRetries sets CLAUDE_CODE_MAX_RETRIES; nil keeps Claude's default
	// (about ten retries over more than two minutes).
	MaxRetries *int
	// OutputFormat is --output-format (text, json, stream-json); empty
	// leaves it out (text).
	OutputFormat string
	// ExtraArgs go after the other flags.
	ExtraArgs []string
	// Timeout bounds the run; DefaultTimeout when 0.
	Timeout time.Duration
}

// RunClaude runs `claude -p` with a fresh HOME and CLAUDE_CONFIG_DIR against
// opts.BaseURL.
func RunClaude(t testing.TB, ctx context.Context, opts ClaudeOptions) Result {
	t.Helper()
	bin, env, home := ClaudeEnv(t, opts)
	args := []string{"-p", opts.Prompt, "--model", opts.Model}
	if opts.OutputFormat != "" {
		args = append(args, "--output-format", opts.OutputFormat)
	}
	args = append(args, opts.ExtraArgs...)
	return run(t, ctx, opts.Timeout, home, bin, args, env)
}

// ClaudeEnv prepares what RunClaude runs in: a fresh home and
// CLAUDE_CONFIG_DIR and the variables that point Claude Code at
// opts.BaseURL quietly (in opts.Cloud's mode, if any). It returns the binary, the variables (see Env) and
// the home.
func ClaudeEnv(t testing.TB, opts ClaudeOptions) (bin string, env []string, home string) {
	t.Helper()
	bin = Claude(t)
	home = t.TempDir()
	cfgDir := filepath.Join(home, ".claude")
	if err := os.Mkdir(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env = []string{
		"CLAUDE_CONFIG_DIR=" + cfgDir,
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	if opts.MaxRetries != nil {
		env = append(env, "CLAUDE_CODE_MAX_RETRIES="+strconv.Itoa(*opts.MaxRetries))
	}
	switch {
	case opts.Env != nil:
		return bin, append(env, opts.Env...), home
	case opts.Cloud == "":
	case opts.Cloud == Bedrock:
		env = append(env, "CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_BEDROCK_BASE_URL="+opts.BaseURL+"/bedrock", "AWS_REGION=us-east-1")
		if opts.APIKey != "" {
			env = append(env, "AWS_BEARER_TOKEN_BEDROCK="+opts.APIKey)
		} else {
			env = append(env, "CLAUDE_CODE_SKIP_BEDROCK_AUTH=1")
		}
		return bin, env, home
	case opts.Cloud == Vertex:
		project := opts.VertexProject
		if project == "" {
			project = "my-proj"
		}
		env = append(env, "CLAUDE_CODE_USE_VERTEX=1", "ANTHROPIC_VERTEX_BASE_URL="+opts.BaseURL+"/vertex/v1",
			"ANTHROPIC_VERTEX_PROJECT_ID="+project, "CLOUD_ML_REGION=us-east5", "CLAUDE_CODE_SKIP_VERTEX_AUTH=1")
		if opts.APIKey != "" {
			env = append(env, "ANTHROPIC_CUSTOM_HEADERS=Authorization: Bearer "+opts.APIKey)
		}
		return bin, env, home
	default:
		t.Fatalf("clienttest: Cloud %q: use %q, %q or \"\"", opts.Cloud, Bedrock, Vertex)
	}
	env = append(env, "ANTHROPIC_BASE_URL="+opts.BaseURL)
	switch {
	case opts.OAuthToken != "":
		env = append(env, "CLAUDE_CODE_OAUTH_TOKEN="+opts.OAuthToken)
	case opts.AuthToken != "":
		env = append(env, "ANTHROPIC_AUTH_TOKEN="+opts.AuthToken)
		if opts.APIKey != "" {
			env = append(env, "ANTHROPIC_API_KEY="+opts.APIKey)
		}
	default:
		env = append(env, "ANTHROPIC_API_KEY="+opts.APIKey)
	}
	return bin, env, home
}

// run starts bin in a working directory of its own under home, with stdin
// from /dev/null and an environment made of PATH, HOME, TMPDIR and extra
// only, and waits for it, killing its whole process group at the timeout.
func run(t testing.TB, ctx context.Context, timeout time.Duration, home, bin string, args, extra []string) Result {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	env, work := Env(t, home, extra)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = work
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // Stdin nil: /dev/null
	// The codex launcher is node running a native child: kill the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start), Home: home}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.ExitCode, r.TimedOut = -1, true
	case err == nil:
	case errors.As(err, &exitErr):
		r.ExitCode = exitErr.ExitCode()
	default:
		t.Fatalf("%s: %v", filepath.Base(bin), err)
	}
	if cmd.Process != nil {
		// The group may outlive a clean exit (helpers the client left).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	t.Logf("%s %s: exit %d after %v (timed out: %v)\n--- stdout:\n%s\n--- stderr:\n%s",
		filepath.Base(bin), quoteArgs(args), r.ExitCode, r.Elapsed.Round(time.Millisecond), r.TimedOut, clip(r.Stdout), clip(r.Stderr))
	return r
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n\"'") {
			q[i] = strconv.Quote(a)
		}
	}
	return strings.Join(q, " ")
}

// clip keeps logs readable: the last 4 KB of a long output.
func clip(s string) string {
	const max = 4096
	if len(s) <= max {
		return s
	}
	return "…" + s[len(s)-max:]
}
