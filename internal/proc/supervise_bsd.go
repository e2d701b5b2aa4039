//go:build unix && !linux && !darwin

package proc

import (
	"syscall"
	"time"
)

// setParentDeath: no parent-death signal here; watchParent polls.
func setParentDeath(*syscall.SysProcAttr) {}

// parentDeath is never sent here (watchParent watches).
const parentDeath = syscall.SIGUSR2

func watchParent(parent int) <-chan struct{} { return pollParent(parent, 200*time.Millisecond) }

func descendants(pid int) []int { return psDescendants(pid) }
