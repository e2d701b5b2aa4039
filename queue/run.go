package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/spillway/spillway/agent"
	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/transport"
)

// RunOptions configure a worker.
type RunOptions struct {
	Config      *config.Config
	Engine      *policy.Engine // shared by every task: one set of breakers
	Events      events.Sink
	Concurrency int           // tasks at once (default config queue.concurrency)
	GapMin      time.Duration // jittered gap between task starts
	GapMax      time.Duration
	// Ladder is how long a task whose whole chain is at capacity sleeps
	// (snoozed, no attempt used) before it tries again, rung by rung.
	Ladder []time.Duration
	// RescueAfter is both the longest a task may run and when a task of a
	// dead worker runs again (River needs the one to bound the other;
	// default 30m).
	RescueAfter time.Duration
	// UntilEmpty stops once no task is runnable now or running.
	UntilEmpty bool
	Rand       func() float64
	Log        func(format string, a ...any)
}

// Run works the queue until ctx ends (or, with UntilEmpty, until nothing is
// left to run now).
func (s *Store) Run(ctx context.Context, o RunOptions) error {
	if o.Concurrency < 1 {
		o.Concurrency = max(o.Config.Queue.Concurrency, 1)
	}
	if o.RescueAfter <= 0 {
		o.RescueAfter = 30 * time.Minute
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
		o.Engine = policy.New(o.Config)
	}
	w := &worker{store: s, o: o, base: http.DefaultTransport.(*http.Transport).Clone()}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, err := s.be.work(runCtx, workers, o.Concurrency, o.RescueAfter)
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
			busy := false
			for _, t := range list {
				switch t.Status {
				case "queued", "running", "waiting for capacity":
					busy = true
				case "scheduled":
					busy = busy || t.ScheduledAt.Before(time.Now().Add(time.Second))
				}
			}
			if !busy {
				return nil
			}
		}
	}
}

// worker runs tasks. One instance serves every worker goroutine.
type worker struct {
	river.WorkerDefaults[taskArgs]
	store *Store
	o     RunOptions
	base  http.RoundTripper

	mu   sync.Mutex
	next time.Time            // the earliest next task start
	woke map[string]time.Time // when tasks waiting for each model were last woken
}

// pace spaces task starts by a jittered gap.
func (w *worker) pace(ctx context.Context) error {
	w.mu.Lock()
	now := time.Now()
	start := w.next
	if start.Before(now) {
		start = now
	}
	gap := w.o.GapMin
	if w.o.GapMax > w.o.GapMin && w.o.Rand != nil {
		gap += time.Duration(w.o.Rand() * float64(w.o.GapMax-w.o.GapMin))
	}
	w.next = start.Add(gap)
	w.mu.Unlock()
	if d := time.Until(start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Work runs one task's steps, skipping those already finished.
func (w *worker) Work(ctx context.Context, job *river.Job[taskArgs]) error {
	task := job.Args.Task
	if _, done, err := w.store.Result(ctx, job.ID); err != nil {
		return err
	} else if done {
		return nil // finished before its worker died: never run twice
	}
	if win, _ := ParseWindow(task.Window); !win.Contains(time.Now()) {
		river.MetadataSet(ctx, "spillway_wait", "window")
		return river.JobSnooze(time.Until(win.Next(time.Now())))
	}
	if !task.Deadline.IsZero() && time.Now().After(task.Deadline) {
		return river.JobCancel(fmt.Errorf("deadline %s passed", task.Deadline.Format(time.RFC3339)))
	}
	if err := w.pace(ctx); err != nil {
		return err
	}
	w.o.Log("task %d (%s): started", job.ID, task.Name)
	river.MetadataSet(ctx, "spillway_wait", nil)
	done, prev, err := w.finishedSteps(ctx, job.ID)
	if err != nil {
		return err
	}
	for i, step := range task.Steps {
		if done[i] {
			continue
		}
		w.o.Log("task %d (%s): step %d/%d %s", job.ID, task.Name, i+1, len(task.Steps), step.Name)
		out, served, v, err := w.runStep(ctx, task, step.Expand(prev))
		if err != nil {
			if v.Class == classify.Capacity {
				return w.snooze(ctx, job, w.probeWait(task, step))
			}
			return fmt.Errorf("step %s: %w", step.Name, err)
		}
		if served != "" {
			w.wake(ctx, job.ID, served)
		}
		if err := w.store.be.exec(ctx, `INSERT INTO spillway_steps (job_id, step, output, finished_at) VALUES (?, ?, ?, ?)`,
			job.ID, i, out, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
		prev = out
	}
	if err := w.store.be.exec(ctx, `INSERT INTO spillway_results (job_id, output, finished_at) VALUES (?, ?, ?)`,
		job.ID, prev, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	return river.RecordOutput(ctx, map[string]string{"output": clipOutput(prev)})
}

// probeWait is how long until the breakers of step's models let a probe
// through (0 when one of them is not open).
func (w *worker) probeWait(task Task, step Step) time.Duration {
	if !step.IsPrompt() {
		return 0
	}
	return w.o.Engine.ProbeWait(w.request(task, step))
}

// request is what the policy engine plans for a prompt step of task: its
// model, that model's wire format, the task's minimum tier.
func (w *worker) request(task Task, step Step) policy.Request {
	m := w.stepModel(task, step)
	return policy.Request{Model: m, Type: w.o.Config.ProviderType(w.o.Config.Models[m].Provider), MinTier: config.Tier(task.MinTier)}
}

// snooze puts a task whose whole chain is at capacity to sleep without
// using an attempt, climbing the ladder with each snooze; but never past
// the moment its models' breakers let a probe through (their cooldowns
// track the pool more closely than a rung of half an hour; the rest of the
// queue then learns from the probe's answer, see wake).
func (w *worker) snooze(ctx context.Context, job *river.Job[taskArgs], probe time.Duration) error {
	var meta struct {
		Snoozes int `json:"spillway_snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	d := time.Second
	if len(w.o.Ladder) > 0 {
		d = w.o.Ladder[min(meta.Snoozes, len(w.o.Ladder)-1)]
	}
	if probe > 0 && probe < d {
		d = probe
	}
	river.MetadataSet(ctx, "spillway_wait", "capacity")
	river.MetadataSet(ctx, "spillway_snoozes", meta.Snoozes+1)
	w.o.Log("task %d: every model at capacity; waiting %s (no attempt used)", job.ID, d)
	return river.JobSnooze(d)
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
// now: an answer from model says its pool has room again, and a task
// snoozed up the ladder (up to half an hour) would otherwise sleep through
// it. Only the oldest few (as many as run at once), at most once per
// gap_min per model; a woken task that still finds no room snoozes again,
// without an attempt used.
func (w *worker) wake(ctx context.Context, self int64, model string) {
	w.mu.Lock()
	if w.woke == nil {
		w.woke = map[string]time.Time{}
	}
	if last, ok := w.woke[model]; ok && time.Since(last) < max(w.o.GapMin, 10*time.Millisecond) {
		w.mu.Unlock()
		return
	}
	w.woke[model] = time.Now()
	w.mu.Unlock()
	rows, err := w.store.be.list(ctx, river.NewJobListParams().Kinds(taskArgs{}.Kind()).States(rivertype.JobStateScheduled).
		OrderBy(river.JobListOrderByID, river.SortOrderAsc).First(1000))
	if err != nil {
		return // waking is an optimisation: the ladder still runs
	}
	// the oldest waiters first, and no more than can run at once: room for
	// one is not room for the whole queue
	woken := 0
	for _, r := range rows {
		if woken >= w.o.Concurrency {
			break
		}
		if r.ID == self || waitsFor(r) != "capacity" {
			continue
		}
		var a taskArgs
		if jsonUnmarshal(r.EncodedArgs, &a) != nil || !w.uses(a.Task, model) {
			continue
		}
		if err := w.store.be.retry(ctx, r.ID); err == nil {
			woken++
			w.o.Log("task %d: %s has room again; woken", r.ID, model)
		}
	}
}

// uses reports whether a prompt step of task could be served by model.
func (w *worker) uses(task Task, model string) bool {
	for _, st := range task.Steps {
		if !st.IsPrompt() {
			continue
		}
		for _, c := range w.o.Engine.Candidates(w.request(task, st)) {
			if c.Model == model {
				return true
			}
		}
	}
	return false
}

// stepModel is where a prompt step starts: its own model, else its task's
// chain's first, else the codex chain's.
func (w *worker) stepModel(task Task, step Step) string {
	cfg := w.o.Config
	model := step.Model
	if model == "" && task.Chain != "" && len(cfg.Chains[task.Chain]) > 0 {
		model = cfg.Chains[task.Chain][0]
	}
	if model == "" {
		model = cfg.Chains["codex"][0]
	}
	return model
}

// runStep sends a prompt step through the policy engine, or runs a command
// step under spillway exec. served is the model that answered a prompt.
func (w *worker) runStep(ctx context.Context, task Task, step Step) (out, served string, v classify.Verdict, err error) {
	cfg := w.o.Config
	if step.IsPrompt() {
		model := w.stepModel(task, step)
		m, ok := cfg.Models[model]
		prov := cfg.Providers[m.Provider]
		if !ok {
			return "", "", classify.Verdict{Class: classify.ModelNotFound}, fmt.Errorf("model %q is not configured", model)
		}
		var smu sync.Mutex
		sink := events.SinkFunc(func(r events.Record) {
			if r.Class == string(classify.OK) {
				smu.Lock()
				served = r.Model
				smu.Unlock()
			}
			queueSink{w.o.Events}.Write(r)
		})
		opts := []transport.Option{transport.WithBase(w.base), transport.WithEngine(w.o.Engine), transport.WithEvents(sink)}
		if task.MinTier != "" {
			opts = append(opts, transport.WithMinTier(config.Tier(task.MinTier)))
		}
		tr := transport.New(cfg, opts...)
		h := http.Header{"Content-Type": {"application/json"}}
		var url string
		var body map[string]any
		msgs := []any{}
		if cfg.ProviderType(m.Provider) == "anthropic" {
			url = strings.TrimSuffix(prov.BaseURL, "/") + "/v1/messages"
			h.Set("x-api-key", prov.APIKey.Value)
			h.Set("anthropic-version", "2023-06-01")
			body = map[string]any{"model": model, "max_tokens": 4096, "messages": append(msgs, map[string]any{"role": "user", "content": step.Prompt})}
			if step.System != "" {
				body["system"] = step.System
			}
		} else {
			url = strings.TrimSuffix(prov.BaseURL, "/") + "/chat/completions"
			h.Set("Authorization", "Bearer "+prov.APIKey.Value)
			if step.System != "" {
				msgs = append(msgs, map[string]any{"role": "system", "content": step.System})
			}
			body = map[string]any{"model": model, "messages": append(msgs, map[string]any{"role": "user", "content": step.Prompt})}
		}
		b, err := tr.Call(ctx, url, h, body)
		if err != nil {
			var f *classify.Failure
			if errors.As(err, &f) {
				return "", "", f.Verdict, err
			}
			return "", "", classify.Err(err), err
		}
		smu.Lock()
		defer smu.Unlock()
		return answerText(b), served, classify.Verdict{Class: classify.OK}, nil
	}
	// a command step: the agent under spillway exec, its stdout the output
	var buf bytes.Buffer
	res := agent.Run(ctx, agent.Options{Command: step.Command, Config: cfg, Engine: w.o.Engine, Ladder: []time.Duration{},
		Stdin: strings.NewReader(""), Stdout: &buf, Stderr: io.Discard, Events: w.o.Events, Getenv: func(string) string { return "" }})
	switch {
	case res.ExitCode == 0:
		return strings.TrimSpace(buf.String()), "", classify.Verdict{Class: classify.OK}, nil
	case res.ExitCode == agent.ExitCapacity || res.Class == string(classify.Capacity):
		return "", "", classify.Verdict{Class: classify.Capacity}, errors.New(res.Reason)
	}
	return "", "", classify.Verdict{Class: classify.Class(res.Class)}, fmt.Errorf("exit %d: %s", res.ExitCode, res.Reason)
}

// queueSink marks the library's records as the queue's.
type queueSink struct{ s events.Sink }

func (q queueSink) Write(r events.Record) { r.Source = events.SourceQueue; q.s.Write(r) }

// answerText takes the text out of a Chat Completions or Messages answer.
func answerText(b []byte) string {
	var a struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(b, &a) != nil {
		return string(b)
	}
	if len(a.Choices) > 0 {
		return a.Choices[0].Message.Content
	}
	var parts []string
	for _, c := range a.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "")
}

func clipOutput(s string) string {
	if len(s) > 64<<10 {
		return s[:64<<10] + "…"
	}
	return s
}
