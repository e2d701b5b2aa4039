package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	stopped := false
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hi") }),
			Options{Ready: func(a net.Addr) { addr <- a.String() }, OnStop: func() { stopped = true }})
	}()
	resp, err := http.Get("http://" + <-addr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" {
		t.Fatalf("got %q", b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil || !stopped {
			t.Fatalf("err %v, OnStop called %v", err, stopped)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestRunBadAddress(t *testing.T) {
	if err := Run(context.Background(), "256.0.0.1:x", http.NotFoundHandler(), Options{}); err == nil {
		t.Fatal("bad address accepted")
	}
}
