package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/proc"
)

// A scripted agent stands in for a real one here: the real Codex CLI and
// Claude Code run under exec in package agent's tests.
func TestExecExitCodes(t *testing.T) {
	t.Parallel()
	capacity := `echo "ERROR: Selected model is at capacity. Please try a different model." >&2; exit 1`
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"success", []string{"--", "sh", "-c", "echo ok"}, 0, ""},
		{"capacity through the ladder", []string{"--models", "gpt-6-astra,gpt-6.1-sol", "--ladder", "5ms,5ms", "--", "sh", "-c", capacity}, 75, "global outage"},
		{"auth", []string{"--", "sh", "-c", `echo "ERROR: unexpected status 401 Unauthorized: Incorrect API key provided" >&2; exit 1`}, 77, "auth — stopping"},
		{"quota", []string{"--", "sh", "-c", `echo "ERROR: Quota exceeded. Check your plan and billing details." >&2; exit 1`}, 77, "quota — stopping"},
		{"other failure keeps the agent's code", []string{"--", "sh", "-c", `echo "3 tests failed (timeout in test_io)"; exit 3`}, 3, ""},
		{"bad ladder", []string{"--ladder", "soon", "--", "true"}, ExitUsage, "--ladder"},
		{"unknown chain", []string{"--chain", "nope", "--", "true"}, ExitUsage, "--chain"},
		// what would only fail later, or be passed on as written, is
		// refused before the agent runs, as queue add refuses it
		{"an unknown model in --models", []string{"--models", "gpt-6-astra,gpt-6-astr", "--", "true"}, ExitUsage, `--models: "gpt-6-astr" is not a configured model; models: claude-`},
		{"a negative --max-wait", []string{"--max-wait", "-5m", "--", "true"}, ExitUsage, "--max-wait -5m0s: give a duration of 0 or more"},
		{"a --notify that is not a URL", []string{"--notify", "hooks.example/x", "--", "true"}, ExitUsage, `--notify "hooks.example/x": give an http:// or https:// URL`},
		{"an --archive under a file", []string{"--archive", "/dev/null/archive", "--", "true"}, ExitUsage, "--archive /dev/null/archive: /dev/null is a file, not a directory"},
		{"{model} with nothing to fill it", []string{"--", "sh", "-c", "mytool --model {model}"}, ExitUsage, "the command has {model}, but sh is not an agent spillway knows the model of: give --model (or --models, --chain)"},
		{"{model} filled by --model", []string{"--model", "gpt-6-luna", "--", "sh", "-c", `test "$0" = gpt-6-luna`, "{model}"}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := run(t, nil, "", append([]string{"exec", "--events", "-"}, c.args...)...)
			if code != c.code || !strings.Contains(errOut, c.stderr) {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, errOut)
			}
		})
	}
}

func TestExecNotifyArchiveJSON(t *testing.T) {
	t.Parallel()
	got := make(chan []byte, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer hook.Close()
	dir := t.TempDir()
	script := `echo "partial work"; echo "ERROR: Selected model is at capacity. Please try a different model." >&2; exit 1`
	_, errOut, code := run(t, nil, "", "exec", "--events", "-", "--json", "--models", "gpt-6-astra", "--ladder", "5ms",
		"--archive", dir, "--notify", hook.URL, "--", "sh", "-c", script)
	if code != 75 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var summary struct {
		ExitCode int `json:"exit_code"`
		Attempts []struct {
			Model string `json:"model"`
			Class string `json:"class"`
		} `json:"attempts"`
	}
	select {
	case b := <-got:
		if err := json.Unmarshal(b, &summary); err != nil || summary.ExitCode != 75 || len(summary.Attempts) != 2 || summary.Attempts[0].Class != "capacity" {
			t.Fatalf("notify body %s", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	if !strings.Contains(errOut, `"exit_code":75`) {
		t.Fatalf("no --json summary on stderr:\n%s", errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*attempt*-gpt-6-astra.stdout"))
	if len(files) != 2 {
		t.Fatalf("archive %v", files)
	}
	if b, _ := os.ReadFile(files[0]); !bytes.Contains(b, []byte("partial work")) {
		t.Fatalf("archived output %q", b)
	}
}

// Ctrl-C (the context) stops the agent and everything it started: a
// shell's background job ignores SIGINT, so it is killed once the shell
// has exited, never left running.
func TestExecCtrlCStopsTheChild(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, script string }{
		{"the agent itself", "echo $$; exec sleep 30"},
		{"a background job of the agent's", "sleep 30 & echo $!; wait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pr, pw := io.Pipe()
			var errb bytes.Buffer
			app := &App{Stdin: strings.NewReader(""), Stdout: pw, Stderr: &errb, Getenv: func(string) string { return "" }}
			done := make(chan int, 1)
			go func() {
				done <- app.Run(ctx, []string{"exec", "--events", "-", "--", "sh", "-c", c.script})
				pw.Close()
			}()
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil {
				t.Fatalf("no pid from the agent: %v", err)
			}
			go io.Copy(io.Discard, pr)
			pid, _ := strconv.Atoi(strings.TrimSpace(line))
			if !proc.Running(pid) {
				t.Fatalf("process %d is not running", pid)
			}
			cancel()
			if code := <-done; code != 130 {
				t.Fatalf("exit %d\n%s", code, errb.String())
			}
			// (killed, it may wait as a zombie for its new parent to reap it)
			if proc.Running(pid) {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				t.Fatalf("process %d outlived spillway exec: %s", pid, b)
			}
		})
	}
}

// The agent under exec, and a queue's command, get spillway's environment
// without the variables its configuration reads its own keys from (the
// admin, metrics and gateway keys); the providers' keys, the user's own,
// pass through.
func TestTheAgentGetsNoneOfSpillwaysOwnKeys(t *testing.T) {
	own := map[string]string{"SPILLWAY_ADMIN_KEY": "admin-secret-0123456789", "SPW_TEST_METRICS_KEY": "metrics-secret-0123456789", "SPW_TEST_TEAM_KEY": "team-secret-0123456789"}
	env := map[string]string{"OPENAI_API_KEY": "sk-users-own-0123456789"}
	for k, v := range own {
		env[k] = v
	}
	for k, v := range env {
		t.Setenv(k, v) // the child's environment is the process's
	}
	dir := t.TempDir()
	env["HOME"] = dir
	cfg := filepath.Join(dir, "spillway.yaml")
	os.WriteFile(cfg, []byte("gateway:\n  admin_key: env:SPILLWAY_ADMIN_KEY\n  metrics_key: env:SPW_TEST_METRICS_KEY\n  keys:\n    - { name: ci, key: env:SPW_TEST_TEAM_KEY }\n"), 0o600)
	check := func(what, out string) {
		t.Helper()
		if !strings.Contains(out, "OPENAI_API_KEY=sk-users-own-0123456789") {
			t.Fatalf("%s: the provider's key did not pass through:\n%s", what, out)
		}
		for k, v := range own {
			if strings.Contains(out, k+"=") || strings.Contains(out, v) {
				t.Fatalf("%s: the agent got %s:\n%s", what, k, out)
			}
		}
	}
	out, errOut, code := run(t, env, "", "exec", "--config", cfg, "--events", "-", "--", "sh", "-c", "env")
	if code != 0 {
		t.Fatalf("exec: exit %d\n%s", code, errOut)
	}
	check("exec", out)
	db := "sqlite:" + filepath.Join(dir, "q.db")
	q := func(args ...string) (string, string, int) {
		return run(t, env, "", append([]string{"queue", "--config", cfg, "--db", db}, args...)...)
	}
	if _, errOut, code := q("add", "--", "sh", "-c", "env"); code != 0 {
		t.Fatalf("queue add: exit %d, %s", code, errOut)
	}
	if out, errOut, code := q("run", "--until-empty", "--events", "-"); code != 0 {
		t.Fatalf("queue run: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, _ = q("show", "1")
	check("queue", out)
}
