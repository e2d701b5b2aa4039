//go:build !linux

package bench

import "syscall"

// partAttr: only Linux can tie a child's life to its parent's.
func partAttr() *syscall.SysProcAttr { return nil }
