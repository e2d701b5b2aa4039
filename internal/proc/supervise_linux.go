package proc

import (
	"syscall"
	"time"
)

// parentDeath is the signal the kernel sends the supervisor when the
// thread that forked it ends (Start keeps that thread for the child's
// life): one of its own, which nothing else sends.
const parentDeath = syscall.SIGUSR2

func setParentDeath(attr *syscall.SysProcAttr) { attr.Pdeathsig = parentDeath }

// watchParent is closed once the supervisor's parent is gone: the
// parent-death signal says it first; the poll is for a signal missed.
func watchParent(parent int) <-chan struct{} { return pollParent(parent, time.Second) }

// descendants are the running processes below pid, orphans it adopted as
// their subreaper included.
func descendants(pid int) []int {
	procs := processes()
	var out []int
	for p, info := range procs {
		if p == pid || info.state == 'Z' {
			continue
		}
		for q, hops := info.ppid, 0; q > 1 && hops < 64; q, hops = procs[q].ppid, hops+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
