package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A scripted agent stands in for a real one here: the real Codex CLI and
// Claude Code run under exec in package agent's tests.
func TestExecExitCodes(t *testing.T) {
	capacity := `echo "ERROR: Selected model is at capacity. Please try a different model." >&2; exit 1`
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"success", []string{"--", "sh", "-c", "echo ok"}, 0, ""},
		{"capacity through the ladder", []string{"--models", "a,b", "--ladder", "5ms,5ms", "--", "sh", "-c", capacity}, 75, "global outage"},
		{"auth", []string{"--", "sh", "-c", `echo "ERROR: unexpected status 401 Unauthorized: Incorrect API key provided" >&2; exit 1`}, 77, "auth — stopping"},
		{"quota", []string{"--", "sh", "-c", `echo "ERROR: Quota exceeded. Check your plan and billing details." >&2; exit 1`}, 77, "quota — stopping"},
		{"other failure keeps the agent's code", []string{"--", "sh", "-c", `echo "3 tests failed (timeout in test_io)"; exit 3`}, 3, ""},
		{"bad ladder", []string{"--ladder", "soon", "--", "true"}, ExitUsage, "--ladder"},
		{"unknown chain", []string{"--chain", "nope", "--", "true"}, ExitUsage, "--chain"},
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
	got := make(chan []byte, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer hook.Close()
	dir := t.TempDir()
	script := `echo "partial work"; echo "ERROR: Selected model is at capacity. Please try a different model." >&2; exit 1`
	_, errOut, code := run(t, nil, "", "exec", "--events", "-", "--json", "--models", "m1", "--ladder", "5ms",
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
	files, _ := filepath.Glob(filepath.Join(dir, "*attempt*-m1.stdout"))
	if len(files) != 2 {
		t.Fatalf("archive %v", files)
	}
	if b, _ := os.ReadFile(files[0]); !bytes.Contains(b, []byte("partial work")) {
		t.Fatalf("archived output %q", b)
	}
}

func TestExecCtrlCStopsTheChild(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pidFile := filepath.Join(t.TempDir(), "pid")
	var out, errb bytes.Buffer
	app := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		// exec: a shell that waits for a foreground child and gets SIGINT
		// just as it forks it loses the signal (the child has not yet taken
		// the default action) and waits for the child: then only the
		// SIGKILL 5 s later stops it. That case is the grace period's; this
		// test is about the SIGINT.
		done <- app.Run(ctx, []string{"exec", "--events", "-", "--", "sh", "-c", "echo $$ > " + pidFile + "; exec sleep 30"})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	cancel()
	select {
	case code := <-done:
		if code != 130 || time.Since(t0) > 3*time.Second {
			t.Fatalf("exit %d after %v", code, time.Since(t0))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("spillway did not stop")
	}
	b, _ := os.ReadFile(pidFile)
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(b))); err == nil {
		t.Fatal("the child is still running")
	}
}
