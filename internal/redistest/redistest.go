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
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start runs redis-server on a free port and returns its address, a stop,
// and a start again on the same port; the test's end stops it.
func Start(t testing.TB) (addr string, stop, start func()) {
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
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	dir := t.TempDir()
	var cmd *exec.Cmd
	start = func() {
		cmd = exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		for deadline := time.Now().Add(10 * time.Second); rdb.Ping(context.Background()).Err() != nil; {
			if time.Now().After(deadline) {
				t.Fatal("redis-server did not answer")
			}
			time.Sleep(10 * time.Millisecond) // another process starting: polling, not timing
		}
	}
	stop = func() {
		if cmd != nil {
			cmd.Process.Kill()
			cmd.Wait()
			cmd = nil
		}
	}
	start()
	t.Cleanup(stop)
	return addr, stop, start
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
