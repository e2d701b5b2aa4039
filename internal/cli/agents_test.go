package cli

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"testing"
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
// printed; the test fails when it could not be run at all.
func runCmd(t *testing.T, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	return 0, out.String(), errb.String()
}
