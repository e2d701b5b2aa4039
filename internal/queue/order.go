package queue

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver"
)

// Within a priority, tasks start in the order they were added, whatever
// happened to them since. River fetches available jobs by priority, then
// scheduled_at, then id (JobGetAvailable, on both drivers), and every wait
// moves scheduled_at: a snooze (capacity, a usage limit, a window, a global
// slot, a stopping runner's hand-back) sets it to when the wait ends, a
// retry to the end of its backoff, a rescue to the moment of the rescue. A
// task that waited would then start behind every task added before its
// wait ended, however much later they were added.
//
// So scheduled_at means only "not before" while a task waits, and the
// place in line is put back when it becomes runnable: orderedDriver wraps
// River's driver so that each fetch first sets the scheduled_at of every
// available job that is due (scheduled_at at or before the fetch's now) to
// its place (created_at, less placeAhead per rank of its minimum tier: the
// metadata's spillway_ahead_ms), then runs River's own fetch, in one
// transaction and at one now. River's fetch, its locking and its decoding
// stay River's; only the order key of a due job is spillway's. The
// alternative, a fetch statement of spillway's own ordering by the place,
// would copy River's locking and attempted_by bookkeeping for each driver.
//
// On Postgres now() is the transaction's start, the same for both
// statements; the normalising update locks only the rows it changes, in id
// order (no deadlock between runners), and a runner whose update meets a
// row another runner's transaction holds waits for it, so no fetch skips
// (SKIP LOCKED) an earlier task that another runner is only putting back in
// its place. On SQLite the transaction is BEGIN IMMEDIATE (one writer) and
// the fetch is given the same now as the update (SQLite's 'now' is per
// statement).
type orderedDriver[TTx any] struct {
	riverdriver.Driver[TTx]
}

// GetExecutor is River's executor with the ordered fetch.
func (d orderedDriver[TTx]) GetExecutor() riverdriver.Executor {
	return orderedExecutor{Executor: d.Driver.GetExecutor(), pg: d.ArgPlaceholder() == "$"}
}

type orderedExecutor struct {
	riverdriver.Executor
	pg bool
}

// JobGetAvailable puts the due available jobs back in their places, then
// fetches as River does.
func (e orderedExecutor) JobGetAvailable(ctx context.Context, p *riverdriver.JobGetAvailableParams) (*riverdriver.JobGetAvailableResult, error) {
	if p.MaxToLock <= 0 {
		return e.Executor.JobGetAvailable(ctx, p)
	}
	tx, err := e.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // after Commit, a no-op
	q := *p
	table := "river_job"
	if e.pg {
		if p.Schema != "" {
			table = pgx.Identifier{p.Schema, "river_job"}.Sanitize()
		}
		place := placeSQL(true, table)
		err = tx.Exec(ctx, `UPDATE `+table+` SET scheduled_at = o.place
			FROM (SELECT id, `+place+` AS place FROM `+table+`
				WHERE state = 'available' AND queue = $1 AND scheduled_at <= coalesce($2::timestamptz, now()) AND scheduled_at <> `+place+`
				ORDER BY id FOR UPDATE) o
			WHERE `+table+`.id = o.id`, p.Queue, p.Now)
	} else {
		now := time.Now()
		if p.Now != nil {
			now = *p.Now
		}
		q.Now = &now
		place := placeSQL(false, table)
		err = tx.Exec(ctx, `UPDATE river_job SET scheduled_at = `+place+`
			WHERE state = 'available' AND queue = ? AND scheduled_at <= ? AND scheduled_at <> `+place, p.Queue, sqliteTime(now))
	}
	if err != nil {
		return nil, err
	}
	res, err := tx.JobGetAvailable(ctx, &q)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

// placeSQL is the place in line of the row of table (or alias) t, in the
// type of its scheduled_at: created_at less its spillway_ahead_ms.
func placeSQL(pg bool, t string) string {
	if pg {
		return t + `.created_at - COALESCE((` + t + `.metadata->>'spillway_ahead_ms')::bigint, 0) * interval '1 millisecond'`
	}
	// River's one time format on SQLite (riversqlite's timeString)
	return `strftime('%Y-%m-%d %H:%M:%f', ` + t + `.created_at, printf('%.3f seconds', -COALESCE(json_extract(` + t + `.metadata, '$.spillway_ahead_ms'), 0) / 1000.0))`
}

// sqliteTime is t as River writes times on SQLite (riversqlite's
// timeString: any other format compares wrong).
func sqliteTime(t time.Time) string {
	return t.UTC().Round(time.Millisecond).Format("2006-01-02 15:04:05.000")
}

// The global limit (queue.global_concurrency) keeps the order too: River's
// fetch hands each runner the first tasks in line, but a runner that
// fetched two for one free slot, or two runners that fetched at once, race
// for it. So a task takes a slot only when no task before it in line (its
// priority, its place, its id) is still to start: fetched and not yet past
// its slot (running, with no spillway_started row of this fetch of it), due and
// not yet fetched, or waiting for a slot. Otherwise it waits for a slot
// itself, and the earlier one takes the free one. A task past its slot
// (or, with no global limit, past the point where it would take one) says
// so in spillway_started, by the fetch that ran it (River's attempted_at,
// new with every fetch, a snooze's too: River's attempt number is not,
// as a snooze gives it back). The row stays when the attempt ends: the
// next fetch of the task is another, so nothing is to be undone, and a
// task that ended is in line no more (no gap in which a task that ended
// but is not yet marked so by River's completer would hold the others).

// startedTable holds the tasks past their slot, by the fetch that ran them
// (attempted_at as text, as the database writes it).
const startedTable = `CREATE TABLE IF NOT EXISTS spillway_started (job_id BIGINT PRIMARY KEY, attempted_at TEXT NOT NULL)`

// started records that task id, in the fetch that runs it now, is past its
// slot.
func (s *Store) started(ctx context.Context, id int64) error {
	at := `attempted_at`
	if s.be.pg() {
		at = `attempted_at::text`
	}
	return s.be.exec(ctx, `INSERT INTO spillway_started (job_id, attempted_at) SELECT id, `+at+` FROM river_job WHERE id = ? AND attempted_at IS NOT NULL
		ON CONFLICT (job_id) DO UPDATE SET attempted_at = excluded.attempted_at`, id)
}

// inLine is the first task before task id in line that is still to start,
// 0 when none is.
func (s *Store) inLine(ctx context.Context, id int64) (int64, error) {
	pg := s.be.pg()
	po, pme := placeSQL(pg, "o"), placeSQL(pg, "me")
	now, slot, at := `strftime('%Y-%m-%d %H:%M:%f', 'now')`, `json_extract(o.metadata, '$.spillway_wait') = 'slot'`, `o.attempted_at`
	if pg {
		now, slot, at = `now()`, `o.metadata->>'spillway_wait' = 'slot'`, `o.attempted_at::text`
	}
	var first int64
	err := s.be.queryRow(ctx, `SELECT o.id FROM river_job o JOIN river_job me ON me.id = ?
		WHERE o.kind = me.kind AND o.queue = me.queue AND o.id <> me.id AND o.state IN ('running', 'available', 'scheduled')
		AND (o.priority, `+po+`, o.id) < (me.priority, `+pme+`, me.id)
		AND ((o.state = 'running' AND NOT EXISTS (SELECT 1 FROM spillway_started g WHERE g.job_id = o.id AND g.attempted_at = `+at+`))
			OR (o.state = 'available' AND o.scheduled_at <= `+now+`)
			OR (o.state IN ('available', 'scheduled') AND `+slot+`))
		ORDER BY o.priority, `+po+`, o.id LIMIT 1`, id).Scan(&first)
	if err != nil && isNoRows(err) {
		return 0, nil
	}
	return first, err
}

// firstWaitingForSlot is the first task in line that waits for a global
// slot, 0 when none does.
func (s *Store) firstWaitingForSlot(ctx context.Context) (int64, error) {
	pg := s.be.pg()
	po, slot := placeSQL(pg, "o"), `json_extract(o.metadata, '$.spillway_wait') = 'slot'`
	if pg {
		slot = `o.metadata->>'spillway_wait' = 'slot'`
	}
	var first int64
	err := s.be.queryRow(ctx, `SELECT o.id FROM river_job o WHERE o.kind = ? AND o.state IN ('available', 'scheduled') AND `+slot+`
		ORDER BY o.priority, `+po+`, o.id LIMIT 1`, taskArgs{}.Kind()).Scan(&first)
	if err != nil && isNoRows(err) {
		return 0, nil
	}
	return first, err
}
