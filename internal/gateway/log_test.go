package gateway_test

import (
	"bytes"
	"log/slog"
	"sync"
)

// lockedWriter lets the gateway log into a buffer the test reads.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func newTestLogger(b *bytes.Buffer, mu *sync.Mutex) *slog.Logger {
	// JSON, as serve --log-format json writes it: every line must parse
	return slog.New(slog.NewJSONHandler(lockedWriter{mu, b}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
