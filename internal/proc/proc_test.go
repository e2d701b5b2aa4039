package proc

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
)

// A process group is killed only when its leader is the process recorded
// (same start time): a recorded start that does not match is a later
// process with the same pid, and is left alone.
func TestKillGroupStarted(t *testing.T) {
	for _, c := range []struct {
		name   string
		offset uint64 // added to the leader's real start time
		killed bool
	}{
		{"the recorded leader", 0, true},
		{"a later process with the same pid", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "60")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			start, err := StartTime(cmd.Process.Pid)
			if err != nil || start == 0 {
				t.Fatalf("start time %d: %v", start, err)
			}
			if got := KillGroupStarted(cmd.Process.Pid, start+c.offset, Session()); got != c.killed {
				t.Fatalf("KillGroupStarted = %v, want %v", got, c.killed)
			}
			if !c.killed {
				if !Running(cmd.Process.Pid) {
					t.Fatal("a process that was not the recorded one was killed")
				}
				return
			}
			if err := cmd.Wait(); err == nil {
				t.Fatal("the group's leader exited on its own")
			}
			if Running(cmd.Process.Pid) {
				t.Fatal("the leader still runs")
			}
		})
	}
}

// A group whose leader is gone is killed only when its members are in the
// recorded session: a group id reused since is someone else's.
func TestKillLeaderlessGroup(t *testing.T) {
	for _, c := range []struct {
		name   string
		sid    int
		killed bool
	}{
		{"the recorded session", Session(), true},
		{"another session", Session() + 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// the leader exits at once, its background job lives on
			cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			var job int
			fmt.Sscan(string(out), &job)
			pgid := cmd.Process.Pid
			defer syscall.Kill(-pgid, syscall.SIGKILL)
			if got := KillGroupStarted(pgid, 12345, c.sid); got != c.killed {
				t.Fatalf("KillGroupStarted = %v, want %v", got, c.killed)
			}
			if !c.killed && !Running(job) {
				t.Fatal("a group of another session was killed")
			}
			// it returns once what it killed has ended: a task run again
			// next must not overlap it
			if c.killed && Running(job) {
				t.Fatal("KillGroupStarted returned while the group's background job still ran")
			}
		})
	}
}
