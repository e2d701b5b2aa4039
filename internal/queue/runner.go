package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/spillway/spillway/internal/proc"
	"github.com/spillway/spillway/policy"
)

// A runner (one `spillway queue run`) says it is alive in spillway_runners
// every DeadAfter/6, and records in spillway_running, per task it works,
// the step in flight and the process group (with its leader's start time)
// of that step's agent. River alone rescues a running job only by its age,
// which cannot tell a dead runner's task from a live runner's long one: so
// River's rescue is set past the task timeout (a live runner always ends
// its own task first), and the runners rescue each other. A runner whose
// heartbeat is older than DeadAfter is dead: every other runner (or the
// same machine's next one) kills the process groups it recorded on this
// host, hands its tasks back to River (its driver's
// JobSetStateIfRunningMany, the call River's own completer makes, with the
// reason as the attempt's error), and forgets it. A task handed back runs
// again from the step in flight, and says so.

// runner is one `queue run`'s identity.
type runner struct {
	id   string
	host string
}

func newRunner() runner {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return runner{id: hex.EncodeToString(b[:]), host: host}
}

// register records r alive at now.
func (s *Store) register(ctx context.Context, r runner, now time.Time) error {
	return s.be.exec(ctx, `INSERT INTO spillway_runners (id, host, pid, beat) VALUES (?, ?, ?, ?)`, r.id, r.host, os.Getpid(), now.UnixNano())
}

// beat says r is alive at now.
func (s *Store) beat(ctx context.Context, r runner, now time.Time) error {
	return s.be.exec(ctx, `UPDATE spillway_runners SET beat = ? WHERE id = ?`, now.UnixNano(), r.id)
}

// unregister forgets r (it stopped cleanly: its tasks are handed back by
// their own workers).
func (s *Store) unregister(ctx context.Context, r runner) error {
	return s.be.exec(ctx, `DELETE FROM spillway_runners WHERE id = ?`, r.id)
}

// stepStarted records that r runs step i of task id.
func (s *Store) stepStarted(ctx context.Context, r runner, id int64, i int) error {
	if err := s.be.exec(ctx, `DELETE FROM spillway_running WHERE job_id = ?`, id); err != nil {
		return err
	}
	return s.be.exec(ctx, `INSERT INTO spillway_running (job_id, runner, host, step, pgid, pstart, why) VALUES (?, ?, ?, ?, 0, 0, '')`, id, r.id, r.host, i)
}

// stepProcess records the process group of the agent of the step in flight.
func (s *Store) stepProcess(ctx context.Context, id int64, pgid int) error {
	start, _ := proc.StartTime(pgid)
	return s.be.exec(ctx, `UPDATE spillway_running SET pgid = ?, pstart = ? WHERE job_id = ?`, pgid, int64(start), id)
}

// stepInterrupted marks the step in flight of task id as interrupted (why),
// for the run that takes it up again to say.
func (s *Store) stepInterrupted(ctx context.Context, id int64, why string) error {
	return s.be.exec(ctx, `UPDATE spillway_running SET runner = '', pgid = 0, why = ? WHERE job_id = ?`, why, id)
}

// stepEnded forgets the step in flight of task id.
func (s *Store) stepEnded(ctx context.Context, id int64) error {
	return s.be.exec(ctx, `DELETE FROM spillway_running WHERE job_id = ?`, id)
}

// interrupted is the step of task id that an earlier run left unfinished,
// and why, if one did.
func (s *Store) interrupted(ctx context.Context, id int64) (step int, why string, ok bool) {
	if err := s.be.queryRow(ctx, `SELECT step, why FROM spillway_running WHERE job_id = ? AND why <> ''`, id).Scan(&step, &why); err != nil {
		return 0, "", false
	}
	return step, why, true
}

// rescue hands back the tasks of every runner whose heartbeat is older than
// deadAfter at now, after killing, on this host, the process groups their
// steps started. It returns the tasks handed back.
func (s *Store) rescue(ctx context.Context, self runner, now time.Time, deadAfter time.Duration) ([]int64, error) {
	var out []int64
	horizon := now.Add(-deadAfter).UnixNano()
	for {
		var id, host string
		var beat int64
		err := s.be.queryRow(ctx, `SELECT id, host, beat FROM spillway_runners WHERE beat < ? AND id <> ? ORDER BY beat LIMIT 1`, horizon, self.id).Scan(&id, &host, &beat)
		if err != nil {
			if isNoRows(err) {
				return out, nil
			}
			return out, err
		}
		silent := now.Sub(time.Unix(0, beat)).Round(time.Second)
		for {
			var job int64
			var step, pgid int
			var pstart int64
			var phost string
			err := s.be.queryRow(ctx, `SELECT job_id, step, pgid, pstart, host FROM spillway_running WHERE runner = ? LIMIT 1`, id).Scan(&job, &step, &pgid, &pstart, &phost)
			if err != nil {
				if isNoRows(err) {
					break
				}
				return out, err
			}
			if pgid > 0 && phost == self.host {
				// its agent must not run on beside the copy that takes over
				proc.KillGroupStarted(pgid, uint64(pstart))
			}
			why := fmt.Sprintf("its runner on %s stopped answering %s ago; handed back to run again", host, silent)
			if err := s.stepInterrupted(ctx, job, "a crash of its runner"); err != nil {
				return out, err
			}
			ok, err := s.be.handBack(ctx, job, now, why)
			if err != nil {
				return out, err
			}
			if ok {
				out = append(out, job)
			}
		}
		if err := s.be.exec(ctx, `DELETE FROM spillway_runners WHERE id = ?`, id); err != nil {
			return out, err
		}
	}
}

// handBack makes running job id available again at now, with why as its
// attempt's error (River's own call for a job that failed and runs again
// at once); false when it was not running.
func (b *riverBackend[TTx]) handBack(ctx context.Context, id int64, now time.Time, why string) (bool, error) {
	job, err := b.client.JobGet(ctx, id)
	if err != nil {
		return false, err
	}
	if job.State != rivertype.JobStateRunning {
		return false, nil
	}
	errData, _ := json.Marshal(rivertype.AttemptError{At: now.UTC(), Attempt: job.Attempt, Error: why})
	p := riverdriver.JobSetStateErrorAvailable(id, now.UTC(), errData, nil)
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

// keepAlive beats for r and rescues dead runners' tasks, on clk, until ctx
// ends.
func (s *Store) keepAlive(ctx context.Context, clk policy.Clock, r runner, deadAfter time.Duration, log func(string, ...any)) {
	every := deadAfter / 6
	checks := 0
	for {
		if err := clk.Sleep(ctx, every); err != nil {
			return
		}
		now := clk.Now()
		if err := s.beat(ctx, r, now); err != nil && ctx.Err() == nil {
			log("heartbeat: %v", err)
		}
		if checks++; checks%2 == 0 {
			ids, err := s.rescue(ctx, r, now, deadAfter)
			if err != nil && ctx.Err() == nil {
				log("rescue: %v", err)
			}
			for _, id := range ids {
				log("task %d: its runner stopped answering; handed back to run again", id)
			}
		}
	}
}
