package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/internal/queue"
	"github.com/spillway/spillway/policy"
)

func (a *App) queueCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Durable prompt and agent tasks, worked a few at a time through the policy engine",
		Long: `queue keeps tasks (a prompt, an agent command, or a file of steps) in a database
(SQLite by default, Postgres with --db postgres://…) and works them with a
concurrency limit and jittered gaps between starts. A task whose models are all
at capacity sleeps without using an attempt; a failed step is retried alone and
finished steps never run again, even after the worker is killed.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "sqlite, sqlite:PATH or a postgres:// URL (default: queue.db of the configuration)")
	open := func(ctx context.Context) (*queue.Store, *config.Config, error) {
		cfg, err := a.loadConfig()
		if err != nil {
			return nil, nil, err
		}
		dsn := db
		if dsn == "" {
			dsn = cfg.Queue.DB
		}
		s, err := queue.Open(ctx, dsn, a.dataDir(), queue.OpenOptions{})
		if err != nil {
			return nil, nil, fail(ExitFail, "%w", err)
		}
		return s, cfg, nil
	}
	cmd.AddCommand(a.queueAdd(open), a.queueLs(open), a.queueShow(open), a.queueRun(open), a.queueIDCmd(open, "retry"), a.queueIDCmd(open, "cancel"), a.queuePurge(open))
	return cmd
}

type opener func(ctx context.Context) (*queue.Store, *config.Config, error)

// withTask parses a task id argument, opens the store and checks the task
// exists before fn runs.
func withTask(cmd *cobra.Command, open opener, arg string, fn func(s *queue.Store, in queue.Info) error) error {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return fail(ExitUsage, "%q is not a task id", arg)
	}
	s, _, err := open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	in, err := s.Get(cmd.Context(), id)
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	return fn(s, in)
}

func (a *App) dataDir() string {
	if d := a.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "spillway")
	}
	return filepath.Join(a.Getenv("HOME"), ".local", "share", "spillway")
}

// queueAddOptions are queue add's flags.
type queueAddOptions struct {
	steps, prompt, model, name, minTier, chain, window, deadline string
	priority, maxAttempts                                        int
	tags                                                         []string
	asJSON                                                       bool
}

func (o *queueAddOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.steps, "steps", "", "a YAML file of steps (each step may use the previous one's output as {{prev}})")
	f.StringVar(&o.prompt, "prompt", "", "a one-prompt task")
	f.StringVar(&o.model, "model", "", "the model a --prompt task or a command starts at (its chain follows; a command gets it as {model} or its agent's model flag)")
	f.StringVar(&o.name, "name", "", "a name to recognise the task by")
	f.IntVar(&o.priority, "priority", 2, "1 (first) to 4 (last)")
	f.StringVar(&o.minTier, "min-tier", "", "never fall below this tier: heavy, medium, light")
	f.StringVar(&o.chain, "chain", "", "the configured chain prompt steps without a model start at")
	f.StringVar(&o.window, "window", "", "run only in this daily window, e.g. 22:00-07:00, or quiet")
	f.StringVar(&o.deadline, "deadline", "", "cancel the task if it has not run by then (RFC 3339)")
	f.IntVar(&o.maxAttempts, "max-attempts", 5, "attempts before the task fails (capacity waits do not count)")
	f.StringArrayVar(&o.tags, "tag", nil, "a tag (repeatable)")
	f.BoolVar(&o.asJSON, "json", false, "print the task as JSON")
	f.SetInterspersed(false)
}

func (a *App) queueAdd(open opener) *cobra.Command {
	var o queueAddOptions
	cmd := &cobra.Command{
		Use:   "add [flags] [-- COMMAND ARGS…]",
		Short: "Add a task: --prompt TEXT, --steps FILE, or an agent command after --",
		Example: `  spillway queue add --prompt "Summarise CHANGELOG.md" --model gpt-6-astra --min-tier medium
  spillway queue add --steps release.yaml --window quiet --priority 1
  spillway queue add --name fix-tests -- codex exec --skip-git-repo-check "fix the failing tests"`,
		RunE: func(cmd *cobra.Command, args []string) error { return a.addTask(cmd.Context(), open, &o, args) },
	}
	o.flags(cmd.Flags())
	return cmd
}

// task is the task the flags and args (a command) describe.
func (o *queueAddOptions) task(args []string) (queue.Task, error) {
	if o.maxAttempts < 1 {
		return queue.Task{}, fail(ExitUsage, "--max-attempts %d: give 1 or more (the default is 5; capacity waits do not count)", o.maxAttempts)
	}
	t := queue.Task{Name: o.name, Priority: o.priority, MinTier: o.minTier, Chain: o.chain, Window: o.window, MaxAttempts: o.maxAttempts, Tags: o.tags}
	n := 0
	if o.steps != "" {
		n++
		data, err := os.ReadFile(o.steps)
		if err != nil {
			// a named file that is not there: 1, as for one that fails validation
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return t, fail(ExitFail, "--steps %s: %w", o.steps, err)
		}
		if t.Steps, err = queue.ParseSteps(o.steps, data); err != nil {
			return t, fail(ExitFail, "%w", err) // a named file that fails validation: 1, as config check
		}
	}
	if o.prompt != "" {
		n++
		t.Steps = []queue.Step{{Name: "prompt", Prompt: o.prompt, Model: o.model}}
	}
	if len(args) > 0 {
		n++
		if err := modelForPlaceholder(args, o.model, false); err != nil {
			return t, err
		}
		// --model: where the command starts ({model}, or a known
		// agent's model flag), as exec's --model
		t.Steps = []queue.Step{{Name: "command", Command: args, Model: o.model}}
	}
	if n != 1 {
		return t, fail(ExitUsage, "give exactly one of --prompt TEXT, --steps FILE, or a command after --")
	}
	if o.deadline != "" {
		d, err := time.Parse(time.RFC3339, o.deadline)
		if err != nil {
			return t, fail(ExitUsage, "--deadline %q: an RFC 3339 time such as 2026-12-01T09:00:00Z", o.deadline)
		}
		t.Deadline = d
	}
	if t.Name == "" {
		t.Name = t.Steps[0].Name
	}
	return t, nil
}

func (a *App) addTask(ctx context.Context, open opener, o *queueAddOptions, args []string) error {
	t, err := o.task(args)
	if err != nil {
		return err
	}
	// what would fail whatever the models do fails now, before the
	// queue holds it
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if err := t.Check(cfg, time.Now()); err != nil {
		if o.steps != "" && strings.HasPrefix(err.Error(), o.steps+":") {
			return fail(ExitFail, "%w", err) // the step file fails validation
		}
		return fail(ExitUsage, "%w", err)
	}
	for _, w := range t.Warnings(cfg) {
		fmt.Fprintln(a.Stderr, "spillway: warning:", w)
	}
	s, _, err := open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	id, err := s.Add(ctx, t, time.Now())
	if err != nil {
		return fail(ExitUsage, "%w", err)
	}
	in, _ := s.Get(ctx, id)
	if o.asJSON {
		return json.NewEncoder(a.Stdout).Encode(in)
	}
	fmt.Fprintf(a.Stdout, "added task %d (%s): %s\n", id, t.Name, in.Status)
	return nil
}

func (a *App) queueLs(open opener) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List tasks with their status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			list, err := s.List(cmd.Context())
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			if asJSON {
				return json.NewEncoder(a.Stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tPRIORITY\tATTEMPTS\tNAME\tWINDOW\tNEXT RUN")
			quiet := false
			for _, t := range list {
				next := ""
				if t.ScheduledAt.After(time.Now()) {
					next = t.ScheduledAt.Local().Format("Jan 2 15:04:05")
				}
				quiet = quiet || t.Window == "quiet"
				fmt.Fprintf(tw, "%d\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", t.ID, statusOf(t), t.Priority, t.Attempt, t.MaxAttempts, t.Name, t.Window, next)
			}
			if err := tw.Flush(); err != nil || !quiet {
				return err
			}
			// which quiet window the tasks will wait for
			_, how, err := s.Window(cmd.Context(), "quiet")
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			fmt.Fprintf(a.Stdout, "\nquiet: %s\n", how)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *App) queueShow(open opener) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one task: status, attempts, errors, step outputs and result",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTask(cmd, open, args[0], func(s *queue.Store, in queue.Info) error {
				steps, _ := s.Steps(cmd.Context(), in.ID)
				result, _, _ := s.Result(cmd.Context(), in.ID)
				if asJSON {
					return json.NewEncoder(a.Stdout).Encode(struct {
						queue.Info
						Steps  []string `json:"step_outputs"`
						Result string   `json:"result"`
					}{in, steps, result})
				}
				fmt.Fprintf(a.Stdout, "task %d %s: %s (attempt %d of %d, priority %d)\n", in.ID, in.Name, statusOf(in), in.Attempt, in.MaxAttempts, in.Priority)
				for i, e := range in.Errors {
					fmt.Fprintf(a.Stdout, "  error %d: %s\n", i+1, e)
				}
				for i, o := range steps {
					fmt.Fprintf(a.Stdout, "  step %d output: %s\n", i+1, o)
				}
				if result != "" {
					fmt.Fprintf(a.Stdout, "result:\n%s\n", result)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the task, its step outputs and result)")
	return cmd
}

func (a *App) queueIDCmd(open opener, verb string) *cobra.Command {
	short := map[string]string{"retry": "Run a failed or cancelled task again, alone", "cancel": "Cancel a task"}[verb]
	return &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTask(cmd, open, args[0], func(s *queue.Store, in queue.Info) error {
				var err error
				if verb == "retry" {
					err = s.Retry(cmd.Context(), in.ID)
				} else {
					err = s.Cancel(cmd.Context(), in.ID)
				}
				if err != nil {
					return fail(ExitFail, "%w", err)
				}
				in, _ = s.Get(cmd.Context(), in.ID)
				fmt.Fprintf(a.Stdout, "task %d: %s\n", in.ID, in.Status)
				return nil
			})
		},
	}
}

func (a *App) queuePurge(open opener) *cobra.Command {
	return &cobra.Command{
		Use:   "purge",
		Short: "Delete finished tasks (succeeded, failed, cancelled) and their results",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := s.Purge(cmd.Context())
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			fmt.Fprintf(a.Stdout, "purged %d finished tasks\n", n)
			return nil
		},
	}
}

// queueRunOptions are queue run's flags.
type queueRunOptions struct {
	conc, globalConc   int
	untilEmpty, asJSON bool
	gapMin, gapMax     time.Duration
	taskTimeout        time.Duration
	deadAfter          time.Duration
	eventsPath         string
}

func (o *queueRunOptions) flags(f *pflag.FlagSet) {
	f.IntVar(&o.conc, "concurrency", 0, "tasks at once in this runner (default queue.concurrency, 2)")
	f.IntVar(&o.globalConc, "global-concurrency", -1, "tasks at once across every runner on the database (default queue.global_concurrency; 0: no limit)")
	f.BoolVar(&o.untilEmpty, "until-empty", false, "stop once nothing is left to run now: exit 0 when all finished, 1 when a task failed, 3 when tasks wait for later")
	f.BoolVar(&o.asJSON, "json", false, "JSON lines on stdout instead of the live view")
	f.DurationVar(&o.gapMin, "gap-min", -1, "least gap between the starts of attempts to one model (default queue.gap_min)")
	f.DurationVar(&o.gapMax, "gap-max", -1, "largest gap between the starts of attempts to one model (default queue.gap_max)")
	f.DurationVar(&o.taskTimeout, "task-timeout", 30*time.Minute, "the longest a task may run")
	f.DurationVar(&o.deadAfter, "dead-after", 30*time.Second, "a runner silent this long is dead: the processes of its tasks on this machine are killed and the tasks run again")
	f.StringVar(&o.eventsPath, "events", "", "event log file, or - for none")
}

func (a *App) queueRun(open opener) *cobra.Command {
	var o queueRunOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Work the queue (Ctrl-C to stop; --until-empty for scripts and CI)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runQueue(cmd.Context(), open, &o) },
	}
	o.flags(cmd.Flags())
	return cmd
}

// apply sets cfg's queue settings the flags give.
func (o *queueRunOptions) apply(cfg *config.Config) {
	if o.conc == 0 {
		o.conc = cfg.Queue.Concurrency
	}
	if o.globalConc >= 0 {
		cfg.Queue.GlobalConcurrency = o.globalConc
	}
	if o.gapMin >= 0 {
		cfg.Queue.GapMin = config.Duration(o.gapMin)
	}
	if o.gapMax >= 0 {
		cfg.Queue.GapMax = config.Duration(o.gapMax)
	}
}

func (a *App) runQueue(ctx context.Context, open opener, o *queueRunOptions) error {
	s, cfg, err := open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	o.apply(cfg)
	if err := s.Alone(ctx, time.Now()); err != nil { // a SQLite queue's second runner: before a word of its own
		return fail(ExitFail, "%w", err)
	}
	var sink events.Sink = events.Nop{}
	view := a.newQueueView(s, o.asJSON)
	// (records the log loses are said as the view says its lines)
	ew, _, closeEvents, err := a.eventLog(o.eventsPath, cfg, func(err error) { view.log("spillway: %v", err) })
	if err != nil {
		return err
	}
	defer closeEvents()
	if ew != nil {
		sink = ew
	}
	stopView := view.run(ctx)
	started := time.Now()
	ro := queue.RunOptions{Config: cfg, Events: sink, Concurrency: o.conc,
		TaskTimeout: o.taskTimeout, DeadAfter: o.deadAfter, UntilEmpty: o.untilEmpty, Log: view.log, OnTask: view.task,
		Supervisor: supervisor()}
	nodeCtx, stopNode := context.WithCancel(ctx)
	defer stopNode() // before the store closes (defers run last first)
	closeFleet, err := a.queueFleet(nodeCtx, s, cfg, &ro)
	if err != nil {
		return err
	}
	defer closeFleet()
	err = s.Run(ctx, ro)
	stopView()
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	if ctx.Err() != nil {
		// Ctrl-C or SIGTERM: the running tasks were handed back,
		// nothing is finished
		view.summary(ExitInterrupted)
		return exitQuietly(ExitInterrupted)
	}
	if !o.untilEmpty {
		view.summary(ExitOK)
		return nil
	}
	return a.queueLeft(s, view, started)
}

// queueFleet makes the runners on one Postgres a fleet: through Redis when
// state: says so (with the gateways), else through the database (SQLite's
// one connection is River's: a runner there is alone). It sets ro's engine
// and slots for the fleet, and returns what closes it.
func (a *App) queueFleet(ctx context.Context, s *queue.Store, cfg *config.Config, ro *queue.RunOptions) (func(), error) {
	flog := slog.New(slog.NewTextHandler(a.Stderr, nil))
	node, closeFleet, err := joinFleet(ctx, cfg, flog)
	if err != nil {
		return nil, err
	}
	if node == nil {
		closeFleet = func() {}
		if s.Postgres() {
			node = fleet.NewNode(ctx, s.Fleet(), fleetID(), policy.RealClock{}, flog)
		}
	}
	if node != nil {
		ro.Engine = policy.New(queue.Paced(cfg), policy.ForBatchWork(), policy.WithFleet(node))
		ro.Slots, ro.GlobalConcurrency = node, cfg.Queue.GlobalConcurrency
	} else if cfg.Queue.GlobalConcurrency > 0 {
		fmt.Fprintf(a.Stderr, "spillway: queue.global_concurrency needs a Postgres queue or state: redis://…; this runner keeps to its own --concurrency %d\n", ro.Concurrency)
	}
	return closeFleet, nil
}

// queueLeft ends a run --until-empty by what it leaves: a task that failed
// in it (started: when the run started), else tasks that wait (a window,
// capacity, a retry) with nothing to run now.
func (a *App) queueLeft(s *queue.Store, view *queueView, started time.Time) error {
	list, _ := s.List(context.Background())
	failed := 0
	for _, t := range list {
		if t.Status == "failed" && !t.FinishedAt.Before(started) {
			failed++
		}
	}
	next, waiting := queue.NextDue(list)
	switch {
	case failed > 0:
		view.summary(ExitFail)
		return fail(ExitFail, "%d task(s) failed; see spillway queue ls", failed)
	case waiting > 0:
		view.summary(ExitWaiting)
		fmt.Fprintf(a.Stderr, "spillway: %d task(s) wait (a window, capacity or a retry); the next may start at %s: run the queue again then\n", waiting, next.Local().Format("Jan 2 15:04:05"))
		return exitQuietly(ExitWaiting)
	}
	view.summary(ExitOK)
	return nil
}

// queueView shows a queue run. On a terminal: a progress bar on stdout,
// redrawn every second, with each event printed above it (one writer owns
// the screen, so nothing is glued to the bar). Otherwise: the progress line
// on stdout when it changes, events on stderr, a line each. With --json:
// on stdout, a record per task transition ({"type":"task"}), the runner's
// other events ({"type":"log"}), and a final summary ({"type":"summary"}).
type queueView struct {
	a        *App
	s        *queue.Store
	json     bool
	tty      bool
	mu       sync.Mutex
	bar      string // on the screen, after the events (tty)
	lastLine string // printed last (no tty)
}

func (a *App) newQueueView(s *queue.Store, asJSON bool) *queueView {
	v := &queueView{a: a, s: s, json: asJSON}
	if f, ok := a.Stdout.(*os.File); ok && !asJSON && term.IsTerminal(int(f.Fd())) {
		v.tty = true
	}
	return v
}

// record prints one JSON record with its time and type.
func (v *queueView) record(typ string, fields any) {
	b, _ := json.Marshal(fields)
	head, _ := json.Marshal(map[string]any{"ts": time.Now().UTC(), "type": typ})
	if len(b) > 2 { // {"ts":…,"type":…, then the fields
		b = append(append(head[:len(head)-1:len(head)-1], ','), b[1:]...)
	} else {
		b = head
	}
	fmt.Fprintln(v.a.Stdout, string(b))
}

// event prints one line of what happened.
func (v *queueView) event(line string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	line = time.Now().Format("15:04:05") + " " + line
	if v.tty {
		fmt.Fprintf(v.a.Stdout, "\r\033[K%s\n%s", line, v.bar)
		return
	}
	fmt.Fprintln(v.a.Stderr, line)
}

// log is the runner's Log.
func (v *queueView) log(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if v.json {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.record("log", map[string]string{"message": line})
		return
	}
	v.event(line)
}

// task is the runner's OnTask.
func (v *queueView) task(ev queue.TaskEvent) {
	if v.json {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.record("task", ev)
		return
	}
	line := fmt.Sprintf("task %d (%s): %s", ev.ID, ev.Name, ev.Status)
	if !ev.Next.IsZero() {
		line += " (next " + ev.Next.Local().Format("15:04:05") + ")"
	}
	if ev.Error != "" {
		line += ": " + ev.Error
	}
	v.event(line)
}

// draw shows the counts now.
func (v *queueView) draw() {
	list, err := v.s.List(context.Background())
	if err != nil || v.json {
		return
	}
	line := progressLine(list)
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.tty:
		v.bar = line
		fmt.Fprintf(v.a.Stdout, "\r\033[K%s", line)
	case line != v.lastLine:
		fmt.Fprintln(v.a.Stdout, line)
	}
	v.lastLine = line
}

// run draws every second until the returned stop, which draws once more
// (the final counts) and ends the bar's line.
func (v *queueView) run(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			v.draw()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
		v.draw()
		if v.tty {
			io.WriteString(v.a.Stdout, "\n")
		}
	}
}

// summary ends a --json run: the tasks by status, and the exit code.
func (v *queueView) summary(code int) {
	if !v.json {
		return
	}
	list, _ := v.s.List(context.Background())
	counts := map[string]int{}
	for _, t := range list {
		counts[t.Status]++
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.record("summary", map[string]any{"counts": counts, "total": len(list), "exit": code})
}

// statusOf is a task's status as a person reads it: a wait says until when.
func statusOf(t queue.Info) string {
	switch t.Status {
	case "waiting for capacity":
		return fmt.Sprintf("%s (next check %s)", t.Status, t.ScheduledAt.Local().Format("15:04:05"))
	case "waiting to retry":
		return fmt.Sprintf("%s (at %s)", t.Status, t.ScheduledAt.Local().Format("15:04:05"))
	}
	return t.Status
}

func progressLine(list []queue.Info) string {
	counts := map[string]int{}
	for _, t := range list {
		counts[t.Status]++
	}
	total := len(list)
	finished := counts["succeeded"] + counts["failed"] + counts["cancelled"]
	const width = 24
	filled := 0
	if total > 0 {
		filled = finished * width / total
	}
	var parts []string
	for _, st := range []string{"succeeded", "running", "queued", "waiting for capacity", "waiting for the usage limit's reset", "waiting to retry", "scheduled", "failed", "cancelled"} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	line := fmt.Sprintf("[%s%s] %d/%d done", strings.Repeat("#", filled), strings.Repeat("-", width-filled), finished, total)
	if len(parts) > 0 {
		line += " · " + strings.Join(parts, " · ")
	}
	return line
}
