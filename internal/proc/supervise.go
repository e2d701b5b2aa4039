//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// The supervisor is spillway run again as the parent of an agent, so that
// what the agent starts dies with spillway even when spillway is killed
// with SIGKILL (a crashed queue runner, a killed spillway exec), when
// nothing of spillway's own can run. The kernel's parent-death signal
// reaches only a process's direct child (the agent's node would die, and
// the tools it started would run on), so it goes to the supervisor, which
// is the subreaper of every orphan below it: told that spillway died, it
// kills every process it descends from it, and exits. Linux sends it the
// signal (Pdeathsig, set on the thread that forks it: see Start); on macOS
// it watches its parent with kqueue; elsewhere it polls its parent id.
//
// Written by hand: no library supervises a process tree on a parent's
// death.

// SuperviseArg is the first argument that makes spillway a supervisor:
// spillway __supervise PARENT_PID -- COMMAND [ARG...] (Supervised builds
// it; nobody types it).
const SuperviseArg = "__supervise"

// InterruptSignal, sent to a supervisor, interrupts its agent (SIGINT):
// a supervisor on a terminal shares its group with the agent, and the
// terminal's own Ctrl-C reaches the agent directly, so a SIGINT the
// supervisor gets is not passed on (the agent would get the terminal's
// twice); spillway's own interrupt goes this way, as it went to the
// agent before there was a supervisor.
const InterruptSignal = syscall.SIGUSR1

// Supervised is the command line that runs argv under the supervisor:
// self is spillway's executable. argv[0] should be a path (exec.LookPath's
// answer), as the supervisor resolves a bare name by its own PATH.
func Supervised(self string, argv []string) []string {
	return append([]string{self, SuperviseArg, strconv.Itoa(os.Getpid()), "--"}, argv...)
}

// Start starts cmd, a supervisor (Supervised), with the parent-death
// signal set where the kernel has one; done gets cmd.Wait's error. The
// kernel sends that signal when the thread that forked the child ends, not
// the process, and Go ends threads when it likes: the start and the wait
// run on one goroutine locked to its thread, which so lives as long as the
// child. A cmd that is not supervised (supervised false) is started as
// exec starts it.
func Start(cmd *exec.Cmd, supervised bool) (done <-chan error, err error) {
	if supervised {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		setParentDeath(cmd.SysProcAttr)
	}
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		if supervised {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the child
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return waited, nil
}

// Supervise is the supervisor's life (args: what follows SuperviseArg): it
// runs the command with its own standard streams, environment, directory
// and process group (the parent chose them for it), reaps the orphans it
// adopts, and exits with the command's status (128 + the signal that
// ended it). Once its parent is gone it kills everything below it and
// exits. A signal spillway ran with ignored (nohup's SIGHUP) stays
// ignored for the agent.
func Supervise(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "spillway: "+SuperviseArg+" is spillway's own: PARENT_PID -- COMMAND [ARG...]")
		return 2
	}
	parent, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "spillway: "+SuperviseArg+": the parent's pid is a number")
		return 2
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, parentDeath, InterruptSignal)
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		if !signal.Ignored(s) { // (Notify would un-ignore it, for the agent too)
			signal.Notify(sigs, s)
		}
	}
	if os.Getppid() != parent {
		return 128 + int(syscall.SIGKILL) // the parent died before this began: start nothing
	}
	BecomeSubreaper()
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "spillway: %v\n", err)
		return 127
	}
	// (never cmd.Wait: the agent is reaped with the orphans, below)
	agent := cmd.Process.Pid
	// a group leader shares its group with the agent, where the parent's
	// signals reach both; otherwise (a terminal's group) signals the parent
	// meant for the agent are passed on
	leader := syscall.Getpgrp() == os.Getpid()
	gone := watchParent(parent)
	tick := time.NewTicker(time.Second) // a SIGCHLD merged with another is not missed
	defer tick.Stop()
	for {
		var s os.Signal
		select {
		case <-gone:
			killBelow()
			return 128 + int(syscall.SIGTERM)
		case <-tick.C:
			s = syscall.SIGCHLD
		case s = <-sigs:
		}
		switch {
		case s == syscall.SIGCHLD:
			if status, ok := reap(agent); ok {
				return status
			}
		case os.Getppid() != parent: // the parent-death signal, or another once it is gone
			killBelow()
			return 128 + int(syscall.SIGTERM)
		case s == parentDeath:
		case s == InterruptSignal:
			_ = syscall.Kill(agent, syscall.SIGINT)
		case s == syscall.SIGINT:
			// the agent has it too: from the group, or the terminal
		case !leader:
			_ = syscall.Kill(agent, s.(syscall.Signal))
		}
	}
}

// reap waits for every child that has ended (the orphans this subreaper
// adopted are its children too), and reports the agent's exit status once
// it is among them.
func reap(agent int) (status int, done bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return status, done
		}
		if pid == agent {
			status, done = ws.ExitStatus(), true
			if ws.Signaled() {
				status = 128 + int(ws.Signal())
			}
		}
	}
}

// killBelow kills every process that descends from this one (the agent,
// what it started, and the orphans this subreaper adopted) and reaps its
// children, until none is left (a process may fork while it is killed) or
// two seconds pass.
func killBelow() {
	self := os.Getpid()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		victims := descendants(self)
		for _, p := range victims {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if len(victims) == 0 {
			return
		}
	}
}

// pollParent is a watchParent that asks for the parent's id every
// interval: closed once it is no longer parent.
func pollParent(parent int, interval time.Duration) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		for os.Getppid() == parent {
			time.Sleep(interval)
		}
		close(gone)
	}()
	return gone
}
