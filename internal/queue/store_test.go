package queue

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/spillway/spillway/internal/pgtest"
)

// stores is the store conformance suite's list: every test of the queue
// that touches a store runs on each of them, a fresh store per test:
// SQLite in a temp file, and Postgres (127.0.0.1:5432, db test, or
// $SPILLWAY_TEST_POSTGRES) in a schema of its own. Without Postgres the
// Postgres case says it was skipped; in CI (CI=true) it fails.
func stores(t *testing.T) map[string]func(t *testing.T) *Store {
	return map[string]func(t *testing.T) *Store{
		"sqlite": func(t *testing.T) *Store {
			s, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "q.db"), "", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		},
		"postgres": func(t *testing.T) *Store {
			url, schema, _ := pgtest.Schema(t)
			s, err := Open(context.Background(), url, "", OpenOptions{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		},
	}
}

func TestStoreAddListGet(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := context.Background()
			noon := time.Date(2026, 11, 25, 12, 0, 0, 0, time.Local)
			now, err := s.Add(ctx, Task{Name: "now", Steps: []Step{{Name: "a", Prompt: "hi"}}, Priority: 1, Tags: []string{"batch-1"}}, noon)
			if err != nil {
				t.Fatal(err)
			}
			later, err := s.Add(ctx, Task{Name: "tonight", Steps: []Step{{Name: "a", Prompt: "hi"}}, Window: "22:00-07:00"}, noon)
			if err != nil {
				t.Fatal(err)
			}
			list, err := s.List(ctx)
			if err != nil || len(list) != 2 {
				t.Fatalf("%v %+v", err, list)
			}
			got, _ := s.Get(ctx, now)
			if got.Name != "now" || got.Status != "queued" || got.Priority != 1 || got.MaxAttempts != 5 || got.Tags[0] != "batch-1" {
				t.Fatalf("now: %+v", got)
			}
			got, _ = s.Get(ctx, later)
			if got.Status != "scheduled" || !got.ScheduledAt.Equal(time.Date(2026, 11, 25, 22, 0, 0, 0, time.Local)) {
				t.Fatalf("tonight: %+v", got)
			}
			if _, err := s.Get(ctx, 999999); err == nil {
				t.Fatal("a missing task was found")
			}
			if _, err := s.Add(ctx, Task{Name: "x", Steps: []Step{{Prompt: "p"}}, Priority: 9}, noon); err == nil {
				t.Fatal("priority 9 accepted")
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	if _, err := Open(context.Background(), "mysql://x", "", OpenOptions{}); err == nil {
		t.Fatal("mysql accepted")
	}
	// a Postgres that cannot be reached is said once, in words
	_, err := Open(context.Background(), "postgres://127.0.0.1:1/x", "", OpenOptions{})
	want := "queue: cannot connect to postgres 127.0.0.1:1/x: dial tcp 127.0.0.1:1: connect: connection refused; check that PostgreSQL runs there and the URL's user, password and database"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// Summary counts as List's statuses do, on every store, without reading
// finished tasks' rows.
func TestSummaryCountsAsListDoes(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := context.Background()
			noon := time.Date(2026, 11, 25, 12, 0, 0, 0, time.Local)
			var ids []int64
			for i := range 7 {
				id, err := s.Add(ctx, Task{Name: fmt.Sprintf("t%d", i), Steps: []Step{{Name: "a", Prompt: "hi"}}}, noon)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if _, err := s.Add(ctx, Task{Name: "tonight", Steps: []Step{{Name: "a", Prompt: "hi"}}, Window: "22:00-07:00"}, noon); err != nil {
				t.Fatal(err)
			}
			set := func(id int64, state, meta string) {
				q, args := `UPDATE river_job SET state = '`+state+`', metadata = '`+meta+`' WHERE id = ?`, []any{id}
				if state != "running" { // a finished task has its time
					q, args = `UPDATE river_job SET state = '`+state+`', metadata = '`+meta+`', finalized_at = ? WHERE id = ?`, []any{noon, id}
				}
				if err := s.be.exec(ctx, q, args...); err != nil {
					t.Fatal(err)
				}
			}
			set(ids[0], "running", `{}`)
			set(ids[1], "completed", `{}`)
			set(ids[2], "completed", `{}`)
			set(ids[3], "discarded", `{}`)
			set(ids[4], "cancelled", `{"spillway_failed":"auth"}`) // ended by spillway: failed
			set(ids[5], "cancelled", `{}`)                         // cancelled by a person
			list, err := s.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			for _, in := range list {
				want[in.Status]++
			}
			counts, running, err := s.Summary(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(counts, want) {
				t.Errorf("Summary %v, List says %v", counts, want)
			}
			if want["succeeded"] != 2 || want["failed"] != 2 || want["cancelled"] != 1 || want["running"] != 1 {
				t.Errorf("the statuses set up: %v", want)
			}
			if len(running) != 1 || running[0].ID != ids[0] || running[0].Name != "t0" {
				t.Errorf("running %+v, want t0", running)
			}
		})
	}
}

// A task woken from a wait is due at once, and fetched in its place in
// line (order.go): before the tasks added after it, not behind every one of
// them; and a heavy-only task's place is ahead of a light one added with it
// (placeAhead).
func TestAWokenTaskKeepsItsPlace(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := context.Background()
			heavy := Task{Name: "waiting", MinTier: "heavy", Steps: []Step{{Prompt: "a"}}}
			waiting, err := s.be.insert(ctx, taskArgs{Task: heavy},
				&river.InsertOpts{Priority: 2, MaxAttempts: 5, ScheduledAt: time.Now().Add(time.Hour), Metadata: []byte(`{"spillway_ahead_ms":3000}`)})
			if err != nil {
				t.Fatal(err)
			}
			light, err := s.Add(ctx, Task{Name: "light", MinTier: "light", Steps: []Step{{Prompt: "b"}}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			plain, err := s.Add(ctx, Task{Name: "plain", Steps: []Step{{Prompt: "c"}}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.be.due(ctx, waiting.ID); err != nil {
				t.Fatal(err)
			}
			if in, _ := s.Get(ctx, waiting.ID); in.Status != "queued" {
				t.Fatalf("the woken task is %q", in.Status)
			}
			var got []int64
			for range 3 {
				got = append(got, fetchOne(t, s))
			}
			if want := []int64{waiting.ID, light, plain}; !slices.Equal(got, want) {
				t.Fatalf("fetched %v, want the woken heavy task, then light, then plain: %v", got, want)
			}
		})
	}
}

// fetchOne fetches the next task as a runner's River client does, and
// returns its id (0 when none is due).
func fetchOne(t *testing.T, s *Store) int64 {
	t.Helper()
	var id int64
	var err error
	switch b := s.be.(type) {
	case *riverBackend[*sql.Tx]:
		id, err = fetchNext(b)
	case *riverBackend[pgx.Tx]:
		id, err = fetchNext(b)
	default:
		t.Fatalf("backend %T", s.be)
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func fetchNext[TTx any](b *riverBackend[TTx]) (int64, error) {
	res, err := b.drv.GetExecutor().JobGetAvailable(context.Background(), &riverdriver.JobGetAvailableParams{
		ClientID: "test", MaxAttemptedBy: 100, MaxToLock: 1, Queue: river.QueueDefault, Schema: b.cfg.Schema})
	if err != nil || len(res.Jobs) == 0 {
		return 0, err
	}
	return res.Jobs[0].ID, nil
}
