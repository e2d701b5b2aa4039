package cli

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
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
	// more tests at once than there are CPUs unless -parallel says how
	// many: these tests mostly wait (for the processes they start, the
	// simulator's answers, River's loops), so a CPU's worth of tests at a
	// time leaves it idle
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(8, 4*runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the spillway binary the tests that run it as a process share:
// it is built once, by the first test that asks, into a directory removed
// when the test binary ends. Each test runs it with its own HOME, config
// and data directory; nothing of the binary is written to.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// spillwayBin returns the path of spillway built from this checkout,
// building it on the first call.
func spillwayBin(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "spillway-cli-test-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		root, _ := filepath.Abs("../..")
		bin := filepath.Join(dir, "spillway")
		build := exec.Command("go", "build", "-o", bin, "./cmd/spillway")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}
