package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/proc"
)

// stepScript is a command step that starts a job in the background, one
// that leaves its session and its parent (a daemon: an orphan), and then
// waits; each writes its pid to dir.
func stepScript(dir string) string {
	return `D=` + dir + `; sleep 300 & echo $! > $D/bg; setsid sh -c 'sleep 300 & echo $! > '$D'/daemon'; echo $$ > $D/sh; wait`
}

// stepPids waits (in real time) until the step has written its three pids.
func stepPids(t *testing.T, dir string) map[string]int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	pids := map[string]int{}
	for len(pids) < 3 {
		for _, name := range []string{"bg", "daemon", "sh"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
				pids[name] = n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the step never started: %v", pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pids
}

// killedLeavesNothing SIGKILLs cmd once its step runs, and checks that
// every process of the step goes (the supervisor kills them at once; 20 s
// is only how long the test waits for that before it calls them left).
func killedLeavesNothing(t *testing.T, cmd *exec.Cmd, dir string, out *bytes.Buffer) {
	t.Helper()
	pids := stepPids(t, dir)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	alive := func() []string {
		var left []string
		for name, pid := range pids {
			if proc.Running(pid) {
				left = append(left, name)
			}
		}
		return left
	}
	for deadline := time.Now().Add(20 * time.Second); len(alive()) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // other processes dying: polling, not timing
	}
	for name, pid := range pids {
		if proc.Running(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("after spillway was killed, the step's %s (pid %d) still runs\n%s", name, pid, out)
		}
	}
}

// A SIGKILLed spillway exec takes its agent and everything the agent
// started with it: the agent runs under spillway's supervisor.
func TestKilledExecLeavesNoProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	bin, dir := spillwayBin(t), t.TempDir()
	var out bytes.Buffer
	cmd := exec.Command(bin, "exec", "--events", "-", "--", "sh", "-c", stepScript(dir))
	cmd.Env = append(os.Environ(), "HOME="+dir, "SPILLWAY_CONFIG=")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killedLeavesNothing(t, cmd, dir, &out)
}

// A SIGKILLed queue runner with no other runner to rescue its tasks takes
// its command step's processes with it.
func TestKilledRunnerLeavesNoProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	bin, dir := spillwayBin(t), t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "q.db")
	env := append(os.Environ(), "HOME="+dir, "SPILLWAY_CONFIG=")
	add := exec.Command(bin, "queue", "--db", db, "add", "--name", "step", "--", "sh", "-c", stepScript(dir))
	add.Env = env
	if b, err := add.CombinedOutput(); err != nil {
		t.Fatalf("queue add: %v\n%s", err, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "queue", "--db", db, "run", "--events", "-")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killedLeavesNothing(t, cmd, dir, &out)
}
