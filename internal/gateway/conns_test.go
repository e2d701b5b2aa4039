package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// dialFrom opens a connection from the local address from (127.0.0.0/8:
// Linux routes them all to the loopback interface).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from %s here: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// heldConn starts a request it never finishes: a slow sender.
func heldConn(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	c := dialFrom(t, from, addr)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n", addr)
	return c
}

// served reports whether a whole request on c is answered.
func served(t *testing.T, c net.Conn, addr, path, bearer string) (*http.Response, bool) {
	t.Helper()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // the test's own bound
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", path, addr, bearer)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: no answer and no close within the test's bound", path)
	}
	return resp, err == nil
}

// Beyond loopback the gateway holds at most gateway.max_connections at
// once, and with gateway.max_connections_per_address at most that many
// from one address: slow senders past a cap hold nothing, their
// connections closed at once (spillway_connections_refused_total), while
// another address is served.
func TestConnectionCapsBeyondLoopback(t *testing.T) {
	tm := newTeamWith(t, "0.0.0.0:0", "  max_connections: 2\n")
	addr := strings.TrimPrefix(tm.url, "http://")
	heldConn(t, "127.0.0.1", addr)
	heldConn(t, "127.0.0.1", addr)
	if resp, ok := served(t, dialFrom(t, "127.0.0.1", addr), addr, "/healthz", ""); ok {
		t.Fatalf("a third connection past max_connections: 2 was served: %d", resp.StatusCode)
	}

	tm = newTeamWith(t, "0.0.0.0:0", "  max_connections_per_address: 2\n")
	addr = strings.TrimPrefix(tm.url, "http://")
	heldConn(t, "127.0.0.1", addr)
	heldConn(t, "127.0.0.1", addr)
	if resp, ok := served(t, dialFrom(t, "127.0.0.1", addr), addr, "/healthz", ""); ok {
		t.Fatalf("a third connection from one address was served: %d", resp.StatusCode)
	}
	resp, ok := served(t, dialFrom(t, "127.0.0.2", addr), addr, "/metrics", teamMetrics)
	if !ok || resp.StatusCode != 200 {
		t.Fatalf("another address was not served (%v, %v)", ok, resp)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `spillway_connections_refused_total{why="per_address"} 1`) {
		t.Fatalf("metrics:\n%s", b)
	}

	// on loopback the connections are the user's own: no cap
	tm = newTeamWith(t, "127.0.0.1:0", "  max_connections: 1\n  max_connections_per_address: 1\n")
	addr = strings.TrimPrefix(tm.url, "http://")
	heldConn(t, "127.0.0.1", addr)
	if resp, ok := served(t, dialFrom(t, "127.0.0.1", addr), addr, "/healthz", ""); !ok || resp.StatusCode != 200 {
		t.Fatalf("a second connection on loopback was not served (%v, %v)", ok, resp)
	}
}
