// Command spillway keeps coding agents and LLM scripts working when a model is
// at capacity. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spillway/spillway/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
