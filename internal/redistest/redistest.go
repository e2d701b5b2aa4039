// Package redistest runs a redis-server of a test's own, for the tests of
// fleet mode: never the machine's shared one. Without redis-server the test
// is skipped, by name (it fails when CI=true).
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start runs redis-server on a free port and returns its address, a stop,
// and a start again on the same port; the test's end stops it.
func Start(t testing.TB) (addr string, stop, start func()) {
	t.Helper()
	s := Run(t)
	return s.Addr, s.Stop, s.Start
}

// Server is a redis-server of the test's own.
type Server struct {
	Addr string
	t    testing.TB
	bin  string
	port int
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// Run starts redis-server on a free port until the test ends.
func Run(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not found (CI=true, so this is a failure)")
		}
		t.Skip("SKIPPED: test with Redis (redis-server not found)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), t: t, bin: bin, port: port, dir: t.TempDir()}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start runs the server again on its port (after Stop), and waits until
// it answers.
func (s *Server) Start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, "--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir)
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			s.t.Fatal("redis-server did not answer")
		}
		time.Sleep(10 * time.Millisecond) // another process starting: polling, not timing
	}
}

// Stop kills the server (a crash: nothing is saved).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Pause stops the server's process (SIGSTOP) without closing anything:
// connections stay open, and what clients send waits in the sockets until
// Resume. The test's end resumes it.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
	s.t.Cleanup(s.Resume)
}

// Resume lets a paused server run again (SIGCONT): it then carries out
// what was sent to it meanwhile.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Errorf("redis-server: %s: %v", sig, err)
	}
}

// Contents is everything the server at addr holds, keys and values, as
// text: what a test searches for what must never be stored.
func Contents(t testing.TB, addr string) string {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = ", k)
		switch typ, _ := rdb.Type(ctx, k).Result(); typ {
		case "string":
			fmt.Fprint(&b, rdb.Get(ctx, k).Val())
		case "hash":
			fmt.Fprint(&b, rdb.HGetAll(ctx, k).Val())
		case "list":
			fmt.Fprint(&b, rdb.LRange(ctx, k, 0, -1).Val())
		case "set":
			fmt.Fprint(&b, rdb.SMembers(ctx, k).Val())
		case "zset":
			fmt.Fprint(&b, rdb.ZRangeWithScores(ctx, k, 0, -1).Val())
		case "stream":
			fmt.Fprint(&b, rdb.XRange(ctx, k, "-", "+").Val())
		default:
			fmt.Fprintf(&b, "(%s)", typ)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Monitor records every command the server at addr is sent from now on
// (redis-cli MONITOR: keys, values and published messages alike); the
// returned function gives what was seen so far, a command a line.
func Monitor(t testing.TB, addr string) func() string {
	t.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found beside redis-server")
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "-h", host, "-p", port, "MONITOR")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "OK" { // it is monitoring
		t.Fatalf("redis-cli MONITOR did not start: %q", sc.Text())
	}
	var mu sync.Mutex
	var seen strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			mu.Lock()
			seen.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); <-done })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return seen.String()
	}
}
