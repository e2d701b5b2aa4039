package setup_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/setup"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// setup gemini on a settings.json with comments, written by hand for a
// Google login: the real Gemini CLI 0.61 starts with the merged file and
// answers through the gateway (its model full, the next model of the
// chain answers the same request). Control: the file as the merge wrote
// it before (re-indented, with trailing commas) stops Gemini CLI at once
// with exit 52, so the run does read this file.
func TestRealGeminiStartsWithMergedSettings(t *testing.T) {
	bin := clienttest.Gemini(t)
	srv, simURL := simtest.Start(t, nil)
	srv.AddFault(sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
	gw, err := gateway.New(gateway.Options{Config: simtest.Config(simURL), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(gw.Handler())
	t.Cleanup(gs.Close)

	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	old, err := os.ReadFile("testdata/gemini/comments.in.json")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "settings.json"), old, 0o600)
	if _, _, err := setup.WriteGemini(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	prompt := "Reply with pong"
	gemini := func() (out string, code int) {
		env, work := clienttest.Env(t, home, []string{"GOOGLE_GEMINI_BASE_URL=" + gs.URL, "GEMINI_API_KEY=AIza-setup-test-0123", "GEMINI_CLI_TRUST_WORKSPACE=true"})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-p", prompt, "-m", "gemini-3-pro")
		cmd.Dir, cmd.Env = work, env
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return b.String(), code
	}
	out, code := gemini()
	if want := strings.Join(sim.Tokens(sim.Answer("gemini-3-flash", prompt, 16))[:4], ""); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("gemini exit %d, want the answer of gemini-3-flash (%q):\n%s", code, want, out)
	}

	// the control: the merge as it was (hujson's Format)
	before := "{\n\t// Gemini CLI's settings, written by hand\n\t\"ui\": {\n\t\t\"theme\": \"Dracula\", /* dark */\n\t},\n\t\"security\": {\n\t\t\"auth\": {\n\t\t\t\"selectedType\": \"gemini-api-key\", // was: a Google login\n\t\t},\n\t},\n\t\"general\": {\"maxAttempts\": 1},\n}\n"
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(before), 0o600)
	if out, code := gemini(); code != 52 || !strings.Contains(out, "Expected double-quoted property name") {
		t.Fatalf("a settings.json with trailing commas: exit %d, want 52 (Gemini CLI reads this file):\n%s", code, out)
	}
}
