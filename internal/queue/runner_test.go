package queue

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/proc"
	"github.com/spillway/spillway/sim"
)

// The rescue runs on the time it is given (the runner's injected clock),
// and judges a runner by how long its beat has not moved on the watcher's
// own clock: one silent past its limit is dead, its step's process group (a
// shell and the job it put in the background) is killed and its task
// handed back, saying why; a live runner's long task, and a runner whose
// own limit is longer, are left alone.
func TestDeadRunnersTasksAreHandedBack(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := context.Background()
			t0 := time.Unix(1_800_000_000, 0)
			mk := func(id string, deadAfter time.Duration) runner {
				r := newRunner(deadAfter)
				r.id = id + "-" + name
				return r
			}
			dead, live, patient, self := mk("dead", 30*time.Second), mk("live", 30*time.Second), mk("patient", 5*time.Minute), newRunner(30*time.Second)
			for _, r := range []runner{dead, live, patient} {
				if err := s.register(ctx, r, t0); err != nil {
					t.Fatal(err)
				}
			}
			var ids []int64
			for _, r := range []runner{dead, live, patient} {
				id, err := s.Add(ctx, Task{Name: "of " + r.id, Steps: []Step{{Name: "one", Prompt: "x"}, {Name: "two", Command: []string{"agent"}}}}, t0)
				if err != nil {
					t.Fatal(err)
				}
				// as River marks a task it works
				if err := s.be.exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1 WHERE id = ?`, id); err != nil {
					t.Fatal(err)
				}
				if err := s.stepStarted(ctx, r, id, 1, 1); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			// the dead runner's step 2 runs an agent in a process group of
			// its own that put a job in the background
			agent := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
			agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, _ := agent.StdoutPipe()
			if err := agent.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			grandchild, _ := strconv.Atoi(strings.TrimSpace(line))
			defer syscall.Kill(-agent.Process.Pid, syscall.SIGKILL)
			if err := s.stepProcess(ctx, ids[0], agent.Process.Pid); err != nil {
				t.Fatal(err)
			}

			seen := watcher{}
			for _, at := range []time.Duration{0, 20 * time.Second} { // nobody is dead yet
				if got, err := s.rescue(ctx, self, seen, t0.Add(at)); err != nil || len(got) != 0 {
					t.Fatalf("rescued %v (%v) at %s", got, err, at)
				}
			}
			if _, err := s.beat(ctx, live, t0.Add(25*time.Second)); err != nil {
				t.Fatal(err)
			}
			got, err := s.rescue(ctx, self, seen, t0.Add(31*time.Second))
			if err != nil || !slices.Equal(got, ids[:1]) {
				t.Fatalf("rescued %v (%v), want %v", got, err, ids[:1])
			}
			// the agent was killed, not left to end on its own
			err = agent.Wait()
			if ws, ok := agent.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the dead runner's agent ended with %v, not SIGKILL", err)
			}
			// SIGKILL is sent to the whole group; a process takes a moment
			// to die after it (under load, more than one): wait for it, with
			// a deadline far beyond that
			for deadline := time.Now().Add(10 * time.Second); proc.Running(grandchild) && time.Now().Before(deadline); {
				runtime.Gosched()
			}
			if proc.Running(grandchild) {
				t.Fatalf("the dead runner's agent's background job %d still runs 10 s after the rescue", grandchild)
			}
			in, _ := s.Get(ctx, ids[0])
			if in.Status != "queued" || len(in.Errors) == 0 || !strings.Contains(in.Errors[len(in.Errors)-1], "its runner stopped answering") {
				t.Fatalf("the dead runner's task: %+v", in)
			}
			if step, why, ok := s.interrupted(ctx, ids[0]); !ok || step != 1 || why != "a crash of its runner" {
				t.Fatalf("interrupted: %d %q %v", step, why, ok)
			}
			for _, id := range ids[1:] {
				if in, _ := s.Get(ctx, id); in.Status != "running" {
					t.Fatalf("a live runner's task was taken: %+v", in)
				}
			}
			// a runner that learns it was taken for dead says so
			if alive, err := s.beat(ctx, dead, t0.Add(40*time.Second)); err != nil || alive {
				t.Fatalf("the removed runner's beat: %v %v", alive, err)
			}
			// nothing is handed back twice
			if got, _ := s.rescue(ctx, self, seen, t0.Add(40*time.Second)); len(got) != 0 {
				t.Fatalf("rescued again: %v", got)
			}
		})
	}
}

// Ctrl-C (the runner's context) stops a task's agent and hands the task
// back as it was: no attempt used, no error; the next run takes the step up
// again and says why.
func TestStoppingRunnerHandsTasksBack(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			dir := t.TempDir()
			script := `if [ -f ` + dir + `/ran ]; then echo second; exit 0; fi; touch ` + dir + `/ran; echo $$ > ` + dir + `/pid; exec sleep 60`
			if err := syscall.Mkfifo(dir+"/pid", 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			id, err := s.Add(ctx, Task{Name: "agent", Steps: []Step{{Name: "work", Command: []string{"sh", "-c", script}}}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			o := r.opts(1)
			o.UntilEmpty = false
			done := make(chan error, 1)
			go func() { done <- s.Run(runCtx, o) }()
			got := make(chan string, 1)
			go func() { // the agent writes its pid into the pipe once it runs
				b, _ := os.ReadFile(dir + "/pid")
				got <- strings.TrimSpace(string(b))
			}()
			var pid string
			select {
			case pid = <-got:
			case <-ctx.Done():
				t.Fatal("the agent never ran")
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if p, _ := strconv.Atoi(pid); proc.Running(p) {
				t.Fatalf("the agent %s outlived its runner", pid)
			}
			in, _ := s.Get(ctx, id)
			if in.Status != "queued" || in.Attempt != 0 || len(in.Errors) != 0 {
				t.Fatalf("after Ctrl-C: %+v", in)
			}
			if err := s.Run(ctx, r.opts(1)); err != nil {
				t.Fatal(err)
			}
			if in, _ := s.Get(ctx, id); in.Status != "succeeded" || in.Attempt != 1 {
				t.Fatalf("after the second run: %+v", in)
			}
			if log := r.log(); !strings.Contains(log, "step 1 (work) was interrupted by the runner stopping; running it again") {
				t.Fatalf("log:\n%s", log)
			}
		})
	}
}

// A task waiting out a long rung checks for room every CheckEvery and runs
// at the first check that finds it, within the rung (an hour here, which
// the test could never wait out).
func TestWaitingTasksCheckDuringARung(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			r := newRunRig(t, "calm")
			r.sim.AddFault(sim.Fault{Model: "gpt-6-luna", Kind: "capacity", Count: 3})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			id, err := s.Add(ctx, Task{Name: "ask", Steps: []Step{{Name: "ask", Model: "gpt-6-luna", Prompt: "hi"}}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			o := r.opts(1)
			o.Ladder, o.CheckEvery = []time.Duration{time.Hour}, 200*time.Millisecond
			if err := s.Run(ctx, o); err != nil {
				t.Fatal(err)
			}
			if in, _ := s.Get(ctx, id); in.Status != "succeeded" || in.Attempt != 1 {
				t.Fatalf("%+v\n%s", in, r.log())
			}
			if n := strings.Count(r.log(), "waiting for capacity (next check"); n < 2 {
				t.Fatalf("%d checks:\n%s", n, r.log())
			}
		})
	}
}
