package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/agent"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/transport"
)

// RunOptions configure a worker.
type RunOptions struct {
	Config *config.Config
	// Engine is shared by every task: one set of breakers and one pacer.
	// When nil, one is made from Config whose pacing spaces the starts of
	// attempts to each model by queue.gap_min to queue.gap_max (batch work
	// paces from the start).
	Engine      *policy.Engine
	Events      events.Sink
	Concurrency int // tasks at once (default config queue.concurrency)
	// Ladder is how long a task whose whole chain is at capacity sleeps
	// (snoozed, no attempt used) before it tries again, rung by rung.
	Ladder []time.Duration
	// TaskTimeout is the longest a task may run (default 30m).
	TaskTimeout time.Duration
	// DeadAfter is how long a runner may go without a heartbeat before the
	// others take it for dead: they kill the process groups of its steps
	// on this host and hand its tasks back (default 30s; runner.go).
	DeadAfter time.Duration
	// Clock is spillway's own time in the queue (policy.RealClock when
	// nil): the heartbeats and the rescue, a task's window and deadline,
	// how long a task snoozes, when waiting tasks are woken. River's own
	// loops (its scheduler, its rescuer) and its timestamps run on the wall
	// clock.
	Clock policy.Clock
	// Supervisor, when set, is spillway's executable: a command step's
	// agent runs under its supervisor, and dies with this runner even when
	// the runner is killed outright (agent.Options.Supervisor).
	Supervisor string
	// CheckEvery splits a long rung of the ladder into checks: a task
	// waiting for capacity comes back after at most this long to try its
	// chain again (it fails fast at capacity), and the first answer ends
	// its wait (default a minute; negative: off).
	CheckEvery time.Duration
	// UntilEmpty stops once no task is runnable now or running.
	UntilEmpty bool
	// Slots, with GlobalConcurrency, limits the tasks running at once
	// across every runner of the queue (River limits only each runner's):
	// a task takes one of GlobalConcurrency slots fleet-wide before it
	// runs, and waits queued (no attempt used) while all are taken.
	Slots             Slots
	GlobalConcurrency int
	Log               func(format string, a ...any)
	// OnTask, when set, is told each change of a task's status this runner
	// makes, as it makes it.
	OnTask func(TaskEvent)
}

// Slots are fleet-wide leases (fleet.Node, on the queue's database or
// Redis): a slot of a runner that died is freed when its lease expires.
type Slots interface {
	Slot(ctx context.Context, lane string, limit int) (release func(), ok bool, err error)
}

// globalLane names the queue's task slots among a fleet's lanes.
const globalLane = "queue:tasks"

// slotRecheck is how soon a task that found every global slot taken looks
// again, unless a finishing task wakes it first.
const slotRecheck = 2 * time.Second

// TaskEvent is a task's change of status: the statuses of Info, with the
// attempt it happened in, the error of a failure, and when a task that
// waits is due next.
type TaskEvent struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Status      string    `json:"status"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	Error       string    `json:"error,omitempty"`
	Next        time.Time `json:"next,omitzero"`
}

// Paced is cfg with its pacing set to the queue's gaps: attempts to each
// model start queue.gap_min to queue.gap_max apart.
func Paced(cfg *config.Config) *config.Config {
	c := *cfg
	q := cfg.Queue
	if q.GapMin > 0 || q.GapMax > 0 {
		c.Pacing.MinGap, c.Pacing.Jitter = q.GapMin, max(q.GapMax-q.GapMin, 0)
	}
	return &c
}

// Run works the queue until ctx ends (or, with UntilEmpty, until nothing is
// left to run now).
func (s *Store) Run(ctx context.Context, o RunOptions) error {
	if o.Concurrency < 1 {
		o.Concurrency = max(o.Config.Queue.Concurrency, 1)
	}
	if o.TaskTimeout <= 0 {
		o.TaskTimeout = 30 * time.Minute
	}
	if o.DeadAfter <= 0 {
		o.DeadAfter = 30 * time.Second
	}
	if o.Clock == nil {
		o.Clock = policy.RealClock{}
	}
	switch {
	case o.CheckEvery == 0:
		o.CheckEvery = time.Minute
	case o.CheckEvery < 0:
		o.CheckEvery = 0
	}
	if o.Ladder == nil {
		for _, d := range o.Config.Retry.Ladder {
			o.Ladder = append(o.Ladder, d.D())
		}
	}
	if o.Events == nil {
		o.Events = events.Nop{}
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Engine == nil {
		o.Engine = policy.New(Paced(o.Config), policy.ForBatchWork())
	}
	// this runner says it is alive; the dead ones' tasks come back (a
	// runner killed on this machine before this one started included)
	self := newRunner(o.DeadAfter)
	if err := s.register(ctx, self, o.Clock.Now()); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	defer s.unregister(context.WithoutCancel(ctx), self)
	if err := s.alone(ctx, self, o.Clock.Now()); err != nil {
		return err
	}
	w := &worker{store: s, o: o, runner: self, runCtx: ctx}
	// one transport for every prompt step: the queue's records, the
	// engine's breakers and pacer
	w.tr = transport.New(o.Config, transport.WithEngine(o.Engine), transport.WithEvents(queueSink{o.Events}))
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.keepAlive(runCtx, o.Clock, self, o.Log)
	riverLog := slog.New(slog.NewTextHandler(logLines{o.Log}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stop, err := s.be.work(runCtx, self.id, workers, o.Concurrency, o.TaskTimeout, riverLog)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = stop(sctx)
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if !o.UntilEmpty {
				continue
			}
			list, err := s.List(ctx)
			if err != nil {
				return err
			}
			if !Busy(list, time.Now()) {
				return nil
			}
		}
	}
}

// Busy reports whether a task of list runs, or can start, now (a waiting
// task whose time comes within a second counts).
func Busy(list []Info, now time.Time) bool {
	for _, t := range list {
		if t.Runnable || t.Waiting() && t.ScheduledAt.Before(now.Add(time.Second)) {
			return true
		}
	}
	return false
}

// NextDue is when the first task of list that waits (Waiting) is due, and
// how many wait; the zero time when none does.
func NextDue(list []Info) (next time.Time, waiting int) {
	for _, t := range list {
		if !t.Waiting() {
			continue
		}
		waiting++
		if next.IsZero() || t.ScheduledAt.Before(next) {
			next = t.ScheduledAt
		}
	}
	return next, waiting
}

// Waiting reports a task that will run on its own later: for its window,
// for capacity, or for its next retry.
func (in Info) Waiting() bool {
	switch in.Status {
	case "scheduled", "waiting for capacity", "waiting for the usage limit's reset", "waiting to retry":
		return true
	}
	return false
}

// worker runs tasks. One instance serves every worker goroutine.
type worker struct {
	river.WorkerDefaults[taskArgs]
	store  *Store
	o      RunOptions
	tr     *transport.Transport
	runner runner
	// runCtx is Run's: once it ends, the runner is stopping (Ctrl-C,
	// SIGTERM), and a task whose step it interrupted goes back as it was
	runCtx context.Context

	mu   sync.Mutex
	woke map[string]time.Time // when tasks waiting for each model were last woken
}

// stepFailure is how a step ended when it did not succeed.
type stepFailure struct {
	park     time.Time     // every model at capacity, or a usage limit: back then, no attempt used
	resets   time.Time     // a usage limit's reset, as the provider said it
	rungLeft time.Duration // and what is left of the rung then
	nextRung int           // and the rung it waits then
	class    classify.Class
	// final: no retry can fix it (the key, the account, the request or the
	// configuration): the task ends now, with no River retry
	final bool
	err   error
}

// Work runs one task's steps, skipping those already finished, and tells
// OnTask what became of it.
func (w *worker) Work(ctx context.Context, job *river.Job[taskArgs]) error {
	if until, ok := parkedUntil(job.JobRow); ok && w.o.Clock.Now().Before(until) {
		// handed back before the usage limit's reset on the queue's clock
		// (River times the snooze on the wall clock, and a task can be
		// made due by hand): parked again for what is left, no attempt
		// used; it said so when it parked
		return river.JobSnooze(until.Sub(w.o.Clock.Now()))
	}
	ev := TaskEvent{ID: job.ID, Name: job.Args.Task.Name, Status: "running", Attempt: job.Attempt, MaxAttempts: job.MaxAttempts}
	release, ok := w.globalSlot(ctx, job)
	if !ok { // every global slot is taken, or an earlier task's turn comes first: queued again, no attempt used
		river.MetadataSet(ctx, "spillway_wait", "slot")
		ev.Status, ev.Next = "queued", w.o.Clock.Now().Add(slotRecheck)
		w.tell(ev)
		return river.JobSnooze(slotRecheck)
	}
	defer release()
	w.tell(ev)
	status, next, err := w.work(ctx, job)
	var cancel *rivertype.JobCancelError
	switch {
	case status != "":
	case err == nil:
		status = "succeeded"
	case errors.As(err, &cancel):
		status = "failed"
	case job.Attempt >= job.MaxAttempts:
		status = "failed"
	default:
		status = "waiting to retry"
	}
	ev.Status, ev.Next = status, next
	var snooze *rivertype.JobSnoozeError
	if err != nil && !errors.As(err, &snooze) { // a wait is no error (River names its snooze one)
		ev.Error = strings.TrimPrefix(err.Error(), "JobCancelError: ")
	}
	w.tell(ev)
	return err
}

func (w *worker) tell(ev TaskEvent) {
	if w.o.OnTask != nil {
		w.o.OnTask(ev)
	}
}

// work is Work's: it returns the task's status when it waits (a window,
// capacity, handed back), with when it is due next.
func (w *worker) work(ctx context.Context, job *river.Job[taskArgs]) (string, time.Time, error) {
	task := job.Args.Task
	if state, at, stop, err := w.ready(ctx, job); stop {
		return state, at, err
	}
	var meta workMeta
	_ = json.Unmarshal(job.Metadata, &meta)
	w.o.Log("task %d (%s): started", job.ID, task.Name)
	river.MetadataSet(ctx, "spillway_wait", nil)
	river.MetadataSet(ctx, "spillway_until", nil)
	done, prev, err := w.finishedSteps(ctx, job.ID)
	if err != nil {
		return "", time.Time{}, err
	}
	if i, why, ok := w.store.interrupted(ctx, job.ID); ok && i < len(task.Steps) && !done[i] {
		w.o.Log("task %d (%s): step %d (%s) was interrupted by %s; running it again", job.ID, task.Name, i+1, task.Steps[i].Name, why)
	}
	keep := context.WithoutCancel(ctx) // bookkeeping that must outlive an interrupted step
	for i, step := range task.Steps {
		if done[i] {
			continue
		}
		w.o.Log("task %d (%s): step %d/%d %s", job.ID, task.Name, i+1, len(task.Steps), step.Name)
		if err := w.store.stepStarted(ctx, w.runner, job.ID, job.Attempt, i); err != nil {
			return "", time.Time{}, err
		}
		out, served, f := w.runStep(ctx, job.ID, task, step.Expand(prev), meta.Snoozes, meta.RungLeft)
		if f != nil && w.runCtx.Err() != nil {
			// the runner is stopping: the task goes back as it was, its
			// attempt not used, and this step runs again next time
			_ = w.store.stepInterrupted(keep, job.ID, "the runner stopping")
			w.o.Log("task %d (%s): step %d (%s) interrupted: the runner is stopping; it runs again next time (no attempt used)", job.ID, task.Name, i+1, step.Name)
			return "queued", time.Time{}, river.JobSnooze(0)
		}
		if f != nil {
			_ = w.store.stepEnded(keep, job.ID)
			return w.stepFailed(ctx, job, step, f)
		}
		if err := w.stepDone(ctx, job, i, out, served, &meta); err != nil {
			return "", time.Time{}, err
		}
		prev = out
	}
	if err := w.store.be.exec(ctx, `INSERT INTO spillway_results (job_id, output, finished_at) VALUES (?, ?, ?)`,
		job.ID, prev, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return "", time.Time{}, err
	}
	return "", time.Time{}, river.RecordOutput(ctx, map[string]string{"output": clipOutput(prev)})
}

// workMeta is what a task's River metadata keeps between its runs: how
// often it was snoozed, and what is left of the ladder's rung it waited on.
type workMeta struct {
	Snoozes  int           `json:"spillway_snoozes"`
	RungLeft time.Duration `json:"spillway_rung_left"`
}

// ready says whether the task is to run now; when not (stop), what work
// returns: nothing for a task that finished before its runner died (it is
// recorded as finished, never run twice), a snooze to its window's next
// opening, a cancel once its deadline has passed, or the error that kept
// it from knowing.
func (w *worker) ready(ctx context.Context, job *river.Job[taskArgs]) (state string, at time.Time, stop bool, err error) {
	task := job.Args.Task
	if _, done, err := w.store.Result(ctx, job.ID); err != nil {
		return "", time.Time{}, true, err
	} else if done {
		// finished before its runner died, which left River's record of it
		// unsaved: completed now, never run twice
		w.o.Log("task %d (%s): had finished before its runner stopped; recorded as finished now", job.ID, task.Name)
		return "", time.Time{}, true, nil
	}
	win, _, err := w.store.Window(ctx, task.Window) // "quiet" as learned by now
	if err != nil {
		return "", time.Time{}, true, err
	}
	now := w.o.Clock.Now() // spillway's decisions run on its clock; River's loops on theirs
	if !win.Contains(now) {
		river.MetadataSet(ctx, "spillway_wait", "window")
		at := win.Next(now)
		return "scheduled", at, true, river.JobSnooze(at.Sub(now))
	}
	if !task.Deadline.IsZero() && now.After(task.Deadline) {
		return "cancelled", time.Time{}, true, river.JobCancel(fmt.Errorf("deadline %s passed", task.Deadline.Format(time.RFC3339)))
	}
	return "", time.Time{}, false, nil
}

// stepFailed is what work returns for a step that failed with f: parked
// until a usage limit's reset (cancelled if that is after the task's
// deadline), parked until capacity, cancelled for a failure that retrying
// would repeat, else the error, for River to retry.
func (w *worker) stepFailed(ctx context.Context, job *river.Job[taskArgs], step Step, f *stepFailure) (string, time.Time, error) {
	task := job.Args.Task
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		f.err = fmt.Errorf("the task ran longer than its timeout (%s, --task-timeout) and was stopped", w.o.TaskTimeout)
		f.final = false
	}
	switch {
	case !f.park.IsZero() && f.class == classify.UsageLimit:
		if !task.Deadline.IsZero() && f.park.After(task.Deadline) {
			return "cancelled", time.Time{}, river.JobCancel(fmt.Errorf("step %s: the plan's usage limit resets at %s, after the task's deadline %s", step.Name, cmp.Or(f.resets, f.park).UTC().Format(time.RFC3339), task.Deadline.UTC().Format(time.RFC3339)))
		}
		w.o.Log("task %d (%s): step %s met its plan's usage limit; parked until the usage limit resets at %s (no attempt used)", job.ID, task.Name, step.Name, cmp.Or(f.resets, f.park).UTC().Format(time.RFC3339))
		// back at the driver's time (the reset and a second), and never
		// before it on the queue's clock (Work)
		river.MetadataSet(ctx, "spillway_until", f.park.UTC().Format(time.RFC3339Nano))
		return "waiting for the usage limit's reset", f.park, w.snooze(ctx, "reset", f)
	case !f.park.IsZero():
		w.o.Log("task %d: every model at capacity; waiting for capacity (next check %s, in %s; no attempt used)", job.ID, f.park.Local().Format("15:04:05"), max(f.park.Sub(w.o.Clock.Now()), 0).Round(time.Millisecond))
		return "waiting for capacity", f.park, w.snooze(ctx, "capacity", f)
	case f.final:
		// retrying would fail the same way: end the task now, saying why
		river.MetadataSet(ctx, "spillway_failed", string(f.class))
		w.o.Log("task %d (%s): step %s failed (%s), not retried: %v", job.ID, task.Name, step.Name, f.class, f.err)
		return "", time.Time{}, river.JobCancel(fmt.Errorf("step %s: %w", step.Name, f.err))
	default:
		return "", time.Time{}, fmt.Errorf("step %s: %w", step.Name, f.err)
	}
}

// stepDone records step i's output: it wakes the tasks waiting for the
// model that served it, starts a later step's wait afresh, and saves the
// output and the step's end.
func (w *worker) stepDone(ctx context.Context, job *river.Job[taskArgs], i int, out, served string, meta *workMeta) error {
	if served != "" {
		w.wake(ctx, job.ID, served)
	}
	if meta.RungLeft != 0 { // room came back: a later step's wait starts afresh
		meta.RungLeft = 0
		river.MetadataSet(ctx, "spillway_rung_left", 0)
	}
	if err := w.store.be.exec(ctx, `INSERT INTO spillway_steps (job_id, step, output, finished_at) VALUES (?, ?, ?, ?)`,
		job.ID, i, out, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	// the last step's record stays until River has saved the task's
	// completion (runner.go): a runner killed between the two leaves
	// it behind, and the task is handed back to be completed
	if i < len(job.Args.Task.Steps)-1 {
		return w.store.stepEnded(ctx, job.ID)
	}
	return w.store.stepFinished(ctx, job.ID)
}

// parkClass is why a step parked: a usage limit's reset, else capacity.
func parkClass(class string) classify.Class {
	if class == string(classify.UsageLimit) {
		return classify.UsageLimit
	}
	return classify.Capacity
}

// request is what the policy engine plans for a prompt step of task: its
// model, that model's wire format, the task's minimum tier.
func (w *worker) request(task Task, step Step) policy.Request {
	m := w.stepModel(task, step)
	return policy.Request{Model: m, Type: wire.Format(w.o.Config.ModelType(m)), MinTier: config.Tier(task.MinTier)}
}

// snooze puts a task whose step parked to sleep until the driver said,
// without using an attempt, waiting for wait: "capacity" (its whole chain
// at capacity: the next rung of the ladder, or sooner, when its models'
// breakers let a probe through, whose cooldowns track the pool more closely
// than a rung of half an hour; the rest of the queue then learns from the
// probe's answer, see wake) or "reset" (a usage limit's reset).
func (w *worker) snooze(ctx context.Context, wait string, f *stepFailure) error {
	river.MetadataSet(ctx, "spillway_wait", wait)
	river.MetadataSet(ctx, "spillway_snoozes", f.nextRung) // the rung it waits next (the driver's word)
	river.MetadataSet(ctx, "spillway_rung_left", f.rungLeft)
	return river.JobSnooze(max(f.park.Sub(w.o.Clock.Now()), 0))
}

// parkedUntil is when a task parked for a usage limit's reset may run
// again, on the queue's clock.
func parkedUntil(r *rivertype.JobRow) (time.Time, bool) {
	var m struct {
		Wait  string    `json:"spillway_wait"`
		Until time.Time `json:"spillway_until"`
	}
	if jsonUnmarshal(r.Metadata, &m) != nil || m.Wait != "reset" || m.Until.IsZero() {
		return time.Time{}, false
	}
	return m.Until, true
}

func (w *worker) finishedSteps(ctx context.Context, id int64) (map[int]bool, string, error) {
	done := map[int]bool{}
	prev := ""
	for i := 0; ; i++ {
		var out string
		err := w.store.be.queryRow(ctx, `SELECT output FROM spillway_steps WHERE job_id = ? AND step = ?`, id, i).Scan(&out)
		if err != nil {
			if isNoRows(err) {
				return done, prev, nil
			}
			return nil, "", err
		}
		done[i], prev = true, out
	}
}

// wake makes the tasks that wait for capacity and would use model run
// now, in the place they had in the queue: an answer from model says its
// pool has room again, and a task snoozed up the ladder (up to half an
// hour) would otherwise sleep through it, or wait behind every task added
// since. Only a few (as many as run at once), at most once per gap_min per
// model: first those that can use no other model (the room of a full pool
// is theirs before a task's that can spill to another), then the oldest. A
// woken task that still finds no room snoozes again, without an attempt
// used.
func (w *worker) wake(ctx context.Context, self int64, model string) {
	w.mu.Lock()
	if w.woke == nil {
		w.woke = map[string]time.Time{}
	}
	if last, ok := w.woke[model]; ok && w.o.Clock.Now().Sub(last) < max(w.o.Config.Queue.GapMin.D(), 10*time.Millisecond) {
		w.mu.Unlock()
		return
	}
	w.woke[model] = w.o.Clock.Now()
	w.mu.Unlock()
	rows, err := w.store.be.list(ctx, river.NewJobListParams().Kinds(taskArgs{}.Kind()).
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled). // a short snooze leaves a task available, due later
		OrderBy(river.JobListOrderByID, river.SortOrderAsc).First(1000))
	if err != nil {
		return // waking is an optimisation: the ladder still runs
	}
	type waiter struct {
		id   int64
		only bool
	}
	var waiters []waiter
	only := 0
	for _, r := range rows {
		if only >= w.o.Concurrency {
			break // enough that can use no other model: the rest are not woken anyway
		}
		if r.ID == self || waitsFor(r) != "capacity" {
			continue
		}
		var a taskArgs
		if jsonUnmarshal(r.EncodedArgs, &a) != nil {
			continue
		}
		if uses, confined := w.uses(a.Task, model); uses {
			waiters = append(waiters, waiter{r.ID, confined})
			if confined {
				only++
			}
		}
	}
	// (stable: the oldest first among equals) no more than can run at
	// once: room for one is not room for the whole queue
	slices.SortStableFunc(waiters, func(a, b waiter) int {
		switch {
		case a.only == b.only:
			return 0
		case a.only:
			return -1
		}
		return 1
	})
	woken := 0
	for _, x := range waiters {
		if woken >= w.o.Concurrency {
			break
		}
		if err := w.store.be.due(ctx, x.id); err == nil {
			woken++
			w.o.Log("task %d: %s has room again; woken", x.id, model)
		}
	}
}

// globalSlot takes one of queue.global_concurrency slots across every
// runner of the queue, when there is a limit; ok=false when the task is to
// wait for one: all are taken, or a task before it in line is still to
// start (order.go). When the shared state cannot say (Redis or the database
// unreachable), the task runs within this runner's own concurrency, as the
// engine goes on with its own pace: a limit that cannot be checked must not
// stop the whole queue. Releasing a slot wakes the first task in line that
// waits for one.
func (w *worker) globalSlot(ctx context.Context, job *river.Job[taskArgs]) (release func(), ok bool) {
	free := func() {}
	if w.o.Slots != nil && w.o.GlobalConcurrency > 0 {
		if first, err := w.store.inLine(ctx, job.ID); err == nil && first != 0 {
			return nil, false // its turn comes first
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		f, taken, err := w.o.Slots.Slot(cctx, globalLane, w.o.GlobalConcurrency)
		switch {
		case err != nil:
		case !taken:
			return nil, false
		default:
			free = func() {
				f()
				w.wakeForSlot(context.WithoutCancel(ctx))
			}
		}
	}
	// past its slot: no longer in line (a runner with a global limit lets
	// it be, even when this one has none)
	if err := w.store.started(ctx, job.ID); err != nil {
		w.o.Log("task %d: its start was not recorded (%v); later tasks may wait for it until it ends", job.ID, err)
	}
	return free, true
}

// wakeForSlot makes the first task in line that waits for a global slot
// due now: the slot this one held is free (on any runner: the first to
// fetch it takes it; the rest look again after slotRecheck).
func (w *worker) wakeForSlot(ctx context.Context) {
	if id, err := w.store.firstWaitingForSlot(ctx); err == nil && id != 0 {
		_ = w.store.be.due(ctx, id)
	}
}

// uses reports whether a prompt step of task could be served by model, and
// whether one could be served by model alone (its minimum tier or chain
// leaves no other).
func (w *worker) uses(task Task, model string) (uses, only bool) {
	for _, st := range task.Steps {
		if !st.IsPrompt() {
			continue
		}
		cands := w.o.Engine.Candidates(w.request(task, st))
		if !slices.ContainsFunc(cands, func(c policy.Candidate) bool { return c.Model == model }) {
			continue
		}
		uses = true
		if !slices.ContainsFunc(cands, func(c policy.Candidate) bool { return c.Model != model }) {
			only = true
		}
	}
	return uses, only
}

// stepModel is where a prompt step starts: its own model, else its task's
// chain's first, else the codex chain's.
func (w *worker) stepModel(task Task, step Step) string { return task.startModel(w.o.Config, step) }

func (task Task) startModel(cfg *config.Config, step Step) string {
	model := step.Model
	if model == "" && task.Chain != "" && len(cfg.Chains[task.Chain]) > 0 {
		model = cfg.Chains[task.Chain][0]
	}
	if model == "" {
		model = cfg.Chains["codex"][0]
	}
	return model
}

// runStep sends a prompt step through the library's transport, or runs a
// command step under spillway exec; both park instead of sleeping through a
// rung of the ladder. served is the model that answered a prompt.
func (w *worker) runStep(ctx context.Context, id int64, task Task, step Step, snoozes int, rungLeft time.Duration) (out, served string, f *stepFailure) {
	cfg := w.o.Config
	if !step.IsPrompt() {
		// a command step: the agent under spillway exec, the stdout of its
		// run that succeeded the output
		res := agent.Run(ctx, agent.Options{Command: step.Command, Model: step.Model, Config: cfg, Engine: w.o.Engine, Ladder: w.o.Ladder,
			Park: true, UntilReset: true, Rung: snoozes, CheckEvery: w.o.CheckEvery, RungLeft: rungLeft, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
			// the agent's own configuration (its default model) as it sees it
			Events: w.o.Events, Getenv: os.Getenv, Supervisor: w.o.Supervisor,
			// its process group, for a rescue to end should this runner die
			OnStart: func(pid int) { _ = w.store.stepProcess(ctx, id, pid) }})
		switch {
		case res.ExitCode == 0:
			return strings.TrimSpace(res.Stdout), "", nil
		case !res.ParkUntil.IsZero():
			return "", "", &stepFailure{park: res.ParkUntil, resets: res.ResetsAt, rungLeft: res.RungLeft, nextRung: res.NextRung, class: parkClass(res.Class)}
		}
		c := classify.Class(res.Class)
		// an agent that failed on its own (unknown) may be retried; a key,
		// an account or a request that is wrong may not
		return "", "", &stepFailure{class: c, final: policy.FailFast(c) && c != classify.Unknown, err: fmt.Errorf("exit %d: %s", res.ExitCode, res.Reason)}
	}
	model := w.stepModel(task, step)
	deps := cfg.Deployments(model)
	if len(deps) == 0 {
		return "", "", &stepFailure{class: classify.ModelNotFound, final: true, err: fmt.Errorf("model %q is not configured (spillway config check lists the models)", model)}
	}
	format := wire.Format(cfg.DeploymentType(deps[0]))
	env, ok := formats.EnvelopeOf(format)
	ep := env.PromptEndpoint()
	if !ok {
		return "", "", &stepFailure{class: classify.BadRequest, final: true, err: fmt.Errorf("prompt steps cannot use %s models (model %s)", format, model)}
	}
	if why := noKey(cfg, model); why != "" {
		// sent, it would only come back as auth, with no word of which key
		return "", "", &stepFailure{class: classify.Auth, final: true, err: errors.New(why)}
	}
	prov := cfg.Providers[deps[0].Provider]
	// no key of the queue's own: the library gives each provider its key
	header := formats.Header(env, "")
	wire.ClearKeys(header)
	if task.MinTier != "" {
		header.Set("X-Spillway-Min-Tier", task.MinTier)
	}
	ans, err := w.tr.Call(ctx, ep.URL(prov.BaseURL, deps[0].Upstream), header, formats.WireOf(ep).Prompt(wire.Prompt{System: step.System, User: step.Prompt}, model),
		transport.Park(w.o.Ladder, snoozes), transport.CheckRung(w.o.CheckEvery, rungLeft), transport.UntilReset())
	if err != nil {
		var te *transport.Error
		if !errors.As(err, &te) {
			return "", "", &stepFailure{class: classify.Err(err).Class, err: err}
		}
		if !te.ParkUntil.IsZero() {
			return "", "", &stepFailure{park: te.ParkUntil, resets: te.Verdict.ResetsAt, rungLeft: te.RungLeft, nextRung: te.NextRung, class: parkClass(string(te.Verdict.Class))}
		}
		c := te.Verdict.Class
		// unknown may be a transport glitch classify has no type for:
		// River's to retry, as for command steps
		return "", "", &stepFailure{class: c, final: policy.FailFast(c) && c != classify.Unknown, err: err}
	}
	return wire.AnswerText(ans.Body), ans.Model, nil
}

// logLines hands each line written to it to a runner's Log (River's
// logger writes there).
type logLines struct{ log func(string, ...any) }

func (l logLines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.log("river: %s", line)
	}
	return len(p), nil
}

// queueSink marks the library's records as the queue's.
type queueSink struct{ s events.Sink }

func (q queueSink) Write(r events.Record) { r.Source = events.SourceQueue; q.s.Write(r) }

func clipOutput(s string) string {
	if len(s) > 64<<10 {
		return s[:64<<10] + "…"
	}
	return s
}
