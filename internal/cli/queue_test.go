package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/pgtest"
	"github.com/spillway/spillway/internal/proc"
	"github.com/spillway/spillway/internal/queue"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/sim"
)

// TestQueueSurvivesSIGKILL runs `spillway queue run` as a process, kills it
// with SIGKILL while tasks run, and restarts it: every task finishes, none is
// lost, no task that had finished runs again, and the agent a command task
// had started (a shell with a job in the background) is killed before its
// task runs again, never beside it.
func TestQueueSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and waits for the dead runner's heartbeat to age (~5 s)")
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		queueSIGKILL(t, "sqlite:"+filepath.Join(t.TempDir(), "q.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		queueSIGKILL(t, postgresSchemaURL(t))
	})
}

// postgresSchemaURL is a URL to the test database whose search_path is a
// schema of this test's own (dropped at the end).
func postgresSchemaURL(t *testing.T) string {
	_, _, url := pgtest.Schema(t)
	return url
}

// slowQueueRig is what the queue's process tests share: the simulator,
// whose gpt-6-luna takes ~0.8 s an answer; the spillway binary
// (spillwayBin); a directory of the test's own with a configuration
// pointing at the simulator; the runners' env.
func slowQueueRig(t *testing.T) (srv *sim.Server, dir, bin, cfg string, env []string) {
	t.Helper()
	srv, _ = sim.New(sim.Options{TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	srv.AddFault(sim.Fault{Model: "gpt-6-luna", Kind: "slow", Count: -1, DelayMS: 50})
	dir = t.TempDir()
	bin = spillwayBin(t)
	cfg = filepath.Join(dir, "spillway.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("providers:\n  openai: { base_url: %q, auth: key, api_key: env:SIM_KEY }\n", hs.URL+"/v1")), 0o600)
	env = append(os.Environ(), "SIM_KEY=sk-sim-test", "HOME="+dir, "SPILLWAY_CONFIG=")
	return srv, dir, bin, cfg, env
}

func queueSIGKILL(t *testing.T, db string) {
	_, dir, bin, cfg, env := slowQueueRig(t) // each answer takes ~0.8 s, so a kill lands mid-task
	// the agent task: its first run puts a long job in the background and
	// waits; a later run notes whether that job still runs beside it
	agent := `D=` + dir + `; if [ -f $D/pid ]; then p=$(cat $D/pid); if [ -d /proc/$p ] && [ "$(awk '{print $3}' /proc/$p/stat)" != Z ]; then touch $D/overlap; fi; echo second run; exit 0; fi; sleep 60 & echo $! > $D/pid; wait`
	if out, err := exec.Command(bin, "queue", "--config", cfg, "--db", db, "add", "--name", "agent", "--priority", "1", "--", "sh", "-c", agent).CombinedOutput(); err != nil {
		t.Fatalf("add: %v %s", err, out)
	}
	for i := 0; i < 6; i++ {
		out, err := exec.Command(bin, "queue", "--config", cfg, "--db", db, "add", "--name", fmt.Sprintf("t%d", i), "--model", "gpt-6-luna", "--prompt", fmt.Sprintf("task %d", i)).CombinedOutput()
		if err != nil {
			t.Fatalf("add: %v %s", err, out)
		}
	}
	run := func(ctx context.Context, extra ...string) (*exec.Cmd, func() string) {
		args := append([]string{"queue", "--config", cfg, "--db", db, "run", "--events", "-", "--concurrency", "2", "--gap-min", "0s", "--gap-max", "0s", "--dead-after", "2s"}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var log strings.Builder
		pr, _ := cmd.StderrPipe()
		cmd.Stdout = nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
			}
		}()
		return cmd, func() string { <-done; return log.String() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	first, _ := run(ctx)
	s, err := queue.Open(ctx, db, dir, queue.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// wait until some have finished and some are running, then SIGKILL
	finishedBefore := map[int64]bool{}
	for {
		list, _ := s.List(ctx)
		running := 0
		for _, in := range list {
			if in.Status == "succeeded" {
				finishedBefore[in.ID] = true
			}
			if in.Status == "running" {
				running++
			}
		}
		_, agentStarted := os.Stat(filepath.Join(dir, "pid"))
		if len(finishedBefore) >= 1 && running >= 1 && agentStarted == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("tasks never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	second, secondLogOf := run(ctx, "--until-empty")
	err = second.Wait()
	secondLog := secondLogOf()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, secondLog)
	}
	list, _ := s.List(ctx)
	if len(list) != 7 {
		t.Fatalf("%d tasks, want 7", len(list))
	}
	if _, err := os.Stat(filepath.Join(dir, "overlap")); err == nil {
		t.Fatalf("the agent task ran again beside its first run's background job:\n%s", secondLog)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pid"))
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); proc.Running(pid) {
		t.Fatalf("the killed runner's agent's background job %d still runs", pid)
	}
	if !strings.Contains(secondLog, "(agent): step 1 (command) was interrupted by a crash of its runner; running it again") {
		t.Fatalf("the second run did not say the agent's step was interrupted:\n%s", secondLog)
	}
	for _, in := range list {
		if in.Status != "succeeded" {
			t.Fatalf("task %d: %s\nsecond run:\n%s", in.ID, in.Status, secondLog)
		}
		if finishedBefore[in.ID] && regexp.MustCompile(fmt.Sprintf(`task %d \(`, in.ID)).MatchString(secondLog) {
			t.Fatalf("task %d had finished before the kill but ran again:\n%s", in.ID, secondLog)
		}
	}
	t.Logf("finished before the kill: %v", finishedBefore)
}

func TestQueueCommands(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "q.db")
	env := map[string]string{"HOME": t.TempDir()}
	q := func(args ...string) (string, string, int) {
		return run(t, env, "", append([]string{"queue", "--db", db}, args...)...)
	}
	out, errOut, code := q("add", "--prompt", "hello", "--model", "gpt-6-luna", "--tag", "batch-1", "--priority", "1")
	if code != 0 || !strings.Contains(out, "added task 1 (prompt): queued") {
		t.Fatalf("add: %d %s %s", code, out, errOut)
	}
	// no key here: queued (the runner may have it), with a word of which
	if want := "spillway: warning: --prompt: gpt-6-luna's provider openai has no key: OPENAI_API_KEY is not set (a prompt task is sent with the provider's api_key whatever its auth; under auth: passthrough only the gateway's callers bring their own); the runner needs it\n"; errOut != want {
		t.Fatalf("add's warning:\n%s\nwant\n%s", errOut, want)
	}
	if _, errOut, code := q("add", "--prompt", "x", "--steps", "../../testdata/queue/steps.yaml"); code != ExitUsage || !strings.Contains(errOut, "exactly one of") {
		t.Fatalf("two kinds: %d %s", code, errOut)
	}
	if _, errOut, code := q("add", "--prompt", "x", "--window", "night"); code != ExitUsage || !strings.Contains(errOut, "HH:MM-HH:MM") {
		t.Fatalf("bad window: %d %s", code, errOut)
	}
	if _, errOut, code := q("add", "--prompt", "x", "--min-tier", "huge"); code != ExitUsage || !strings.Contains(errOut, "allowed: heavy, medium, light") {
		t.Fatalf("bad tier: %d %s", code, errOut)
	}
	q("add", "--name", "cmd", "--", "codex", "exec", "do it")
	out, _, _ = q("ls")
	if !strings.Contains(out, "1   queued  1") || !strings.Contains(out, "cmd") {
		t.Fatalf("ls:\n%s", out)
	}
	out, _, _ = q("ls", "--json")
	if !strings.Contains(out, `"status":"queued"`) || !strings.Contains(out, `"tags":["batch-1"]`) {
		t.Fatalf("ls --json: %s", out)
	}
	if out, _, code := q("cancel", "2"); code != 0 || !strings.Contains(out, "task 2: cancelled") {
		t.Fatalf("cancel: %d %s", code, out)
	}
	if out, _, code := q("retry", "2"); code != 0 || !strings.Contains(out, "task 2: queued") {
		t.Fatalf("retry: %d %s", code, out)
	}
	q("cancel", "2")
	if out, _, code := q("purge"); code != 0 || !strings.Contains(out, "purged 1 finished tasks") {
		t.Fatalf("purge: %d %s", code, out)
	}
	if _, errOut, code := q("show", "2"); code != ExitFail || !strings.Contains(errOut, "no task 2") {
		t.Fatalf("show purged: %d %s", code, errOut)
	}
	if out, _, code := q("show", "1", "--json"); code != 0 || !strings.Contains(out, `"name":"prompt"`) {
		t.Fatalf("show --json: %d %s", code, out)
	}
}

// Whatever would fail whatever the models do is refused at add, in the
// words of config check, and nothing is queued.
func TestQueueAddRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "q.db")
	steps := filepath.Join(dir, "steps.yaml")
	os.WriteFile(steps, []byte("- name: draft\n  prompt: write it\n- name: review\n  prompt: review {{prev}}\n  model: nosuch-model\n"), 0o600)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"an unknown model", []string{"add", "--prompt", "x", "--model", "nosuch-model"}, ExitUsage, `--model: model "nosuch-model" is not defined; defined models: `},
		{"an unknown model in a step file, with its line", []string{"add", "--steps", steps}, ExitFail, steps + `:3: steps[1].model: model "nosuch-model" is not defined`},
		{"an unknown chain", []string{"add", "--prompt", "x", "--chain", "nope"}, ExitUsage, `--chain: chain "nope" is not defined; defined chains: `},
		{"no attempts", []string{"add", "--prompt", "x", "--max-attempts", "0"}, ExitUsage, "--max-attempts 0: give 1 or more (the default is 5"},
		{"negative attempts", []string{"add", "--prompt", "x", "--max-attempts", "-3"}, ExitUsage, "--max-attempts -3: give 1 or more"},
		{"attempts that are not a number", []string{"add", "--prompt", "x", "--max-attempts", "three"}, ExitUsage, `--max-attempts three: give a whole number (see 'spillway queue add --help')`},
		{"a deadline already past", []string{"add", "--prompt", "x", "--deadline", past}, ExitUsage, "is already past"},
		{"a database in a directory that does not exist", []string{"--db", "sqlite:" + filepath.Join(dir, "missing", "q.db"), "ls"}, ExitFail, "the directory " + filepath.Join(dir, "missing") + " does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"queue", "--db", db}, c.args...)
			if c.args[0] == "--db" {
				args = append([]string{"queue"}, c.args...)
			}
			_, errOut, code := run(t, map[string]string{"HOME": dir}, "", args...)
			if code != c.code || !strings.Contains(errOut, c.says) {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, errOut)
			}
		})
	}
	if out, _, _ := run(t, map[string]string{"HOME": dir}, "", "queue", "--db", db, "ls"); strings.Count(out, "\n") != 1 {
		t.Fatalf("something was queued:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("--db made the missing directory")
	}
}

// queue run --until-empty: 0 when everything finished, 1 when a task
// failed, 3 when what is left waits for later; and retry refuses a task
// that succeeded.
func TestQueueUntilEmpty(t *testing.T) {
	t.Parallel()
	srv, _ := sim.New(sim.Options{TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spillway.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("providers:\n  openai: { base_url: %q, auth: key, api_key: env:SIM_KEY }\n", hs.URL+"/v1")), 0o600)
	env := map[string]string{"HOME": dir, "SIM_KEY": "sk-sim-test"}
	// a window that does not hold now
	later := time.Now().Add(2 * time.Hour)
	window := later.Format("15:04") + "-" + later.Add(time.Hour).Format("15:04")
	for _, c := range []struct {
		name  string
		fault *sim.Fault
		add   [][]string
		code  int
		says  string
	}{
		{"everything finished", nil, [][]string{{"--prompt", "a", "--model", "gpt-6-luna"}, {"--prompt", "b", "--model", "gpt-6-luna"}}, 0, ""},
		{"a task failed", &sim.Fault{Model: "gpt-6-luna", Kind: "auth", Count: -1}, [][]string{{"--prompt", "a", "--model", "gpt-6-luna", "--min-tier", "light"}}, ExitFail, "1 task(s) failed"},
		{"a task waits for its window", nil, [][]string{{"--prompt", "a", "--model", "gpt-6-luna"}, {"--prompt", "b", "--model", "gpt-6-luna", "--window", window}}, ExitWaiting, "1 task(s) wait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.ClearFaults("")
			if c.fault != nil {
				srv.AddFault(*c.fault)
			}
			db := "sqlite:" + filepath.Join(t.TempDir(), "q.db")
			q := func(args ...string) (string, string, int) {
				return run(t, env, "", append([]string{"queue", "--config", cfg, "--db", db}, args...)...)
			}
			for _, a := range c.add {
				if _, errOut, code := q(append([]string{"add"}, a...)...); code != 0 {
					t.Fatalf("add: %s", errOut)
				}
			}
			_, errOut, code := q("run", "--until-empty", "--events", "-", "--gap-min", "0s", "--gap-max", "0s")
			if code != c.code || !strings.Contains(errOut, c.says) {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, errOut)
			}
			if c.code == 0 {
				if _, errOut, code := q("retry", "1"); code != ExitFail || !strings.Contains(errOut, "task 1 succeeded; retry runs failed or cancelled tasks") {
					t.Fatalf("retry of a task that succeeded: exit %d\n%s", code, errOut)
				}
			}
		})
	}
}

// queue run --json: a record per task transition, the runner's events, and
// a final summary, checked against a golden file (times normalised).
// Not in parallel: the golden holds the driver's "waited 0s", which a
// test beside it can starve into "waited 12ms".
func TestQueueRunJSONGolden(t *testing.T) {
	srv, _ := sim.New(sim.Options{TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	srv.AddFault(sim.Fault{Model: "gpt-6-luna", Kind: "auth", Count: -1})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spillway.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("providers:\n  openai: { base_url: %q, auth: key, api_key: env:SIM_KEY }\n", hs.URL+"/v1")), 0o600)
	env := map[string]string{"HOME": dir, "SIM_KEY": "sk-sim-test"}
	db := "sqlite:" + filepath.Join(dir, "q.db")
	q := func(args ...string) (string, string, int) {
		return run(t, env, "", append([]string{"queue", "--config", cfg, "--db", db}, args...)...)
	}
	q("add", "--name", "ok", "--prompt", "a", "--model", "gpt-6.1-sol", "--min-tier", "medium")
	q("add", "--name", "no-key", "--prompt", "b", "--model", "gpt-6-luna")
	out, errOut, code := q("run", "--json", "--until-empty", "--concurrency", "1", "--events", "-", "--gap-min", "0s", "--gap-max", "0s")
	if code != ExitFail {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	got := regexp.MustCompile(`"ts":"[^"]+"`).ReplaceAllString(out, `"ts":"…"`)
	golden := "../../testdata/queue/run-json.golden"
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, _ := os.ReadFile(golden)
	if got != string(want) {
		t.Fatalf("queue run --json:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}

// TestQueueThreeRunnersOnePostgres runs three `spillway queue run` on one
// Postgres queue with a global limit of two tasks and a gap of 100 ms per
// model, and SIGKILLs one of them midway: every task finishes exactly once,
// the killed runner's task runs again on another, the simulator never sees
// more than two requests at once (six could run: three runners of two) and
// the starts of all runners together keep the gap.
func TestQueueThreeRunnersOnePostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and waits for the dead runner's heartbeat and slot lease to age (~20 s)")
	}
	db := postgresSchemaURL(t)
	srv, dir, bin, cfg, env := slowQueueRig(t)
	const tasks = 10
	for i := range tasks {
		if out, err := exec.Command(bin, "queue", "--config", cfg, "--db", db, "add", "--name", fmt.Sprintf("t%d", i), "--model", "gpt-6-luna", "--prompt", fmt.Sprintf("task %d", i)).CombinedOutput(); err != nil {
			t.Fatalf("add: %v %s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type runner struct {
		cmd  *exec.Cmd
		mu   sync.Mutex
		out  strings.Builder
		done chan struct{}
	}
	start := func(extra ...string) *runner {
		args := append([]string{"queue", "--config", cfg, "--db", db, "run", "--json", "--events", "-", "--concurrency", "2", "--global-concurrency", "2",
			"--gap-min", "100ms", "--gap-max", "100ms", "--dead-after", "2s"}, extra...)
		r := &runner{cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{})}
		r.cmd.Env = env
		pr, _ := r.cmd.StdoutPipe()
		r.cmd.Stderr = os.Stderr
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(r.done)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				r.mu.Lock()
				r.out.WriteString(sc.Text() + "\n")
				r.mu.Unlock()
			}
		}()
		return r
	}
	text := func(r *runner) string { r.mu.Lock(); defer r.mu.Unlock(); return r.out.String() }
	type taskEvent struct {
		Type   string `json:"type"`
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	events := func(r *runner) []taskEvent {
		var out []taskEvent
		for _, line := range strings.Split(text(r), "\n") {
			var ev taskEvent
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "task" {
				out = append(out, ev)
			}
		}
		return out
	}
	// inFlight are the tasks r started (a global slot taken) and has not
	// ended; done, those it finished
	inFlight := func(r *runner) (running map[int64]bool, done int) {
		running = map[int64]bool{}
		for _, ev := range events(r) {
			running[ev.ID] = ev.Status == "running"
			if ev.Status == "succeeded" {
				done++
			}
		}
		for id, on := range running {
			if !on {
				delete(running, id)
			}
		}
		return running, done
	}
	// the victim has finished a task and has one running: the others
	// start, and it is killed
	victim := start()
	var others []*runner
	var killed map[int64]bool
	for {
		running, done := inFlight(victim)
		if done >= 1 && len(running) >= 1 {
			others = []*runner{start("--until-empty"), start("--until-empty")}
			victim.cmd.Process.Signal(syscall.SIGKILL)
			killed = running
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the first runner never ran a task:\n%s", text(victim))
		}
		time.Sleep(5 * time.Millisecond) // another process works: polling, not timing
	}
	victim.cmd.Wait()
	<-victim.done
	for _, r := range others {
		if err := r.cmd.Wait(); err != nil {
			<-r.done
			t.Fatalf("runner: %v\nvictim:\n%s\nothers:\n%s\n%s", err, text(victim), text(others[0]), text(others[1]))
		}
		<-r.done
	}
	// the tasks the kill interrupted ran again on the others
	for id := range killed {
		again := false
		for _, r := range others {
			for _, ev := range events(r) {
				again = again || ev.ID == id && ev.Status == "succeeded"
			}
		}
		if !again {
			t.Fatalf("task %d, running when its runner was killed, did not finish on another runner", id)
		}
	}
	// every task finished once, on whichever runner
	succeeded := map[int64]int{}
	recorded := regexp.MustCompile(`"task (\d+) \([^)]*\): had finished before its runner stopped`)
	for _, r := range append(others, victim) {
		for _, ev := range events(r) {
			if ev.Status == "succeeded" {
				succeeded[ev.ID]++
			}
		}
		// a task that finished as its runner was killed, before River
		// saved it, is recorded by another runner, not run again
		for _, m := range recorded.FindAllStringSubmatch(text(r), -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			succeeded[id]--
		}
	}
	if len(succeeded) != tasks {
		t.Fatalf("%d tasks succeeded, want %d: %v", len(succeeded), tasks, succeeded)
	}
	for id, n := range succeeded {
		if n != 1 {
			t.Fatalf("task %d succeeded %d times", id, n)
		}
	}
	s, err := queue.Open(ctx, db, dir, queue.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, _ := s.List(ctx)
	for _, in := range list {
		if in.Status != "succeeded" {
			t.Fatalf("task %d: %s", in.ID, in.Status)
		}
	}
	st := srv.Snapshot().Models["gpt-6-luna"]
	if st.PeakConcurrency > 2 {
		t.Fatalf("%d requests at once at the simulator; the global limit is 2", st.PeakConcurrency)
	}
	starts := slices.Sorted(slices.Values(st.Starts))
	for i := 1; i < len(starts); i++ {
		if d := starts[i] - starts[i-1]; d < 80 {
			t.Fatalf("two starts %d ms apart across the runners, want about 100 at least: %v", d, starts)
		}
	}
	if st.Served < tasks {
		t.Fatalf("the simulator served %d, want at least %d", st.Served, tasks)
	}
}

// A command task's --model is where the command starts, {model} replaced
// for any command (as exec does); {model} with nothing to fill it is
// refused at add.
func TestQueueCommandTaskGetsItsModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "q.db")
	env := map[string]string{"HOME": dir}
	q := func(args ...string) (string, string, int) {
		return run(t, env, "", append([]string{"queue", "--db", db}, args...)...)
	}
	if _, errOut, code := q("add", "--", "sh", "-c", "echo {model}"); code != ExitUsage || !strings.Contains(errOut, "the command has {model}, but sh is not an agent spillway knows the model of") {
		t.Fatalf("{model} with no model: exit %d, %s", code, errOut)
	}
	if _, errOut, code := q("add", "--model", "gpt-6-luna", "--", "sh", "-c", "echo ran on $0", "{model}"); code != 0 {
		t.Fatalf("add: exit %d, %s", code, errOut)
	}
	if out, errOut, code := q("run", "--until-empty", "--events", filepath.Join(dir, "e.jsonl")); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, _, _ := q("show", "1"); !strings.Contains(out, "ran on gpt-6-luna") {
		t.Fatalf("show:\n%s", out)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "e.jsonl"))
	if !strings.Contains(string(log), `"model":"gpt-6-luna"`) || !strings.Contains(string(log), `"route":"gpt-6-luna:ok"`) {
		t.Fatalf("event log:\n%s", log)
	}
}

// A step file that does not exist is a named file that fails: exit 1, as
// the table of exit codes (docs/commands.md) says, naming the flag and the file.
func TestQueueAddStepsFileMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	out, errOut, code := run(t, map[string]string{"HOME": dir}, "", "queue", "--db", "sqlite:"+filepath.Join(dir, "q.db"), "add", "--steps", missing)
	if want := "spillway: --steps " + missing + ": no such file or directory\n"; code != ExitFail || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", code, out, errOut, ExitFail, want)
	}
}

// A second `queue run` on a SQLite queue is refused at once (exit 1),
// naming the runner that holds it, before it prints anything else.
func TestQueueRunRefusesASecondRunnerOnSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "q.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := queue.Open(ctx, "sqlite:"+path, dir, queue.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	since := time.Date(2026, 11, 30, 14, 2, 11, 0, time.Local)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(runCtx, queue.RunOptions{Config: config.Default(), Clock: policytest.New(since)})
	}()
	defer func() { stop(); <-done }()
	// the first runner has registered once Alone names it
	for s.Alone(ctx, time.Now()) == nil {
		if ctx.Err() != nil {
			t.Fatal("the first runner never registered")
		}
		time.Sleep(10 * time.Millisecond) // another goroutine registers: polling, not timing
	}
	host, _ := os.Hostname()
	out, errOut, code := run(t, map[string]string{"HOME": dir}, "", "queue", "--db", "sqlite:"+path, "run", "--until-empty")
	want := fmt.Sprintf("spillway: queue: sqlite %s has a runner already: pid %d on %s, since 2026-11-30 14:02:11; a SQLite queue has one runner: stop that one first, or share a Postgres queue between runners\n", path, os.Getpid(), host)
	if code != ExitFail || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", code, out, errOut, ExitFail, want)
	}
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	if got, want := progressLine(nil), "[------------------------] 0/0 done"; got != want {
		t.Errorf("an empty queue: %q, want %q", got, want)
	}
	list := []queue.Info{{Status: "succeeded"}, {Status: "running"}, {Status: "waiting for the usage limit's reset"}}
	if got, want := progressLine(list), "[########----------------] 1/3 done · 1 succeeded · 1 running · 1 waiting for the usage limit's reset"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
