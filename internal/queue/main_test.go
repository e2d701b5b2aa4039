package queue

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain runs more tests at once than there are CPUs unless -parallel
// says how many: the queue's tests wait on real time far more than they
// compute (River's loops read the wall clock, the rig's upstreams and
// ladders are waits), so a CPU's worth of tests at a time leaves it idle.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(4, 2*runtime.GOMAXPROCS(0))))
	}
	os.Exit(m.Run())
}
