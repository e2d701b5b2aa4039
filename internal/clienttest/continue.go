package clienttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Continue is the pinned Continue CLI (cn), or skips (fails in CI)
// without it.
func Continue(t testing.TB) string { t.Helper(); return tool(t, "cn", "Continue CLI (cn)") }

// ContinueKeyVar is the variable ContinueConfig's models take their key
// from (${{ secrets.SPILLWAY_TEST_KEY }}), which ContinueEnv sets.
const ContinueKeyVar = "SPILLWAY_TEST_KEY"

// ContinueOptions configure one `cn -p` run.
type ContinueOptions struct {
	// BaseURL is the server root, such as http://127.0.0.1:PORT (cn's
	// apiBase is its /v1).
	BaseURL string
	Model   string
	Prompt  string
	APIKey  string
	// Config, when set, is ~/.continue/config.yaml as it is (BaseURL and
	// Model unused); else ContinueConfig(BaseURL, Model).
	Config string
	// Home, when set, is the home to run in, its ~/.continue as it is
	// (set up by spillway setup continue, say): Config, BaseURL and Model
	// are unused.
	Home string
	// Env are more variables (NAME=value): the key's, say, when Home's
	// config.yaml takes it from another variable than SPILLWAY_TEST_KEY.
	Env []string
	// ExtraArgs go after -p, before the prompt.
	ExtraArgs []string
	// Timeout bounds the run; DefaultTimeout when 0.
	Timeout time.Duration
}

// ContinueConfig is a config.yaml of one model, openai at baseURL/v1, its
// key from $SPILLWAY_TEST_KEY.
func ContinueConfig(baseURL, model string) string {
	return "name: Test\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: " + model + "\n    provider: openai\n    model: " + model +
		"\n    apiBase: " + baseURL + "/v1\n    apiKey: ${{ secrets." + ContinueKeyVar + " }}\n    roles: [chat]\n"
}

// RunContinue runs `cn -p` with a fresh HOME whose ~/.continue/config.yaml
// points it at opts.BaseURL.
func RunContinue(t testing.TB, ctx context.Context, opts ContinueOptions) Result {
	t.Helper()
	bin, env, home := ContinueEnv(t, opts)
	return run(t, ctx, opts.Timeout, home, bin, append(append([]string{"-p"}, opts.ExtraArgs...), opts.Prompt), env)
}

// ContinueEnv prepares what RunContinue runs in: a fresh home with
// ~/.continue/config.yaml (no hub sign-in: a local config.yaml is all cn
// reads), the key in $SPILLWAY_TEST_KEY, and cn's metrics off. It returns
// the binary, the variables (see Env) and the home.
func ContinueEnv(t testing.TB, opts ContinueOptions) (bin string, env []string, home string) {
	t.Helper()
	bin = Continue(t)
	env = ContinueQuiet(append([]string{ContinueKeyVar + "=" + opts.APIKey}, opts.Env...)...)
	if opts.Home != "" {
		return bin, env, opts.Home
	}
	home = t.TempDir()
	dir := filepath.Join(home, ".continue")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := opts.Config
	if cfg == "" {
		cfg = ContinueConfig(opts.BaseURL, opts.Model)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, env, home
}

// ContinueQuiet is extra and the variables that keep cn quiet: its
// OpenTelemetry metrics off (it sends none without an OTEL_ endpoint
// either) and no commit signature in its system prompt. cn checks for
// updates only in its TUI, and reads the hub only for a config or a
// secret it cannot find locally.
func ContinueQuiet(extra ...string) []string {
	return append([]string{"CONTINUE_METRICS_ENABLED=0", "CONTINUE_CLI_DISABLE_COMMIT_SIGNATURE=1"}, extra...)
}
