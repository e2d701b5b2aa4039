// Command spillway keeps coding agents and LLM scripts working when a model is
// at capacity. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // zone names (report --tz, a learned quiet window) on machines without tzdata

	"github.com/spillway/spillway/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
