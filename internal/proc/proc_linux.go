package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
// descendant of it, and the orphans reparented to spillway (its subreaper)
// that started since the agent did (start, StartTime's; never a child of
// spillway's from before). It never signals spillway itself, and reaps
// what it killed that spillway adopted.
func KillTree(pid int, group, alive bool, start uint64) {
	if group {
		_ = unix.Kill(-pid, unix.SIGKILL)
		return
	}
	self := os.Getpid()
	procs := processes()
	adopted := func(q int) bool {
		if q == pid || procs[q].ppid != self {
			return false
		}
		st, err := StartTime(q)
		return err == nil && st >= start
	}
	var victims []int
	for p := range procs {
		if p == self || p == pid {
			continue
		}
		// p descends from pid, or from an orphan spillway adopted
		for q, hops := p, 0; q > 1 && q != self && hops < 64; q, hops = procs[q].ppid, hops+1 {
			if q == pid || adopted(q) {
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
		if procs[p].ppid == self {
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

// process is what /proc/PID/stat says of one process.
type process struct {
	ppid, pgrp, session int
	state               byte // R, S, D, Z…
}

// processes maps every process's pid to its parent, group and session,
// from /proc.
func processes() map[int]process {
	out := map[int]process{}
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
		// pid (comm) state ppid pgrp session …: comm may hold spaces and
		// parentheses
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 4 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		sid, _ := strconv.Atoi(f[3])
		out[pid] = process{ppid, pgrp, sid, f[0][0]}
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

// WaitGroupGone waits (up to limit) until no member of process group pgid
// runs: a SIGKILL takes effect a moment after it is sent, and a member
// spillway did not adopt is reaped by another parent.
func WaitGroupGone(pgid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		alive := false
		for pid, p := range processes() {
			if p.pgrp == pgid && Running(pid) {
				alive = true
				break
			}
		}
		if !alive {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BootID names this boot of the machine: a pid or group id recorded under
// another names nothing now.
func BootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// Session is spillway's session id.
func Session() int {
	sid, _ := unix.Getsid(0)
	return sid
}

// KillGroupStarted kills process group pgid with SIGKILL when it is still
// the group recorded: its leader the process that started at start, or,
// the leader gone, every member in session sid (the recording runner's;
// a group id reused since would be someone else's). It reports whether it
// signalled.
//
// It returns once the group's processes have ended (or after groupGoneWait):
// SIGKILL is delivered asynchronously, and what the caller does next (run
// the task again) must not overlap what it killed; on a busy machine the
// killed processes were seen running milliseconds after the signal.
func KillGroupStarted(pgid int, start uint64, sid int) bool {
	if st, err := StartTime(pgid); err == nil {
		if st != start {
			return false // the pid is another process's now
		}
		return killGroup(pgid)
	}
	members := 0
	for _, p := range processes() {
		if p.pgrp != pgid {
			continue
		}
		if p.session != sid {
			return false
		}
		members++
	}
	return members > 0 && killGroup(pgid)
}

// groupGoneWait bounds how long killGroup waits for the processes it
// signalled to end (one in uninterruptible sleep can take its time).
const groupGoneWait = 5 * time.Second

// killGroup sends SIGKILL to process group pgid and waits, polling /proc
// (the processes are not spillway's children: there is nothing to wait
// on), until none of it runs.
func killGroup(pgid int) bool {
	if unix.Kill(-pgid, unix.SIGKILL) != nil {
		return false
	}
	for deadline := time.Now().Add(groupGoneWait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if !groupRuns(pgid) {
			break
		}
	}
	return true
}

// groupRuns reports whether a process of group pgid runs (a zombie has
// ended).
func groupRuns(pgid int) bool {
	for _, p := range processes() {
		if p.pgrp == pgid && p.state != 'Z' {
			return true
		}
	}
	return false
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
