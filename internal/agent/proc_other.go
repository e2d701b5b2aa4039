//go:build !linux

package agent

import "syscall"

// becomeSubreaper: only Linux has child subreapers.
func becomeSubreaper() {}

// killTree ends pid's process group (group) or pid (alive) with SIGKILL;
// without /proc, descendants outside the group are not found.
func killTree(pid int, group, alive bool) {
	switch {
	case group:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	case alive:
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// groupAlive reports whether process group pgid still has a member.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// reapGroup waits for the members of process group pgid that are
// spillway's children.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-pgid, &ws, 0, nil); err != nil {
			return
		}
	}
}
