//go:build unix

package cloud

import (
	"context"
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// TestAWSLoadWaitersHonourTheirContext: while one request's load of the
// AWS configuration is stuck (its config file a FIFO no one writes), a
// request whose context has ended returns its context's error at once,
// classified as cancelled, not auth; the load then completes.
func TestAWSLoadWaitersHonourTheirContext(t *testing.T) {
	configFile, _ := awsEnv(t, testKeyID, testSecret, "")
	if err := syscall.Mkfifo(configFile, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	rec := &recorder{}
	tr := NewTransport(rec, newClock())
	p := config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com"}
	first := make(chan error, 1)
	go func() {
		resp, err := tr.RoundTrip(bedrockRequest(t, p.BaseURL, p, requestBody))
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	a := tr.awsFor(mark{name: "bedrock-east", p: p})
	for len(a.loading) == 0 { // the first request has taken the load's turn
		runtime.Gosched()
	}

	// release lets the stuck load read an empty config file, as often as
	// it opens it, until stop is closed.
	stop := make(chan struct{})
	released := make(chan struct{})
	release := func() {
		defer close(released)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if f, err := os.OpenFile(configFile, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			runtime.Gosched()
		}
	}
	// Only a deadlock breaker: a waiter stuck behind the load is told by
	// the order of the answers below, not by this time.
	breaker := time.AfterFunc(10*time.Second, func() { go release() })
	defer breaker.Stop()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := bedrockRequest(t, p.BaseURL, p, requestBody)
	_, err := tr.RoundTrip(req.WithContext(With(ctx, "bedrock-east", p)))
	select {
	case <-first:
		t.Fatal("the request with an ended context waited for another's load")
	default:
	}
	if !errors.Is(err, context.Canceled) || classify.Err(err).Class == classify.Auth {
		t.Fatalf("a cancelled waiter: %v, classified %s", err, classify.Err(err).Class)
	}
	if breaker.Stop() {
		go release()
	}
	err = <-first
	close(stop)
	<-released
	if err != nil {
		t.Fatalf("the loading request: %v", err)
	}
	if len(rec.reqs) != 1 {
		t.Fatalf("%d requests sent, want the loading one", len(rec.reqs))
	}
}
