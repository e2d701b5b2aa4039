package bench

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/signal"
	"runtime"
	"strings"
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

// With Bedrock, a Messages stream goes through the gateway's process to
// the simulator's Bedrock (signed by the gateway's cloud transport with
// the test credentials of its environment, which the simulator checks)
// and to its Messages endpoint, each also direct: every request of the
// four paths answered, and the added times and their ratio in the report
// (their values not checked: wall-clock differences).
func TestOverheadBedrockSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six processes")
	}
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: --procs reads /proc (Linux only)")
	}
	rep, err := Overhead(context.Background(), OverheadOptions{RPS: []int{100}, Duration: 600 * time.Millisecond, Slice: 200 * time.Millisecond,
		Stream: true, Procs: true, Bedrock: true, OpenStreams: 20})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range rep.Paths {
		seen[p.Name] = true
		if p.Errors != 0 || p.Sent < 10 || p.TTFBP50US <= 0 || p.P50US < p.TTFBP50US {
			t.Errorf("%s: %+v", p.Name, p)
		}
	}
	for _, n := range []string{MessagesPath, BedrockPath, DirectBedrock, DirectTranslated} {
		if !seen[n] {
			t.Errorf("no %s path: %v", n, seen)
		}
	}
	if _, ok := rep.BedrockAddedTTFBUS["100"]; !ok {
		t.Errorf("no Bedrock added TTFB: %+v", rep)
	}
	if _, ok := rep.MessagesAddedTTFBUS["100"]; !ok {
		t.Errorf("no Messages added TTFB: %+v", rep)
	}
	m := rep.metrics()
	for _, name := range []string{"bedrock100", "bedrock100_us", "messages100_us"} {
		if _, ok := m[name]; !ok {
			t.Errorf("metric %s not in the report: %v", name, m)
		}
	}
	var out bytes.Buffer
	rep.WriteText(&out)
	if !strings.Contains(out.String(), "Bedrock's event stream") {
		t.Errorf("the text report does not give the Bedrock path's figures:\n%s", out.String())
	}
}

// The Bedrock paths need the gateway's own process (its environment holds
// the AWS test credentials) and streams: asked for without them, the run
// says so before it starts anything.
func TestOverheadBedrockNeedsProcsAndStream(t *testing.T) {
	for _, o := range []OverheadOptions{{Bedrock: true, Stream: true}, {Bedrock: true, Procs: true}} {
		_, err := Overhead(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "--procs and --stream") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
