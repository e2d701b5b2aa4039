package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, no cgo

	"github.com/spillway/spillway/config"
)

// Task is what `spillway queue add` stores: one or more steps and how to
// schedule them.
type Task struct {
	Name        string    `json:"name"`
	Steps       []Step    `json:"steps"`
	Priority    int       `json:"priority"` // 1 (first) .. 4
	MinTier     string    `json:"min_tier,omitempty"`
	Chain       string    `json:"chain,omitempty"`
	Window      string    `json:"window,omitempty"`
	Deadline    time.Time `json:"deadline,omitzero"`
	MaxAttempts int       `json:"max_attempts"`
	Tags        []string  `json:"tags,omitempty"`
}

// taskArgs is the River job of a task.
type taskArgs struct {
	Task Task `json:"task"`
}

// Kind names spillway's job kind in River.
func (taskArgs) Kind() string { return "spillway_task" }

// Info is a task's state as `queue ls` and `queue show` tell it.
type Info struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Status      string    `json:"status"`
	Priority    int       `json:"priority"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	ScheduledAt time.Time `json:"scheduled_at"`
	Errors      []string  `json:"errors,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	// Window is the task's run window as it was given ("quiet" resolves
	// when the task is due: Store.Window).
	Window string `json:"window,omitempty"`
	// StartedAt is when the task's current attempt started (running
	// tasks).
	StartedAt time.Time `json:"started_at,omitzero"`
	// FinishedAt is when the task completed, failed or was cancelled.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Class is the failure class of a task that failed in a way no retry
	// can fix (auth, quota, bad_request, content_filter, …).
	Class string `json:"class,omitempty"`
	// Runnable: the task runs now or can start now (not waiting for a
	// window, capacity or its next retry).
	Runnable bool `json:"-"`
}

// backend hides the driver's transaction type (database/sql for SQLite,
// pgx for Postgres) behind the calls the store makes.
type backend interface {
	insert(ctx context.Context, a taskArgs, o *river.InsertOpts) (*rivertype.JobRow, error)
	list(ctx context.Context, p *river.JobListParams) ([]*rivertype.JobRow, error)
	get(ctx context.Context, id int64) (*rivertype.JobRow, error)
	retry(ctx context.Context, id int64) error
	// due makes a waiting (scheduled or snoozed) task due now; the fetch
	// puts it in its place in line (order.go). A task no longer waiting is
	// left as it is.
	due(ctx context.Context, id int64) error
	cancel(ctx context.Context, id int64) error
	purge(ctx context.Context) (int, error)
	// exec and queryRow run spillway's own SQL (written with ? placeholders).
	exec(ctx context.Context, sql string, args ...any) error
	queryRow(ctx context.Context, sql string, args ...any) riverdriver.Row
	// worker starts a client that works the queue until ctx ends.
	// id is the runner's: River records it in each job it fetches
	// (attempted_by), which is how a dead runner's jobs are found.
	work(ctx context.Context, id string, workers *river.Workers, concurrency int, taskTimeout time.Duration, logger *slog.Logger) (stop func(context.Context) error, err error)
	// pg reports whether the database is Postgres (else SQLite).
	pg() bool
	// handBack makes a running job available again (runner.go).
	handBack(ctx context.Context, id int64, attempt int, now time.Time, why string) (bool, error)
}

type riverBackend[TTx any] struct {
	client *river.Client[TTx]
	drv    riverdriver.Driver[TTx]
	cfg    *river.Config
}

func (b *riverBackend[TTx]) retry(ctx context.Context, id int64) error {
	_, err := b.client.JobRetry(ctx, id)
	return err
}

// due is written in SQL because River has no call that makes a snoozed
// job due but JobRetry, which refuses an available one. Its created_at is
// a time before now on the database's own clock, in River's own format.
func (b *riverBackend[TTx]) due(ctx context.Context, id int64) error {
	return b.exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = created_at WHERE id = ? AND state IN ('available', 'scheduled')`, id)
}

func (b *riverBackend[TTx]) cancel(ctx context.Context, id int64) error {
	_, err := b.client.JobCancel(ctx, id)
	return err
}

func (b *riverBackend[TTx]) purge(ctx context.Context) (int, error) {
	n := 0
	for { // River deletes at most 10 000 a call
		res, err := b.client.JobDeleteMany(ctx, river.NewJobDeleteManyParams().
			States(rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded).First(10000))
		if err != nil {
			return 0, err
		}
		n += len(res.Jobs)
		if len(res.Jobs) < 10000 {
			break
		}
	}
	for _, q := range []string{
		`DELETE FROM spillway_steps WHERE job_id NOT IN (SELECT id FROM river_job)`,
		`DELETE FROM spillway_results WHERE job_id NOT IN (SELECT id FROM river_job)`,
		`DELETE FROM spillway_step_running WHERE job_id NOT IN (SELECT id FROM river_job)`,
		`DELETE FROM spillway_handback WHERE job_id NOT IN (SELECT id FROM river_job)`,
		`DELETE FROM spillway_started WHERE job_id NOT IN (SELECT id FROM river_job)`,
	} {
		if err := b.exec(ctx, q); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (b *riverBackend[TTx]) pg() bool { return b.drv.ArgPlaceholder() == "$" }

func (b *riverBackend[TTx]) sql(q string) string {
	if b.drv.ArgPlaceholder() != "$" {
		return q
	}
	var out strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&out, "$%d", n)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

func (b *riverBackend[TTx]) exec(ctx context.Context, q string, args ...any) error {
	return b.drv.GetExecutor().Exec(ctx, b.sql(q), args...)
}

func (b *riverBackend[TTx]) queryRow(ctx context.Context, q string, args ...any) riverdriver.Row {
	return b.drv.GetExecutor().QueryRow(ctx, b.sql(q), args...)
}

func (b *riverBackend[TTx]) work(ctx context.Context, id string, workers *river.Workers, concurrency int, taskTimeout time.Duration, logger *slog.Logger) (func(context.Context) error, error) {
	cfg := *b.cfg
	cfg.ID = id
	cfg.Logger = logger // River's own warnings go where the runner's events go, never into stdout
	cfg.Workers = workers
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: concurrency}}
	cfg.FetchPollInterval = 100 * time.Millisecond
	cfg.FetchCooldown = 50 * time.Millisecond
	// A task may run long (an agent), up to taskTimeout. River's rescue of
	// a job by its age comes an hour after that, so it never takes a live
	// runner's task (which ends by then): a dead runner's tasks are handed
	// back by the runners' heartbeats (runner.go), within a minute.
	cfg.JobTimeout = taskTimeout
	cfg.RescueStuckJobsAfter = taskTimeout + time.Hour
	client, err := river.NewClient(b.drv, &cfg)
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	return client.Stop, nil
}

func (b *riverBackend[TTx]) insert(ctx context.Context, a taskArgs, o *river.InsertOpts) (*rivertype.JobRow, error) {
	res, err := b.client.Insert(ctx, a, o)
	if err != nil {
		return nil, err
	}
	return res.Job, nil
}

func (b *riverBackend[TTx]) list(ctx context.Context, p *river.JobListParams) ([]*rivertype.JobRow, error) {
	res, err := b.client.JobList(ctx, p)
	if err != nil {
		return nil, err
	}
	return res.Jobs, nil
}

func (b *riverBackend[TTx]) get(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	return b.client.JobGet(ctx, id)
}

// Store is the durable task store: River on SQLite (one file, no server)
// or on Postgres (teams, many workers).
type Store struct {
	Where string // a description of the database, without credentials
	be    backend
	close func()
}

// OpenOptions tune Open.
type OpenOptions struct {
	// Schema puts River's and spillway's tables in a Postgres schema
	// (tests use one each); empty means the connection's default.
	Schema string
}

// sqliteFile is the file a "sqlite" or "sqlite:PATH" database names
// (ok false for any other); mine: the default location, spillway's to make.
func sqliteFile(db, dataDir string) (path string, mine, ok bool) {
	if db != "sqlite" && !strings.HasPrefix(db, "sqlite:") {
		return "", false, false
	}
	path = strings.TrimPrefix(strings.TrimPrefix(db, "sqlite"), ":")
	if path == "" {
		return filepath.Join(dataDir, "queue.db"), true, true
	}
	return path, false, true
}

// Exists reports whether the queue database db names is there to open
// without making it: a Postgres URL always is, a SQLite file when it
// exists.
func Exists(db, dataDir string) bool {
	path, _, ok := sqliteFile(db, dataDir)
	if !ok {
		return db != ""
	}
	_, err := os.Stat(path)
	return err == nil
}

// Open opens (creating and migrating as needed) the store named by db:
// "sqlite" (a file under dataDir), "sqlite:PATH", or a postgres:// URL.
func Open(ctx context.Context, db, dataDir string, o OpenOptions) (*Store, error) {
	cfg := &river.Config{
		// keep finished tasks: their results and status are the point
		CompletedJobRetentionPeriod: -1,
		CancelledJobRetentionPeriod: -1,
		DiscardedJobRetentionPeriod: -1,
		Schema:                      o.Schema,
	}
	path, mine, isSQLite := sqliteFile(db, dataDir)
	switch {
	case isSQLite:
		if mine {
			// the default location is spillway's to make
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return nil, fmt.Errorf("queue: %w", err)
			}
		} else if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
			// a path of the user's: a typo must not start an empty queue
			return nil, fmt.Errorf("queue: database %s: the directory %s does not exist (create it, or leave --db out for the default location)", path, filepath.Dir(path))
		}
		// WAL and a busy timeout so `queue add` can write while `queue run`
		// works; one connection, as River on SQLite requires.
		sdb, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("queue: %s: %w", path, err)
		}
		sdb.SetMaxOpenConns(1)
		sdb.SetConnMaxLifetime(0)
		cfg.Schema = ""
		s, err := open(ctx, riverdriver.Driver[*sql.Tx](orderedDriver[*sql.Tx]{riversqlite.New(sdb)}), cfg, "sqlite "+path)
		if err != nil {
			sdb.Close()
			return nil, err
		}
		s.close = func() { sdb.Close() }
		return s, nil
	case strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://"):
		pcfg, err := pgxpool.ParseConfig(db)
		if err != nil {
			return nil, fmt.Errorf("queue: the postgres URL: %w", err)
		}
		if o.Schema != "" {
			pcfg.ConnConfig.RuntimeParams["search_path"] = o.Schema
		}
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return nil, fmt.Errorf("queue: postgres %s: %w", pcfg.ConnConfig.Host, err)
		}
		where := fmt.Sprintf("postgres %s:%d/%s", pcfg.ConnConfig.Host, pcfg.ConnConfig.Port, pcfg.ConnConfig.Database)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err != nil {
			// said once, in words, before River's migration would quote
			// it (and pgx each address it dialled)
			pool.Close()
			return nil, fmt.Errorf("queue: cannot connect to %s: %s; check that PostgreSQL runs there and the URL's user, password and database", where, pgCause(err))
		}
		s, err := open(ctx, riverdriver.Driver[pgx.Tx](orderedDriver[pgx.Tx]{riverpgxv5.New(pool)}), cfg, where)
		if err != nil {
			pool.Close()
			return nil, err
		}
		s.close = pool.Close
		return s, nil
	}
	return nil, fmt.Errorf("queue: database %q: allowed: sqlite, sqlite:PATH, or a postgres:// URL", db)
}

// pgCause is the last line of a connection error of pgx (which lists each
// address it tried), without pgx's prefixes.
func pgCause(err error) string {
	msg := strings.TrimSpace(err.Error())
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	for _, p := range []string{"dial error: ", "server error: "} {
		if _, after, ok := strings.Cut(msg, p); ok {
			msg = after
		}
	}
	return msg
}

func open[TTx any](ctx context.Context, drv riverdriver.Driver[TTx], cfg *river.Config, where string) (*Store, error) {
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Schema: cfg.Schema})
	if err != nil {
		return nil, fmt.Errorf("queue: %s: %w", where, err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("queue: %s: migrating: %w", where, err)
	}
	client, err := river.NewClient(drv, cfg) // insert and read; `queue run` adds workers
	if err != nil {
		return nil, fmt.Errorf("queue: %s: %w", where, err)
	}
	be := &riverBackend[TTx]{client: client, drv: drv, cfg: cfg}
	// spillway's own tables: finished steps (so a failed or killed task
	// resumes at the step that did not finish) and finished tasks (so a task
	// whose completion River had not yet saved when its worker died is never
	// run again).
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS spillway_steps (job_id BIGINT NOT NULL, step INTEGER NOT NULL, output TEXT NOT NULL, finished_at TEXT NOT NULL, PRIMARY KEY (job_id, step))`,
		`CREATE TABLE IF NOT EXISTS spillway_results (job_id BIGINT PRIMARY KEY, output TEXT NOT NULL, finished_at TEXT NOT NULL)`,
		// the runners alive, and the step each task runs (runner.go)
		`CREATE TABLE IF NOT EXISTS spillway_runner (id TEXT PRIMARY KEY, host TEXT NOT NULL, boot TEXT NOT NULL, sid INTEGER NOT NULL, pid INTEGER NOT NULL, beat BIGINT NOT NULL, dead_after BIGINT NOT NULL,
			started BIGINT NOT NULL DEFAULT 0, pstart BIGINT NOT NULL DEFAULT 0)`,
		// the gateway keys' daily tokens (windows.go)
		`CREATE TABLE IF NOT EXISTS spillway_key_usage (name TEXT NOT NULL, day TEXT NOT NULL, tokens BIGINT NOT NULL, PRIMARY KEY (name, day))`,
		// the learned quiet window (windows.go)
		`CREATE TABLE IF NOT EXISTS spillway_windows (name TEXT PRIMARY KEY, spec TEXT NOT NULL, tz TEXT NOT NULL, basis TEXT NOT NULL, saved_at TEXT NOT NULL)`,
		// runners taken for dead (runner.go: whose River jobs are orphans),
		// and the hand-backs made, one per job attempt
		`CREATE TABLE IF NOT EXISTS spillway_runner_dead (id TEXT PRIMARY KEY, at BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS spillway_handback (job_id BIGINT NOT NULL, attempt INTEGER NOT NULL, PRIMARY KEY (job_id, attempt))`,
		`CREATE TABLE IF NOT EXISTS spillway_step_running (job_id BIGINT PRIMARY KEY, runner TEXT NOT NULL, host TEXT NOT NULL, boot TEXT NOT NULL, sid INTEGER NOT NULL, attempt INTEGER NOT NULL, step INTEGER NOT NULL, pgid INTEGER NOT NULL, pstart BIGINT NOT NULL, why TEXT NOT NULL)`,
	} {
		if err := be.exec(ctx, q); err != nil {
			return nil, fmt.Errorf("queue: %s: %w", where, err)
		}
	}
	for _, c := range runnerColumns { // added since the table was first made
		var n int
		q := `SELECT COUNT(*) FROM pragma_table_info('spillway_runner') WHERE name = ?`
		if be.pg() {
			q = `SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'spillway_runner' AND table_schema = current_schema() AND column_name = ?`
		}
		if err := be.queryRow(ctx, q, c).Scan(&n); err != nil {
			return nil, fmt.Errorf("queue: %s: %w", where, err)
		}
		if n > 0 {
			continue
		}
		alter := `ALTER TABLE spillway_runner ADD COLUMN ` + c + ` BIGINT NOT NULL DEFAULT 0`
		if be.pg() {
			alter = `ALTER TABLE spillway_runner ADD COLUMN IF NOT EXISTS ` + c + ` BIGINT NOT NULL DEFAULT 0`
		}
		// (on SQLite another process may have added it meanwhile)
		if err := be.exec(ctx, alter); err != nil && !strings.Contains(err.Error(), "duplicate column") {
			return nil, fmt.Errorf("queue: %s: %w", where, err)
		}
	}
	if err := be.exec(ctx, startedTable); err != nil { // the tasks past their slot (order.go)
		return nil, fmt.Errorf("queue: %s: %w", where, err)
	}
	for _, q := range fleetTables { // the runners' shared state (fleet.go)
		if err := be.exec(ctx, dialect(be.pg(), q)); err != nil {
			return nil, fmt.Errorf("queue: %s: %w", where, err)
		}
	}
	return &Store{Where: where, be: be}, nil
}

// Close releases the database.
func (s *Store) Close() {
	if s.close != nil {
		s.close()
	}
}

// Add stores a task and returns its id. A task with a run window is
// scheduled for the window's next start.
func (s *Store) Add(ctx context.Context, t Task, now time.Time) (int64, error) {
	if len(t.Steps) == 0 {
		return 0, errors.New("queue: a task needs at least one step")
	}
	if t.Priority == 0 {
		t.Priority = 2
	}
	if t.Priority < 1 || t.Priority > 4 {
		return 0, fmt.Errorf("queue: priority %d: allowed 1 (first) to 4 (last)", t.Priority)
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = 5
	}
	if t.MaxAttempts < 0 {
		return 0, fmt.Errorf("queue: max attempts %d: give 1 or more (0 is the default, 5)", t.MaxAttempts)
	}
	w, _, err := s.Window(ctx, t.Window)
	if err != nil {
		return 0, fmt.Errorf("queue: %w", err)
	}
	opts := &river.InsertOpts{Priority: t.Priority, MaxAttempts: t.MaxAttempts, Tags: t.Tags}
	if ahead := time.Duration(config.Tier(t.MinTier).Rank()) * placeAhead; ahead > 0 {
		// its place in line: created_at (the database's clock) less this
		// (order.go)
		opts.Metadata, _ = json.Marshal(map[string]int64{"spillway_ahead_ms": ahead.Milliseconds()})
	}
	at := w.Next(now)
	if at.After(now) {
		opts.ScheduledAt = at
	}
	row, err := s.be.insert(ctx, taskArgs{Task: t}, opts)
	if err != nil {
		return 0, fmt.Errorf("queue: %w", err)
	}
	return row.ID, nil
}

// placeAhead is how far ahead of the moment it was added a task's place in
// line is, for each rank of its minimum tier (light 1, medium 2, heavy 3).
// Among tasks of one priority added within a few seconds of one another,
// the most constrained start first: a heavy-only task has one model to
// wait for, and the room a full pool frees now and then is gone if the
// tasks that could have used another model took it before the heavy one's
// turn came (BENCHMARKS.md, resilience). Across longer spans the queue is
// first in, first out, as before.
const placeAhead = time.Second

// List returns every task, newest first.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	rows, err := s.be.list(ctx, river.NewJobListParams().Kinds(taskArgs{}.Kind()).First(10000).OrderBy(river.JobListOrderByID, river.SortOrderDesc))
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	out := make([]Info, 0, len(rows))
	for _, r := range rows {
		out = append(out, infoOf(r))
	}
	return out, nil
}

// Summary counts the tasks by status and lists the running ones, reading
// the rows of unfinished tasks only (at most 10,000 of them: a queue
// longer than that counts 10,000): finished ones are counted in the
// database (a status page asks every few seconds).
func (s *Store) Summary(ctx context.Context) (counts map[string]int, running []Info, err error) {
	rows, err := s.be.list(ctx, river.NewJobListParams().Kinds(taskArgs{}.Kind()).First(10000).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning))
	if err != nil {
		return nil, nil, fmt.Errorf("queue: %w", err)
	}
	counts = map[string]int{}
	for _, r := range rows {
		in := infoOf(r)
		counts[in.Status]++
		if in.Status == "running" {
			running = append(running, in)
		}
	}
	// as Status names them: a cancelled task spillway ended (metadata
	// spillway_failed) failed; one a person cancelled is cancelled
	failed := `COALESCE(json_extract(metadata, '$.spillway_failed'), '') <> ''`
	if s.be.pg() {
		failed = `COALESCE(metadata->>'spillway_failed', '') <> ''`
	}
	var done, bad, cancelled int64
	err = s.be.queryRow(ctx, `SELECT
		COALESCE(SUM(CASE WHEN state = 'completed' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN state = 'discarded' OR (state = 'cancelled' AND `+failed+`) THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN state = 'cancelled' AND NOT (`+failed+`) THEN 1 ELSE 0 END), 0)
		FROM river_job WHERE kind = ? AND state IN ('completed', 'cancelled', 'discarded')`, taskArgs{}.Kind()).Scan(&done, &bad, &cancelled)
	if err != nil {
		return nil, nil, fmt.Errorf("queue: %w", err)
	}
	for status, n := range map[string]int64{"succeeded": done, "failed": bad, "cancelled": cancelled} {
		if n > 0 {
			counts[status] += int(n)
		}
	}
	return counts, running, nil
}

// Retry makes a failed (or cancelled) task run again, alone; a task that
// succeeded, or is running or waiting to run, is refused.
func (s *Store) Retry(ctx context.Context, id int64) error {
	in, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	switch in.Status {
	case "failed", "cancelled":
	case "succeeded":
		return fmt.Errorf("queue: task %d succeeded; retry runs failed or cancelled tasks (add it again to run it anew)", id)
	default:
		return fmt.Errorf("queue: task %d is %s, not failed or cancelled: it will run on its own", id, in.Status)
	}
	if err := s.be.retry(ctx, id); err != nil {
		return fmt.Errorf("queue: retry %d: %w", id, err)
	}
	return nil
}

// Cancel stops a task (a running one at its next step).
func (s *Store) Cancel(ctx context.Context, id int64) error {
	if err := s.be.cancel(ctx, id); err != nil {
		return fmt.Errorf("queue: cancel %d: %w", id, err)
	}
	return nil
}

// Purge deletes finished tasks (succeeded, failed, cancelled) and their
// results; it never touches queued or running ones.
func (s *Store) Purge(ctx context.Context) (int, error) {
	n, err := s.be.purge(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue: purge: %w", err)
	}
	return n, nil
}

// Steps returns the outputs of a task's finished steps, in order.
func (s *Store) Steps(ctx context.Context, id int64) ([]string, error) {
	var outs []string
	for i := 0; ; i++ {
		var out string
		err := s.be.queryRow(ctx, `SELECT output FROM spillway_steps WHERE job_id = ? AND step = ?`, id, i).Scan(&out)
		if err != nil {
			if isNoRows(err) {
				return outs, nil
			}
			return nil, err
		}
		outs = append(outs, out)
	}
}

// Result is a finished task's output, if it has one.
func (s *Store) Result(ctx context.Context, id int64) (string, bool, error) {
	var out string
	err := s.be.queryRow(ctx, `SELECT output FROM spillway_results WHERE job_id = ?`, id).Scan(&out)
	if err != nil {
		if isNoRows(err) {
			return "", false, nil
		}
		return "", false, err
	}
	return out, true, nil
}

// Get returns one task.
func (s *Store) Get(ctx context.Context, id int64) (Info, error) {
	r, err := s.be.get(ctx, id)
	if err != nil {
		if errors.Is(err, river.ErrNotFound) {
			return Info{}, fmt.Errorf("queue: no task %d", id)
		}
		return Info{}, fmt.Errorf("queue: %w", err)
	}
	return infoOf(r), nil
}

// meta is spillway's part of a task's metadata (decoded: Postgres returns
// jsonb with its own spacing).
type meta struct {
	// Wait is what the task is waiting for: "capacity", "reset" (a plan's
	// usage limit's), "window", "slot" (a global slot,
	// queue.global_concurrency) or "".
	Wait string `json:"spillway_wait"`
	// Failed is the class of a failure no retry can fix (auth, quota, a bad
	// request, …): the task was ended at once, without River's retries.
	Failed string `json:"spillway_failed"`
}

func metaOf(r *rivertype.JobRow) meta {
	var m meta
	_ = jsonUnmarshal(r.Metadata, &m)
	return m
}

// waitsFor is what a task is waiting for ("capacity", "reset", "window",
// "slot" or "").
func waitsFor(r *rivertype.JobRow) string { return metaOf(r).Wait }

// Status maps River's job state (and spillway's wait marker) to the
// statuses users see.
func Status(r *rivertype.JobRow) string {
	waiting := waitsFor(r) == "capacity"
	switch waitsFor(r) {
	case "slot":
		if r.State == rivertype.JobStateScheduled || r.State == rivertype.JobStateAvailable {
			return "queued" // for a global slot: it runs as soon as one frees
		}
	case "reset":
		if r.State == rivertype.JobStateScheduled || r.State == rivertype.JobStateAvailable {
			return "waiting for the usage limit's reset"
		}
	}
	switch r.State {
	case rivertype.JobStateAvailable, rivertype.JobStatePending:
		if waiting {
			return "waiting for capacity"
		}
		return "queued"
	case rivertype.JobStateRetryable:
		// a failed step will run again on its own at ScheduledAt
		if waiting {
			return "waiting for capacity"
		}
		return "waiting to retry"
	case rivertype.JobStateScheduled:
		if waiting {
			return "waiting for capacity"
		}
		return "scheduled"
	case rivertype.JobStateRunning:
		return "running"
	case rivertype.JobStateCompleted:
		return "succeeded"
	case rivertype.JobStateDiscarded:
		return "failed"
	case rivertype.JobStateCancelled:
		if metaOf(r).Failed != "" {
			return "failed" // ended by spillway, not by a person
		}
		return "cancelled"
	}
	return string(r.State)
}

func isNoRows(err error) bool {
	return errors.Is(err, sql.ErrNoRows) || strings.Contains(err.Error(), "no rows")
}

func infoOf(r *rivertype.JobRow) Info {
	in := Info{ID: r.ID, Status: Status(r), Priority: r.Priority, Attempt: r.Attempt, MaxAttempts: r.MaxAttempts, ScheduledAt: r.ScheduledAt, Tags: r.Tags,
		Class: metaOf(r).Failed}
	switch r.State {
	case rivertype.JobStateAvailable, rivertype.JobStateRunning, rivertype.JobStatePending:
		in.Runnable = true
	}
	var a taskArgs
	if err := jsonUnmarshal(r.EncodedArgs, &a); err == nil {
		in.Name, in.Window = a.Task.Name, a.Task.Window
	}
	for _, e := range r.Errors {
		// River names its control-flow error type; the reason is ours
		in.Errors = append(in.Errors, strings.TrimPrefix(e.Error, "JobCancelError: "))
	}
	if r.State == rivertype.JobStateRunning && r.AttemptedAt != nil {
		in.StartedAt = *r.AttemptedAt
	}
	if r.FinalizedAt != nil {
		in.FinishedAt = *r.FinalizedAt
	}
	return in
}
