package proc

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setParentDeath: macOS has no parent-death signal; watchParent watches.
func setParentDeath(*syscall.SysProcAttr) {}

// parentDeath is never sent here (watchParent watches).
const parentDeath = syscall.SIGUSR2

// watchParent is closed once the parent exits, told by kqueue (a poll of
// the parent's id when kqueue cannot watch it).
func watchParent(parent int) <-chan struct{} {
	kq, err := unix.Kqueue()
	if err != nil {
		return pollParent(parent, 200*time.Millisecond)
	}
	ev := []unix.Kevent_t{{Ident: uint64(parent), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}}
	if _, err := unix.Kevent(kq, ev, nil, nil); err != nil || os.Getppid() != parent {
		unix.Close(kq)
		return pollParent(parent, 200*time.Millisecond)
	}
	gone := make(chan struct{})
	go func() {
		defer unix.Close(kq)
		out := make([]unix.Kevent_t, 1)
		for {
			n, err := unix.Kevent(kq, nil, out, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n > 0 {
				break
			}
		}
		close(gone)
	}()
	return gone
}

// descendants are the running processes below pid (ps's account: macOS
// has no /proc, and no subreaper to keep orphans below it).
func descendants(pid int) []int { return psDescendants(pid) }
