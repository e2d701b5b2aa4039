package bench

import "syscall"

// partAttr makes a part get SIGTERM when the bench process dies.
func partAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
