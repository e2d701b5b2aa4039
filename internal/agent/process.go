package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/spillway/spillway/internal/proc"
)

// runOut is what one run of the agent left.
type runOut struct {
	code        int
	interrupted bool
	startErr    error
	stdout      *tail
	stderr      *tail
}

// killGrace is how long an interrupted agent has to exit on its own.
const killGrace = 5 * time.Second

// runOnce runs args with output passed through live and kept for judging.
// Ctrl-C (ctx) sends the child SIGINT, then kills it and everything it
// started once it exits or 5 s later.
func runOnce(ctx context.Context, o Options, args []string) runOut {
	out := runOut{stdout: newTail(1 << 20), stderr: newTail(1 << 20)}
	args, supervised, err := supervise(o, args)
	if err != nil {
		out.startErr = err
		return out
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = o.Stdin
	cmd.Stdout = io.MultiWriter(o.Stdout, out.stdout)
	cmd.Stderr = io.MultiWriter(o.Stderr, out.stderr)
	cmd.Env = o.Env
	cmd.Dir = o.Dir
	// A child that leaves its output pipes open (a server it started in the
	// background) must not keep exec waiting.
	cmd.WaitDelay = 5 * time.Second
	// In a pipeline or CI the agent gets a process group of its own, so that
	// Ctrl-C reaches every process it started. On a terminal it stays in the
	// foreground group: an interactive agent must be able to read the TTY,
	// and the terminal's Ctrl-C reaches it directly.
	group := !isTerminal(o.Stdin)
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if !group {
		// on a terminal the agent shares spillway's group: its orphans
		// are found as spillway's adopted children
		proc.BecomeSubreaper()
	}
	done, err := proc.Start(cmd, supervised)
	if err != nil {
		out.startErr = err
		return out
	}
	pid := cmd.Process.Pid
	start, _ := proc.StartTime(pid)
	if o.OnStart != nil {
		o.OnStart(pid)
	}
	target, sig := pid, syscall.SIGINT
	switch {
	case group:
		target = -target
	case supervised:
		// a supervisor on a terminal passes SIGINT on only when asked
		// (the terminal's Ctrl-C reached the agent already)
		sig = proc.InterruptSignal
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		out.interrupted = true
		err = interrupt(done, target, sig, pid, group, start)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		out.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.code = 128 + int(ws.Signal())
		}
	default:
		out.code = 1
	}
	return out
}

// supervise is args as runOnce starts them: under spillway's supervisor
// (Options.Supervisor) when there is one, the agent resolved by spillway's
// PATH, as exec.Command resolves it, so that one that cannot start says so
// (err) as before; args as they are, not supervised, otherwise.
func supervise(o Options, args []string) (_ []string, supervised bool, err error) {
	supervised = o.Supervisor != ""
	if _, err := os.Stat(o.Supervisor); supervised && err != nil {
		supervised = false // spillway's binary was replaced or removed since it started: the agent runs as its child
	}
	if !supervised {
		return args, false, nil
	}
	// (a path with a slash is the working directory's)
	agentPath := args[0]
	lookup := agentPath
	if strings.Contains(lookup, "/") && !filepath.IsAbs(lookup) && o.Dir != "" {
		lookup = filepath.Join(o.Dir, lookup)
	}
	lp, err := exec.LookPath(lookup)
	if err != nil {
		return nil, true, err
	}
	if !strings.Contains(agentPath, "/") {
		agentPath = lp
	}
	return proc.Supervised(o.Supervisor, append([]string{agentPath}, args[1:]...)), true, nil
}

// interrupt ends an agent run that Ctrl-C or SIGTERM interrupted: sig to
// target (the agent, or its group), then SIGKILL to it and everything it
// started once it exits or killGrace passes (a shell's background jobs
// ignore SIGINT and would outlive it). It returns the run's end (done's).
func interrupt(done <-chan error, target int, sig syscall.Signal, pid int, group bool, start uint64) (err error) {
	_ = syscall.Kill(target, sig)
	tick := time.NewTicker(50 * time.Millisecond)
	grace := time.After(killGrace)
wait:
	for {
		select {
		case err = <-done:
			proc.KillTree(pid, group, false, start)
			break wait
		case <-tick.C:
			if !proc.Running(pid) {
				// the agent is gone, and what it left holds its output
				// open: that goes now, not at the grace period's end
				proc.KillTree(pid, group, false, start)
			}
		case <-grace:
			proc.KillTree(pid, group, true, start)
			err = <-done
			break wait
		}
	}
	tick.Stop()
	if group {
		proc.ReapGroup(pid)
		proc.WaitGroupGone(pid, 2*time.Second)
	}
	return err
}

// isTerminal reports a terminal (not /dev/null, which is a character
// device too).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
