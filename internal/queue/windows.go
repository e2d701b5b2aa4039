package queue

import (
	"context"
	"fmt"
	"time"
)

// Quiet is the daily quiet window `spillway report --save-windows` learned
// from the user's own history, kept in the queue's database so that every
// runner of a fleet (Postgres) reads the same one.
type Quiet struct {
	Spec    string    `json:"spec"`  // HH:MM-HH:MM
	TZ      string    `json:"tz"`    // the zone its hours are in
	Basis   string    `json:"basis"` // what it was learned from, in words
	SavedAt time.Time `json:"saved_at"`
}

// SaveQuiet stores the learned quiet window, replacing the one before.
func (s *Store) SaveQuiet(ctx context.Context, q Quiet) error {
	if _, err := ParseWindow(q.Spec); err != nil || q.Spec == "quiet" {
		return fmt.Errorf("queue: quiet window %q: a daily window HH:MM-HH:MM is needed", q.Spec)
	}
	if _, err := time.LoadLocation(q.TZ); err != nil {
		return fmt.Errorf("queue: quiet window: time zone %q: %w", q.TZ, err)
	}
	err := s.be.exec(ctx, `INSERT INTO spillway_windows (name, spec, tz, basis, saved_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, tz = excluded.tz, basis = excluded.basis, saved_at = excluded.saved_at`,
		"quiet", q.Spec, q.TZ, q.Basis, q.SavedAt.UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("queue: saving the quiet window: %w", err)
	}
	return nil
}

// SavedQuiet is the learned quiet window, if one was saved.
func (s *Store) SavedQuiet(ctx context.Context) (Quiet, bool, error) {
	var q Quiet
	var at string
	err := s.be.queryRow(ctx, `SELECT spec, tz, basis, saved_at FROM spillway_windows WHERE name = ?`, "quiet").Scan(&q.Spec, &q.TZ, &q.Basis, &at)
	if err != nil {
		if isNoRows(err) {
			return Quiet{}, false, nil
		}
		return Quiet{}, false, fmt.Errorf("queue: reading the quiet window: %w", err)
	}
	q.SavedAt, _ = time.Parse(time.RFC3339, at)
	return q, true, nil
}

// Window resolves a task's window as it stands now: "quiet" is the learned
// quiet window when one is saved, else QuietDefault; how says which.
func (s *Store) Window(ctx context.Context, spec string) (w Window, how string, err error) {
	w, err = ParseWindow(spec)
	if err != nil || w.Spec != "quiet" {
		return w, "", err
	}
	q, ok, err := s.SavedQuiet(ctx)
	if err != nil {
		return w, "", err
	}
	if !ok {
		return w, "default " + QuietDefault + " (no learned window: spillway report --save-windows)", nil
	}
	learned, err := ParseWindow(q.Spec)
	if err != nil {
		return w, "", err
	}
	learned.Spec = "quiet"
	learned.Loc, _ = time.LoadLocation(q.TZ)
	return learned, "learned " + q.Spec + " " + q.TZ + " (" + q.Basis + ")", nil
}

// KeyUsed is the tokens gateway key name used on day (YYYY-MM-DD, UTC).
func (s *Store) KeyUsed(ctx context.Context, name, day string) (int64, error) {
	var n int64
	err := s.be.queryRow(ctx, `SELECT tokens FROM spillway_key_usage WHERE name = ? AND day = ?`, name, day).Scan(&n)
	if err != nil && !isNoRows(err) {
		return 0, fmt.Errorf("queue: key usage: %w", err)
	}
	return n, nil
}

// KeyAdd adds n tokens to gateway key name's use on day.
func (s *Store) KeyAdd(ctx context.Context, name, day string, n int64) error {
	err := s.be.exec(ctx, `INSERT INTO spillway_key_usage (name, day, tokens) VALUES (?, ?, ?)
		ON CONFLICT (name, day) DO UPDATE SET tokens = spillway_key_usage.tokens + excluded.tokens`, name, day, n)
	if err != nil {
		return fmt.Errorf("queue: key usage: %w", err)
	}
	return nil
}
