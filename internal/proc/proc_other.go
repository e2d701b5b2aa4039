//go:build !linux

package proc

import (
	"syscall"
	"time"
)

// BecomeSubreaper: only Linux has child subreapers.
func BecomeSubreaper() {}

// KillTree ends pid's process group (group) or pid (alive) with SIGKILL;
// without /proc, descendants outside the group are not found.
func KillTree(pid int, group, alive bool, start uint64) {
	switch {
	case group:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	case alive:
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// ReapGroup waits for the members of process group pgid that are
// spillway's children.
func ReapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-pgid, &ws, 0, nil); err != nil {
			return
		}
	}
}

// StartTime: without /proc, unknown.
func StartTime(pid int) (uint64, error) { return 0, syscall.ENOSYS }

// KillGroupStarted: without /proc the group cannot be told from a later
// one with the same id, so it is left alone.
func KillGroupStarted(pgid int, start uint64, sid int) bool { return false }

// BootID: unknown without /proc.
func BootID() string { return "" }

// Session is spillway's session id.
func Session() int {
	sid, _ := syscall.Getsid(0)
	return sid
}

// Running reports whether process pid exists.
func Running(pid int) bool { return syscall.Kill(pid, 0) == nil }

// WaitGroupGone waits (up to limit) until process group pgid has no member.
func WaitGroupGone(pgid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && syscall.Kill(-pgid, 0) == nil {
		time.Sleep(5 * time.Millisecond)
	}
}
