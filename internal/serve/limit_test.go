package serve

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// dialFrom connects to addr from the local address from (a 127.0.0.0/8
// address: Linux routes them all to the loopback interface).
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

// closedAtOnce reports a connection the other end closed without a byte.
func closedAtOnce(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // the test's own bound, not the behaviour's
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() || len(b) > 0 {
		t.Fatalf("the connection was not closed at once: %q, %v", b, err)
	}
}

// A limited listener holds at most its caps' connections at once: one
// past a cap is closed as soon as it is accepted (never left waiting in
// the backlog, as netutil.LimitListener leaves it), Accept goes on to the
// next, and a connection closed gives its place back; the caps are read
// anew for each connection.
func TestLimitConnsClosesThosePastTheCaps(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	var lim atomic.Pointer[Limits]
	lim.Store(&Limits{Total: 2})
	refused := make(chan Refusal, 10)
	ln := LimitConns(inner, func() Limits { return *lim.Load() }, func(r Refusal) { refused <- r })
	addr := inner.Addr().String()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()

	dialFrom(t, "127.0.0.1", addr)
	dialFrom(t, "127.0.0.1", addr)
	s1, _ := <-accepted, <-accepted
	third := dialFrom(t, "127.0.0.1", addr)
	if why := <-refused; why != OverTotal {
		t.Fatalf("refused as %q, want %q", why, OverTotal)
	}
	closedAtOnce(t, third)
	s1.Close() // a place given back
	dialFrom(t, "127.0.0.1", addr)
	<-accepted

	// per address: another address keeps its own places
	lim.Store(&Limits{Total: 10, PerAddress: 2})
	fromOne := dialFrom(t, "127.0.0.1", addr) // the third from 127.0.0.1
	if why := <-refused; why != OverPerAddress {
		t.Fatalf("refused as %q, want %q", why, OverPerAddress)
	}
	closedAtOnce(t, fromOne)
	dialFrom(t, "127.0.0.2", addr)
	if c := <-accepted; c.RemoteAddr().(*net.TCPAddr).IP.String() != "127.0.0.2" {
		t.Fatalf("accepted %s", c.RemoteAddr())
	}
	if len(refused) != 0 {
		t.Fatalf("%d more refused", len(refused))
	}
}
