package cli

import (
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
