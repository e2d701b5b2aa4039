package cli

import (
	"os"
	"testing"

	"github.com/spillway/spillway/internal/proc"
)

// TestMain lets this test binary be an agent's supervisor, as spillway is:
// the commands the tests run in process (spillway exec, queue run) start
// their agents under os.Executable().
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == proc.SuperviseArg {
		os.Exit(proc.Supervise(os.Args[2:]))
	}
	// a binary built with -race sleeps a second at a clean exit (GORACE's
	// atexit_sleep_ms): not for every supervisor these tests start
	os.Setenv("GORACE", "atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	os.Exit(m.Run())
}
