//go:build unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets this test binary be the supervisor, as spillway is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == SuperviseArg {
		os.Exit(Supervise(os.Args[2:]))
	}
	// a binary built with -race sleeps a second at a clean exit (GORACE's
	// atexit_sleep_ms): not for every supervisor these tests start
	os.Setenv("GORACE", "atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	os.Exit(m.Run())
}

// supervised runs script under the supervisor (this test binary), in a
// process group of its own when group, and returns its exit status.
func supervised(t *testing.T, script string, group bool, meanwhile func(pid int)) int {
	t.Helper()
	self, _ := os.Executable()
	argv := Supervised(self, []string{"/bin/sh", "-c", script})
	cmd := exec.Command(argv[0], argv[1:]...)
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	done, err := Start(cmd, true)
	if err != nil {
		t.Fatal(err)
	}
	if meanwhile != nil {
		meanwhile(cmd.Process.Pid)
	}
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("the supervised command did not end")
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// The supervisor exits as its command did: its code, or 128 + the signal
// that ended it.
func TestSupervisorPassesTheStatusOn(t *testing.T) {
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
	} {
		if got := supervised(t, c.script, true, nil); got != c.want {
			t.Errorf("%s: status %d, want %d", c.script, got, c.want)
		}
	}
}

// On a terminal (no group of its own) the supervisor passes a SIGINT on
// only when asked with InterruptSignal; in a group, SIGINT reaches both.
func TestSupervisorInterrupts(t *testing.T) {
	// the script says it is ready by the file, then waits for SIGINT
	for _, group := range []bool{false, true} {
		ready := t.TempDir() + "/ready"
		script := `trap 'exit 42' INT; touch ` + ready + `; while :; do sleep 0.05; done`
		got := supervised(t, script, group, func(pid int) {
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(ready); err == nil {
					break
				}
			}
			if group {
				syscall.Kill(-pid, syscall.SIGINT)
			} else {
				syscall.Kill(pid, InterruptSignal)
			}
		})
		if got != 42 {
			t.Errorf("group %v: status %d, want the script's 42 on SIGINT", group, got)
		}
	}
}

// Without a command line of its own, the supervisor says so.
func TestSuperviseUsage(t *testing.T) {
	if got := Supervise([]string{"x"}); got != 2 {
		t.Fatalf("status %d", got)
	}
}

// The orphans the supervisor adopts are reaped as they end, not left as
// zombies while the agent runs on.
func TestSupervisorReapsOrphans(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	ready := t.TempDir() + "/ready"
	script := `(sleep 0.01 &); (sleep 0.01 &); sleep 0.2; touch ` + ready + `; sleep 30`
	supervised(t, script, true, func(pid int) {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(ready); err == nil {
				break
			}
		}
		zombies := -1
		for deadline := time.Now().Add(5 * time.Second); zombies != 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			zombies = 0
			for _, p := range processes() {
				if p.ppid == pid && p.state == 'Z' {
					zombies++
				}
			}
		}
		if zombies != 0 {
			t.Errorf("%d zombies under the supervisor", zombies)
		}
		syscall.Kill(-pid, syscall.SIGKILL)
	})
}

// A signal spillway runs with ignored (nohup's SIGHUP) stays ignored for
// the agent.
func TestSupervisorKeepsIgnoredSignals(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	out := t.TempDir() + "/sigign"
	if got := supervised(t, `grep SigIgn /proc/$$/status > `+out, true, nil); got != 0 {
		t.Fatalf("status %d", got)
	}
	b, _ := os.ReadFile(out)
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("SigIgn line %q", b)
	}
	mask, err := strconv.ParseUint(f[1], 16, 64)
	if err != nil || mask&1 == 0 { // SIGHUP is signal 1: bit 0
		t.Fatalf("the agent's ignored signals %q do not hold SIGHUP", f[1])
	}
}
