package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/spillway/spillway/internal/proc"
	"github.com/spillway/spillway/policy"
)

// A runner (one `spillway queue run`) says it is alive in spillway_runner
// every DeadAfter/6, and records in spillway_step_running, per task it
// works, the attempt, the step in flight and the process group (with its
// leader's start time) of that step's agent. River alone rescues a running
// job only by its age, which cannot tell a dead runner's task from a live
// runner's long one: so River's rescue is set past the task timeout (a
// live runner always ends its own task first), and the runners rescue each
// other. A runner whose heartbeat has not moved for its own DeadAfter (or
// the watching runner's, the longer), as the watching runner's clock
// measures it (no two machines' clocks are compared), is dead: the watcher
// removes it, and then every step whose runner is gone is claimed by one
// runner, its agent's process group killed when it is on this machine and
// boot (the group told from a later one with the same id by its leader's
// start time, or, the leader gone, by the members' session), and its task
// handed back to River (its driver's JobSetStateIfRunningMany, the call
// River's own completer makes, with the reason as the attempt's error;
// only if that attempt is still the one running). The task runs again from
// the step in flight, and says so.

// runner is one `queue run`'s identity.
type runner struct {
	id        string
	host      string
	boot      string
	sid       int
	deadAfter time.Duration
}

func newRunner(deadAfter time.Duration) runner {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return runner{id: hex.EncodeToString(b[:]), host: host, boot: proc.BootID(), sid: proc.Session(), deadAfter: deadAfter}
}

// register records r alive at now (again, for a runner that was taken for
// dead: its River jobs are no longer orphans).
func (s *Store) register(ctx context.Context, r runner, now time.Time) error {
	if err := s.be.exec(ctx, `DELETE FROM spillway_runner_dead WHERE id = ?`, r.id); err != nil {
		return err
	}
	pstart, _ := proc.StartTime(os.Getpid())
	return s.be.exec(ctx, `INSERT INTO spillway_runner (id, host, boot, sid, pid, beat, dead_after, started, pstart) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.id, r.host, r.boot, r.sid, os.Getpid(), now.UnixNano(), int64(r.deadAfter), now.UnixNano(), int64(pstart))
}

// runnerColumns are the columns spillway_runner gained after it was first
// made: added to a table an older version made.
var runnerColumns = []string{"started", "pstart"}

// Alone refuses a second runner on a SQLite queue, naming the runner that
// holds it: River on SQLite has the one connection, and a SQLite queue one
// runner. On Postgres it is nil: runners share it.
func (s *Store) Alone(ctx context.Context, now time.Time) error {
	return s.alone(ctx, runner{}, now)
}

// alone is Alone for self (registered), whom only a runner registered
// before it can refuse: of two started at once, the first keeps the file.
func (s *Store) alone(ctx context.Context, self runner, now time.Time) error {
	if s.be.pg() {
		return nil
	}
	host, _ := os.Hostname()
	boot := proc.BootID()
	var after int64
	for {
		var id, rhost, rboot string
		var rowid, pid, pstart, beat, deadAfter, started int64
		err := s.be.queryRow(ctx, `SELECT rowid, id, host, boot, pid, pstart, beat, dead_after, started FROM spillway_runner WHERE rowid > ? ORDER BY rowid LIMIT 1`, after).
			Scan(&rowid, &id, &rhost, &rboot, &pid, &pstart, &beat, &deadAfter, &started)
		if err != nil {
			if isNoRows(err) {
				return nil
			}
			return fmt.Errorf("queue: %w", err)
		}
		after = rowid
		if id == self.id {
			return nil // registered first of those alive
		}
		beating := now.Sub(time.Unix(0, beat)) < time.Duration(deadAfter)
		var alive bool
		if rhost == host && rboot == boot && boot != "" {
			// on this machine: while its process runs (the same pid,
			// started at the same time: pid 1 of a container restarted is
			// not the pid 1 that registered). Without a start time to tell
			// them apart (an older row, a system that does not say), its
			// heartbeat says.
			st, err := proc.StartTime(int(pid))
			switch {
			case pstart == 0 || err != nil:
				alive = proc.Running(int(pid)) && beating
			default:
				alive = proc.Running(int(pid)) && int64(st) == pstart
			}
		} else {
			alive = beating
		}
		if !alive {
			continue // dead: a runner that starts rescues its tasks
		}
		since := ""
		if started > 0 {
			since = ", since " + time.Unix(0, started).Local().Format("2006-01-02 15:04:05")
		}
		return fmt.Errorf("queue: %s has a runner already: pid %d on %s%s; a SQLite queue has one runner: stop that one first, or share a Postgres queue between runners", s.Where, pid, rhost, since)
	}
}

// beat says r is alive at now; false when another runner took r for dead
// (its row is gone).
func (s *Store) beat(ctx context.Context, r runner, now time.Time) (bool, error) {
	var id string
	err := s.be.queryRow(ctx, `UPDATE spillway_runner SET beat = ? WHERE id = ? RETURNING id`, now.UnixNano(), r.id).Scan(&id)
	if err != nil && isNoRows(err) {
		return false, nil
	}
	return err == nil, err
}

// unregister forgets r (it stopped cleanly: its tasks are handed back by
// their own workers).
func (s *Store) unregister(ctx context.Context, r runner) error {
	return s.be.exec(ctx, `DELETE FROM spillway_runner WHERE id = ?`, r.id)
}

// stepStarted records that r runs step i of task id in its attempt.
func (s *Store) stepStarted(ctx context.Context, r runner, id int64, attempt, i int) error {
	if err := s.be.exec(ctx, `DELETE FROM spillway_step_running WHERE job_id = ?`, id); err != nil {
		return err
	}
	return s.be.exec(ctx, `INSERT INTO spillway_step_running (job_id, runner, host, boot, sid, attempt, step, pgid, pstart, why) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, '')`,
		id, r.id, r.host, r.boot, r.sid, attempt, i)
}

// stepProcess records the process group of the agent of the step in flight.
func (s *Store) stepProcess(ctx context.Context, id int64, pgid int) error {
	start, _ := proc.StartTime(pgid)
	return s.be.exec(ctx, `UPDATE spillway_step_running SET pgid = ?, pstart = ? WHERE job_id = ?`, pgid, int64(start), id)
}

// stepInterrupted marks the step in flight of task id as interrupted (why),
// for the run that takes it up again to say.
func (s *Store) stepInterrupted(ctx context.Context, id int64, why string) error {
	return s.be.exec(ctx, `UPDATE spillway_step_running SET runner = '', pgid = 0, why = ? WHERE job_id = ?`, why, id)
}

// stepEnded forgets the step in flight of task id.
func (s *Store) stepEnded(ctx context.Context, id int64) error {
	return s.be.exec(ctx, `DELETE FROM spillway_step_running WHERE job_id = ?`, id)
}

// stepFinished records that the last step of task id finished (its agent,
// if any, is gone): the record stays, with its runner, until River has
// saved the task's completion, so that a runner that dies in between has
// its task handed back (to be completed, not run again: its result is
// saved), not left running until River's own rescue an hour later.
func (s *Store) stepFinished(ctx context.Context, id int64) error {
	return s.be.exec(ctx, `UPDATE spillway_step_running SET pgid = 0, pstart = 0 WHERE job_id = ?`, id)
}

// interrupted is the step of task id that an earlier run left unfinished,
// and why, if one did.
func (s *Store) interrupted(ctx context.Context, id int64) (step int, why string, ok bool) {
	if err := s.be.queryRow(ctx, `SELECT step, why FROM spillway_step_running WHERE job_id = ? AND why <> ''`, id).Scan(&step, &why); err != nil {
		return 0, "", false
	}
	return step, why, true
}

// watcher is what a runner has seen of the others' heartbeats: each
// runner's last beat, and when (on this runner's clock) it first saw it.
type watcher map[string]seenBeat

type seenBeat struct {
	beat  int64
	since time.Time
}

// rescue looks at the other runners' heartbeats at now (this runner's
// clock): one whose beat has not moved for its dead_after (or self's, the
// longer) is removed, and then every step whose runner is gone is claimed,
// its agent killed (on this machine) and its task handed back. It returns
// the tasks handed back.
func (s *Store) rescue(ctx context.Context, self runner, seen watcher, now time.Time) ([]int64, error) {
	after := ""
	for {
		var id string
		var beat, deadAfter int64
		err := s.be.queryRow(ctx, `SELECT id, beat, dead_after FROM spillway_runner WHERE id > ? ORDER BY id LIMIT 1`, after).Scan(&id, &beat, &deadAfter)
		if err != nil {
			if isNoRows(err) {
				break
			}
			return nil, err
		}
		after = id
		if id == self.id {
			continue
		}
		w, ok := seen[id]
		if !ok || w.beat != beat {
			seen[id] = seenBeat{beat, now}
			continue
		}
		if now.Sub(w.since) < max(self.deadAfter, time.Duration(deadAfter)) {
			continue
		}
		// dead: removed, unless it beat meanwhile, and remembered as dead
		// (its River jobs are orphans: see orphans)
		if err := s.be.exec(ctx, `DELETE FROM spillway_runner WHERE id = ? AND beat = ?`, id, beat); err != nil {
			return nil, err
		}
		if err := s.be.exec(ctx, `INSERT INTO spillway_runner_dead (id, at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, now.UnixNano()); err != nil {
			return nil, err
		}
		delete(seen, id)
	}
	// the records of the tasks River has finished are done with
	if err := s.be.exec(ctx, `DELETE FROM spillway_step_running WHERE job_id IN (SELECT id FROM river_job WHERE state IN ('completed', 'cancelled', 'discarded'))`); err != nil {
		return nil, err
	}
	var out []int64
	for {
		var job, pstart int64
		var dead, host, boot string
		var sid, attempt, pgid int
		err := s.be.queryRow(ctx, `SELECT job_id, runner, host, boot, sid, attempt, pgid, pstart FROM spillway_step_running WHERE runner <> '' AND runner NOT IN (SELECT id FROM spillway_runner) LIMIT 1`).
			Scan(&job, &dead, &host, &boot, &sid, &attempt, &pgid, &pstart)
		if err != nil {
			if isNoRows(err) {
				return out, nil
			}
			return out, err
		}
		// claimed by one runner only
		var claimed int64
		if err := s.be.queryRow(ctx, `UPDATE spillway_step_running SET runner = '', pgid = 0, why = 'a crash of its runner' WHERE job_id = ? AND runner = ? RETURNING job_id`, job, dead).Scan(&claimed); err != nil {
			if isNoRows(err) {
				continue // another runner took it
			}
			return out, err
		}
		// its agent must not run on beside the copy that takes over: on
		// this machine and boot, its process group goes
		if pgid > 0 && host == self.host && boot == self.boot {
			proc.KillGroupStarted(pgid, uint64(pstart), sid)
		}
		ok, err := s.be.handBack(ctx, job, attempt, now, "its runner stopped answering; handed back to run again")
		if err != nil {
			return out, err
		}
		if ok {
			out = append(out, job)
		}
	}
}

// orphans hands back the tasks River holds as running for a runner taken
// for dead although no step of theirs was on record: fetched and not yet
// begun, or finished, snoozed or failed with River's record of it not yet
// saved when the runner died. River names the runner that fetched each job
// (attempted_by: the runners give River their ids); only a runner rescue
// removed counts as dead, never one merely unknown (a runner of an older
// version). Each job attempt is handed back once, by one runner.
func (s *Store) orphans(ctx context.Context, now time.Time) ([]int64, error) {
	rows, err := s.be.list(ctx, river.NewJobListParams().Kinds(taskArgs{}.Kind()).States(rivertype.JobStateRunning).First(10000))
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, r := range rows {
		if len(r.AttemptedBy) == 0 {
			continue
		}
		var dead string
		if err := s.be.queryRow(ctx, `SELECT id FROM spillway_runner_dead WHERE id = ?`, r.AttemptedBy[len(r.AttemptedBy)-1]).Scan(&dead); err != nil {
			if isNoRows(err) {
				continue
			}
			return out, err
		}
		var step int64 // a step on record is rescue's (its agent is killed first)
		if err := s.be.queryRow(ctx, `SELECT job_id FROM spillway_step_running WHERE job_id = ? AND runner <> ''`, r.ID).Scan(&step); err == nil {
			continue
		} else if !isNoRows(err) {
			return out, err
		}
		var claimed int64 // one runner hands this attempt back
		if err := s.be.queryRow(ctx, `INSERT INTO spillway_handback (job_id, attempt) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING job_id`, r.ID, r.Attempt).Scan(&claimed); err != nil {
			if isNoRows(err) {
				continue
			}
			return out, err
		}
		ok, err := s.be.handBack(ctx, r.ID, r.Attempt, now, "its runner stopped answering; handed back to run again")
		if err != nil {
			return out, err
		}
		if ok {
			out = append(out, r.ID)
		}
	}
	return out, nil
}

// handBack makes running job id, in its attempt, available again at now,
// with why as that attempt's error (River's own call for a job that failed
// and runs again at once); false when it is not running that attempt.
func (b *riverBackend[TTx]) handBack(ctx context.Context, id int64, attempt int, now time.Time, why string) (bool, error) {
	job, err := b.client.JobGet(ctx, id)
	if err != nil {
		return false, err
	}
	if job.State != rivertype.JobStateRunning || job.Attempt != attempt {
		return false, nil
	}
	errData, _ := json.Marshal(rivertype.AttemptError{At: now.UTC(), Attempt: job.Attempt, Error: why})
	// due now on River's clock (the wall clock's), and fetched in its place
	// in line (order.go), not behind the tasks added since it started
	p := riverdriver.JobSetStateErrorAvailable(id, time.Now().UTC(), errData, nil)
	rows, err := b.drv.GetExecutor().JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
		ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData}, FinalizedAt: []*time.Time{p.FinalizedAt},
		MetadataDoMerge: []bool{false}, MetadataUpdates: [][]byte{nil}, ScheduledAt: []*time.Time{p.ScheduledAt},
		Schema: b.cfg.Schema, State: []rivertype.JobState{p.State},
	})
	if err != nil {
		return false, err
	}
	return len(rows) > 0, nil
}

// await waits d on clk, until ctx ends: a timer's wait, which a fake
// clock's owner moves on (a fake clock's Sleep moves time itself, and a
// loop of them would race its time ahead of the test's).
func await(ctx context.Context, clk policy.Clock, d time.Duration) error {
	due := make(chan struct{})
	stop := clk.AfterFunc(d, func() { close(due) })
	defer stop()
	select {
	case <-due:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keepAlive beats for r and rescues dead runners' tasks, on clk, until ctx
// ends.
func (s *Store) keepAlive(ctx context.Context, clk policy.Clock, r runner, log func(string, ...any)) {
	every := r.deadAfter / 6
	seen := watcher{}
	for checks := 1; ; checks++ {
		if err := await(ctx, clk, every); err != nil {
			return
		}
		now := clk.Now()
		alive, err := s.beat(ctx, r, now)
		switch {
		case err != nil && ctx.Err() == nil:
			log("heartbeat: %v", err)
		case err == nil && !alive:
			// another runner took this one for dead (it was silent too
			// long: a stalled machine?) and handed its tasks back
			log("this runner was taken for dead and its tasks handed back; it goes on, registered again")
			_ = s.register(ctx, r, now)
		}
		if checks%2 == 0 {
			ids, err := s.rescue(ctx, r, seen, now)
			if err == nil {
				var more []int64
				more, err = s.orphans(ctx, now)
				ids = append(ids, more...)
			}
			if err != nil && ctx.Err() == nil {
				log("rescue: %v", err)
			}
			for _, id := range ids {
				log("task %d: its runner stopped answering; handed back to run again", id)
			}
		}
	}
}
