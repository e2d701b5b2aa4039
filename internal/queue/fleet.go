package queue

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/internal/fleet"
	"github.com/spillway/spillway/policy"
)

// The queue's database is a fleet store for the runners that share it
// (several `spillway queue run` on one Postgres, with no Redis): the same
// evidence, probe token, paced starts and slots that Redis gives gateways,
// in four tables of spillway's own. Times are the database's own clock
// (no two machines' clocks are compared); each operation is one statement
// that is atomic on its own, so no transaction is held. Evidence is
// polled (every evidencePoll) rather than pushed: one way for both
// databases (SQLite has no LISTEN/NOTIFY), and a queue's tasks last far
// longer than the poll. Runners share a database this way on Postgres;
// the SQLite store serves the conformance suite (and runners on one
// machine, should they share a file).
//
// Slots are numbered below the limit, each a row that one lease holds
// (taken by an insert, or by an update of an expired row, one statement
// each): when the limit shrinks, the leases on higher numbers run out and
// are not replaced.

// evidencePoll is how often a runner reads the evidence others wrote.
const evidencePoll = 250 * time.Millisecond

// evidenceKept is how long evidence rows stay (older ones are deleted).
const evidenceKept = time.Minute

var fleetTables = []string{
	`CREATE TABLE IF NOT EXISTS spillway_fleet_pace (lane TEXT PRIMARY KEY, tat BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS spillway_fleet_slot (lane TEXT NOT NULL, slot INTEGER NOT NULL, member TEXT NOT NULL, until_ms BIGINT NOT NULL, PRIMARY KEY (lane, slot))`,
	`CREATE TABLE IF NOT EXISTS spillway_fleet_token (lane TEXT PRIMARY KEY, owner TEXT NOT NULL, until_ms BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS spillway_fleet_evidence (id {serial}, msg TEXT NOT NULL, at_ms BIGINT NOT NULL)`,
}

// dbFleet is a fleet.Store on the queue's database.
type dbFleet struct{ be backend }

// Fleet is the queue database as a fleet store, for the runners that
// share it.
func (s *Store) Fleet() fleet.Store { return dbFleet{s.be} }

// Postgres reports whether the queue is on Postgres (several runners can
// share it; SQLite's one connection serves one runner).
func (s *Store) Postgres() bool { return s.be.pg() }

var _ fleet.Store = dbFleet{}

// dialect fills in what differs between SQLite and Postgres: {now} (the
// database's clock, in Unix milliseconds) and {serial}.
func dialect(pg bool, q string) string {
	if pg {
		return strings.NewReplacer("{now}", "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT",
			"{serial}", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY").Replace(q)
	}
	return strings.NewReplacer("{now}", "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
		"{serial}", "INTEGER PRIMARY KEY AUTOINCREMENT").Replace(q)
}

// one runs a statement that returns a row or none: it reports which.
func (f dbFleet) one(ctx context.Context, q string, args ...any) (bool, error) {
	var x any
	err := f.be.queryRow(ctx, dialect(f.be.pg(), q), args...).Scan(&x)
	if err != nil && isNoRows(err) {
		return false, nil
	}
	return err == nil, err
}

// Publish implements fleet.Store.
func (f dbFleet) Publish(ctx context.Context, msg []byte) error {
	if err := f.be.exec(ctx, dialect(f.be.pg(), `INSERT INTO spillway_fleet_evidence (msg, at_ms) VALUES (?, {now})`), string(msg)); err != nil {
		return err
	}
	return f.be.exec(ctx, dialect(f.be.pg(), `DELETE FROM spillway_fleet_evidence WHERE at_ms < {now} - ?`), evidenceKept.Milliseconds())
}

// Subscribe implements fleet.Store: it polls the rows of the last
// evidenceOverlap and delivers those it has not seen. Ids are not visible
// in their order (a Postgres insert that took id 41 may commit after one
// that took 42), so a poll never goes by the last id: a row committed
// within evidenceOverlap of its insert is delivered once.
func (f dbFleet) Subscribe(ctx context.Context) (<-chan []byte, <-chan struct{}) {
	out := make(chan []byte, 1024)
	ready := make(chan struct{})
	go func() {
		var seen map[int64]bool // the ids of the last poll's window
		for {
			if rows, err := f.window(ctx); err == nil {
				if seen == nil {
					close(ready) // what was written before the subscription is not delivered
				} else {
					for _, r := range rows {
						if !seen[r.id] {
							select {
							case out <- []byte(r.msg):
							default:
							}
						}
					}
				}
				seen = make(map[int64]bool, len(rows))
				for _, r := range rows {
					seen[r.id] = true
				}
			}
			if !sleep(ctx, evidencePoll) {
				return
			}
		}
	}()
	return out, ready
}

// evidenceOverlap is how far back each poll of the evidence reads.
const evidenceOverlap = 2 * time.Second

type evidenceRow struct {
	id  int64
	msg string
}

// window reads the evidence of the last evidenceOverlap in one query (the
// rows joined into one string: the driver interface has one-row queries),
// in id order.
func (f dbFleet) window(ctx context.Context) ([]evidenceRow, error) {
	q := `SELECT COALESCE(group_concat(id || ' ' || msg, char(10)), '') FROM spillway_fleet_evidence WHERE at_ms >= {now} - ?`
	if f.be.pg() {
		q = `SELECT COALESCE(string_agg(id::text || ' ' || msg, E'\n' ORDER BY id), '') FROM spillway_fleet_evidence WHERE at_ms >= {now} - ?`
	}
	var all string
	if err := f.be.queryRow(ctx, dialect(f.be.pg(), q), evidenceOverlap.Milliseconds()).Scan(&all); err != nil {
		return nil, err
	}
	var rows []evidenceRow
	for line := range strings.SplitSeq(all, "\n") {
		id, msg, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(id, 10, 64)
		if ok && err == nil { // a message is JSON: no raw newline in it
			rows = append(rows, evidenceRow{n, msg})
		}
	}
	slices.SortFunc(rows, func(a, b evidenceRow) int { return cmp.Compare(a.id, b.id) })
	return rows, nil
}

// sleep waits d of real time (the database's clock is real) or until ctx
// ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool { return policy.RealClock{}.Sleep(ctx, d) == nil }

// Turn implements fleet.Store: a GCRA with a burst of one, in one upsert.
func (f dbFleet) Turn(ctx context.Context, key string, gap time.Duration) (time.Duration, error) {
	if gap <= 0 {
		return 0, nil
	}
	ms := max(gap.Milliseconds(), 1)
	ok, err := f.one(ctx, `INSERT INTO spillway_fleet_pace (lane, tat) VALUES (?, {now} + ?)
		ON CONFLICT (lane) DO UPDATE SET tat = {now} + ? WHERE spillway_fleet_pace.tat <= {now} RETURNING tat`, key, ms, ms)
	if err != nil || ok {
		return 0, err
	}
	var wait int64
	err = f.be.queryRow(ctx, dialect(f.be.pg(), `SELECT tat - {now} FROM spillway_fleet_pace WHERE lane = ?`), key).Scan(&wait)
	if err != nil {
		if isNoRows(err) {
			return time.Millisecond, nil
		}
		return 0, err
	}
	return max(time.Duration(wait)*time.Millisecond, time.Millisecond), nil
}

// Lease implements fleet.Store.
func (f dbFleet) Lease(ctx context.Context, key, member string, limit int, ttl time.Duration) (bool, error) {
	if held, err := f.one(ctx, `UPDATE spillway_fleet_slot SET until_ms = {now} + ? WHERE lane = ? AND member = ? AND until_ms > {now} RETURNING slot`,
		ttl.Milliseconds(), key, member); err != nil || held {
		return held, err
	}
	for n := range limit {
		ok, err := f.one(ctx, `INSERT INTO spillway_fleet_slot (lane, slot, member, until_ms) VALUES (?, ?, ?, {now} + ?)
			ON CONFLICT (lane, slot) DO UPDATE SET member = excluded.member, until_ms = excluded.until_ms
			WHERE spillway_fleet_slot.until_ms <= {now} RETURNING slot`, key, n, member, ttl.Milliseconds())
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// Renew implements fleet.Store.
func (f dbFleet) Renew(ctx context.Context, key, member string, ttl time.Duration) error {
	return f.be.exec(ctx, dialect(f.be.pg(), `UPDATE spillway_fleet_slot SET until_ms = {now} + ? WHERE lane = ? AND member = ?`), ttl.Milliseconds(), key, member)
}

// Unlease implements fleet.Store.
func (f dbFleet) Unlease(ctx context.Context, key, member string) error {
	return f.be.exec(ctx, `DELETE FROM spillway_fleet_slot WHERE lane = ? AND member = ?`, key, member)
}

// Take implements fleet.Store.
func (f dbFleet) Take(ctx context.Context, key, owner string, lease time.Duration) (bool, error) {
	return f.one(ctx, `INSERT INTO spillway_fleet_token (lane, owner, until_ms) VALUES (?, ?, {now} + ?)
		ON CONFLICT (lane) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
		WHERE spillway_fleet_token.until_ms <= {now} RETURNING owner`, key, owner, lease.Milliseconds())
}

// Give implements fleet.Store.
func (f dbFleet) Give(ctx context.Context, key, owner string) error {
	return f.be.exec(ctx, `DELETE FROM spillway_fleet_token WHERE lane = ? AND owner = ?`, key, owner)
}
