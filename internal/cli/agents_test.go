package cli

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// undoRe is the undo line every agent's setup prints after it wrote a
// file ("undo: cp BACKUP FILE", "undo: rm FILE").
var undoRe = regexp.MustCompile(`(?m)^undo: (.+)$`)

// undoCommand is the command of the undo line setup printed in out; the
// test fails when there is none.
func undoCommand(t *testing.T, out string) string {
	t.Helper()
	m := undoRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("setup printed no undo line:\n%s", out)
	}
	return m[1]
}

// runCmd runs cmd to its end and returns its exit status and what it
// printed; the test fails when it could not be run at all. Whatever cmd
// started is killed with it.
func runCmd(t *testing.T, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// its own process group, killed whole when the test's context ends
	// and after it exits: the agent exec started (node and its children)
	// never outlives the test
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	return 0, out.String(), errb.String()
}
