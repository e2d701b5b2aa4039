//go:build unix && !linux

package proc

import (
	"os/exec"
	"strconv"
	"strings"
)

// psDescendants lists the running processes below pid from ps, where
// there is no /proc.
func psDescendants(pid int) []int {
	out, err := exec.Command("ps", "-A", "-o", "pid=,ppid=,stat=").Output()
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || strings.HasPrefix(f[2], "Z") {
			continue
		}
		p, err1 := strconv.Atoi(f[0])
		pp, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			parent[p] = pp
		}
	}
	var below []int
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == pid {
				below = append(below, p)
				break
			}
		}
	}
	return below
}
