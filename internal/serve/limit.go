package serve

import (
	"net"
	"sync"
)

// Limits cap a listener's open connections: Total at once, PerAddress
// from one remote IP address. 0 is no cap.
type Limits struct {
	Total      int
	PerAddress int
}

// Refusal says which cap refused a connection.
type Refusal string

// The caps a connection is refused by.
const (
	OverTotal      Refusal = "total"
	OverPerAddress Refusal = "per_address"
)

// LimitConns wraps ln so that it holds at most limits() connections at
// once (read at each connection, so a reload takes effect for the next):
// a connection past a cap is closed as soon as it is accepted, and
// refused is told why, and Accept goes on to the next.
//
// golang.org/x/net/netutil.LimitListener does not fit: at its cap it stops
// accepting, so new connections wait in the kernel's backlog (the
// client's connect succeeds and its request hangs) and a few slow senders
// hold everyone else out for as long as they like. Closed at once, a
// refused client knows it at once and the backlog stays empty.
func LimitConns(ln net.Listener, limits func() Limits, refused func(Refusal)) net.Listener {
	return &limited{Listener: ln, limits: limits, refused: refused, by: map[string]int{}}
}

type limited struct {
	net.Listener
	limits  func() Limits
	refused func(Refusal)

	mu    sync.Mutex
	total int
	by    map[string]int // open connections by remote IP (no entry at 0: bounded by total)
}

// Accept returns the next connection within the caps.
func (l *limited) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		if why := l.take(ip); why != "" {
			c.Close()
			if l.refused != nil {
				l.refused(why)
			}
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.give(ip) }}, nil
	}
}

// take counts a connection from ip in, or says which cap refuses it.
func (l *limited) take(ip string) Refusal {
	lim := l.limits()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case lim.Total > 0 && l.total >= lim.Total:
		return OverTotal
	case lim.PerAddress > 0 && l.by[ip] >= lim.PerAddress:
		return OverPerAddress
	}
	l.total++
	l.by[ip]++
	return ""
}

func (l *limited) give(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.by[ip]--; l.by[ip] <= 0 {
		delete(l.by, ip)
	}
}

// remoteIP is the address a connection came from, without its port.
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// limitedConn gives its place back once, when it is closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// CloseWrite half-closes the connection where it can (net/http does, so
// that a client gets an answer before the connection goes).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
