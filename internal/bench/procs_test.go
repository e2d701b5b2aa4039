package bench

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestMain lets this test binary serve as `spillway bench part`, which
// Overhead with Procs runs as its child processes (os.Executable).
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "bench" && os.Args[2] == "part" {
		fs := flag.NewFlagSet("part", flag.ExitOnError)
		target := fs.String("target", "", "")
		rate := fs.Float64("token-rate", 0, "")
		off := fs.Bool("pacing-off", false, "")
		fs.Parse(os.Args[4:])
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		if err := Part(ctx, os.Args[3], *target, *rate, *off, "", os.Stdout); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// With Procs the parts run as processes of their own: the proxies' CPU per
// request and their peak RSS with streams open are measured. Not in
// parallel, as the other overhead smokes (TestOverheadSmoke).
func TestOverheadProcsSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six processes")
	}
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: --procs reads /proc (Linux only)")
	}
	rep, err := Overhead(context.Background(), OverheadOptions{RPS: []int{200}, Duration: time.Second, Slice: 250 * time.Millisecond,
		Stream: true, Procs: true, OpenStreams: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Paths {
		if p.Errors != 0 || p.Sent < 30 {
			t.Errorf("%s: %+v", p.Name, p)
		}
		if (p.Name == Bare || p.Name == Spillway) != (p.CPUPerReqUS > 0) {
			t.Errorf("%s: CPU per request %v (only the proxies' processes are measured)", p.Name, p.CPUPerReqUS)
		}
	}
	if !rep.Procs || rep.CPURatio["200"] <= 0 || rep.OpenStreams != 50 || rep.BareRSSMB <= 0 || rep.SpillwayRSSMB <= 0 {
		t.Fatalf("report %+v", rep)
	}
}
