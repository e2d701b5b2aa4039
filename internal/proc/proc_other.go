//go:build !linux

package proc

import "syscall"

// BecomeSubreaper: only Linux has child subreapers.
func BecomeSubreaper() {}

// KillTree ends pid's process group (group) or pid (alive) with SIGKILL;
// without /proc, descendants outside the group are not found.
func KillTree(pid int, group, alive bool) {
	switch {
	case group:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	case alive:
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// GroupAlive reports whether process group pgid still has a member.
func GroupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

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

// KillGroupStarted kills process group pgid with SIGKILL (without /proc the
// start cannot be checked).
func KillGroupStarted(pgid int, start uint64) bool {
	return syscall.Kill(-pgid, syscall.SIGKILL) == nil
}

// Running reports whether process pid exists.
func Running(pid int) bool { return syscall.Kill(pid, 0) == nil }
