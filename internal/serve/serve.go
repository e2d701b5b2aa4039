// Package serve runs an HTTP server on an address until its context ends:
// listen, tell the caller the bound address, serve, and shut down
// gracefully. The gateway, the simulator and the demo share it.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Options tune Run.
type Options struct {
	// Ready, when set, gets the bound address once listening (useful with
	// port 0).
	Ready func(net.Addr)
	// Server carries settings (timeouts, ErrorLog); its Handler is replaced.
	Server *http.Server
	// OnStop runs when ctx ends, before the graceful shutdown (to release
	// handlers that would otherwise wait).
	OnStop func()
	// Grace bounds the graceful shutdown (default 5 s).
	Grace time.Duration
	// Listener, when set, wraps the listener once it is bound (LimitConns).
	Listener func(net.Listener) net.Listener
}

// Run serves h on addr until ctx ends or serving fails.
func Run(ctx context.Context, addr string, h http.Handler, o Options) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	hs := o.Server
	if hs == nil {
		hs = &http.Server{ReadHeaderTimeout: 15 * time.Second}
	}
	hs.Handler = h
	if o.Listener != nil {
		ln = o.Listener(ln)
	}
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		if o.OnStop != nil {
			o.OnStop()
		}
		grace := o.Grace
		if grace <= 0 {
			grace = 5 * time.Second
		}
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// Background serves h on a free loopback port until ctx ends and returns the
// bound address ("127.0.0.1:PORT"): the demo's and the benches' in-process
// servers.
func Background(ctx context.Context, h http.Handler, o Options) (string, error) {
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	o.Ready = func(a net.Addr) { ready <- a.String() }
	if o.Grace == 0 {
		o.Grace = 2 * time.Second
	}
	go func() { errc <- Run(ctx, "127.0.0.1:0", h, o) }()
	select {
	case addr := <-ready:
		return addr, nil
	case err := <-errc:
		return "", err
	}
}
