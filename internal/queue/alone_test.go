package queue

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spillway/spillway/policy/policytest"
)

// A SQLite queue has one runner: a second is refused at once, naming the
// first (its pid, host and since when), and leaves no record of its own;
// a runner that died (its process gone, or its pid now another process's)
// holds nothing.
func TestASecondRunnerOnSQLiteIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "q.db")
	open := func() *Store {
		s, err := Open(context.Background(), db, "", OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	s := open()
	r := newRunRig(t, "calm")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runners := func() int {
		var n int
		if err := s.be.queryRow(ctx, `SELECT COUNT(*) FROM spillway_runner`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	since := time.Date(2026, 11, 30, 14, 2, 11, 0, time.Local)
	// a runner of a process that is gone, one whose pid is a live
	// process started after it registered, and one of an older spillway
	// (no start time) whose pid lives but whose heartbeat stopped an hour
	// ago: none holds the file
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for i, pid := range []int{gone.Process.Pid, os.Getpid(), os.Getpid()} {
		dead := newRunner(30 * time.Second)
		if err := s.register(ctx, dead, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.be.exec(ctx, `UPDATE spillway_runner SET pid = ?, pstart = pstart + ? WHERE id = ?`, pid, i, dead.id); err != nil {
			t.Fatal(err)
		}
		if i == 2 { // (its heartbeat an hour before the first runner's clock reads)
			if err := s.be.exec(ctx, `UPDATE spillway_runner SET pstart = 0, beat = ? WHERE id = ?`, since.Add(-time.Hour).UnixNano(), dead.id); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := r.opts(1)
	first.UntilEmpty, first.Clock = false, policytest.New(since)
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- s.Run(runCtx, first) }()
	for runners() < 4 {
		select {
		case err := <-done:
			t.Fatalf("the first runner stopped before it ran: %v", err)
		default:
		}
		if ctx.Err() != nil {
			t.Fatal("the first runner never registered")
		}
		time.Sleep(10 * time.Millisecond) // another goroutine registers: polling, not timing
	}
	host, _ := os.Hostname()
	want := fmt.Sprintf("queue: sqlite %s has a runner already: pid %d on %s, since 2026-11-30 14:02:11; a SQLite queue has one runner: stop that one first, or share a Postgres queue between runners",
		filepath.Join(dir, "q.db"), os.Getpid(), host)
	second := open()
	if err := second.Alone(ctx, time.Now()); err == nil || err.Error() != want {
		t.Fatalf("Alone: %v\nwant: %s", err, want)
	}
	if err := second.Run(ctx, r.opts(1)); err == nil || err.Error() != want {
		t.Fatalf("the second runner: %v\nwant: %s", err, want)
	}
	if n := runners(); n != 4 {
		t.Fatalf("%d runners on record after the refusal, want the first and the three dead", n)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("the first runner: %v", err)
	}
	if err := second.Alone(ctx, time.Now()); err != nil {
		t.Fatalf("once the first runner stopped: %v", err)
	}
}

// A queue database made before spillway_runner had its started and pstart
// columns gains them when it is opened.
func TestRunnerTableGainsItsColumns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE TABLE spillway_runner (id TEXT PRIMARY KEY, host TEXT NOT NULL, boot TEXT NOT NULL, sid INTEGER NOT NULL, pid INTEGER NOT NULL, beat BIGINT NOT NULL, dead_after BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := Open(context.Background(), "sqlite:"+path, "", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.register(context.Background(), newRunner(time.Minute), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Alone(context.Background(), time.Now()); err == nil {
		t.Fatal("a runner registered in the migrated table was not seen")
	}
}
