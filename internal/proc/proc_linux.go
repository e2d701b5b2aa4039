package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes spillway the reaper of the orphans of what it
// starts: an agent's descendants (node, then its native binary, then the
// tools they run) whose parent exits are reparented to spillway instead of
// init, so that spillway can find and end them. The parent-death signal
// would reach only the direct child.
func BecomeSubreaper() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// KillTree ends with SIGKILL everything an agent started: in a process
// group of its own (group), the whole group; otherwise (a terminal's
// foreground group, which spillway shares) pid while it runs (alive), every
// descendant of it, and the orphans reparented to spillway. It never
// signals spillway itself, and reaps what it killed that was not pid.
func KillTree(pid int, group, alive bool) {
	if group {
		_ = unix.Kill(-pid, unix.SIGKILL)
		return
	}
	self := os.Getpid()
	parents := processParents()
	var victims []int
	for p := range parents {
		if p == self || p == pid {
			continue
		}
		// p descends from pid, or from an orphan spillway adopted (a
		// child of spillway's that is not pid)
		for q, hops := p, 0; q > 1 && q != self && hops < 64; q, hops = parents[q], hops+1 {
			if q == pid || parents[q] == self {
				victims = append(victims, p)
				break
			}
		}
	}
	if alive {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	for _, p := range victims {
		_ = unix.Kill(p, unix.SIGKILL)
		if parents[p] == self {
			_, _ = unix.Wait4(p, nil, 0, nil)
		}
	}
}

// ReapGroup waits for the members of process group pgid that were
// reparented to spillway (their parent died first), once the group was
// killed and its leader reaped.
func ReapGroup(pgid int) {
	for {
		if _, err := unix.Wait4(-pgid, nil, 0, nil); err != nil {
			return // ECHILD: none left
		}
	}
}

// GroupAlive reports whether process group pgid still has a member.
func GroupAlive(pgid int) bool { return unix.Kill(-pgid, 0) == nil }

// processParents maps every process's pid to its parent's, from /proc.
func processParents() map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[pid] = ppid
		}
	}
	return out
}

// StartTime is when process pid started, in clock ticks since boot (the
// 22nd field of /proc/PID/stat): with the pid, it names one process, never
// a later one that reuses the pid.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, os.ErrInvalid
	}
	f := strings.Fields(s[i+1:]) // state is f[0]: starttime (field 22) is f[19]
	if len(f) < 20 {
		return 0, os.ErrInvalid
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// KillGroupStarted kills process group pgid with SIGKILL when its leader is
// still the process that started at start, or, the leader gone, while the
// group has members (the kernel does not give out a pid that still names a
// group, so they are the same group's). It reports whether it signalled.
func KillGroupStarted(pgid int, start uint64) bool {
	if st, err := StartTime(pgid); err == nil {
		if st != start {
			return false // the pid is another process's now
		}
		return unix.Kill(-pgid, unix.SIGKILL) == nil
	}
	// the leader exited: its group lives on in its members
	if !GroupAlive(pgid) {
		return false
	}
	return unix.Kill(-pgid, unix.SIGKILL) == nil
}

// Running reports whether process pid runs (a zombie has ended).
func Running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
