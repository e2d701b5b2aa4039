package queue

import (
	"context"
	"strings"
	"testing"
	"time"
)

// --window quiet: today's default until a quiet window is learned, then
// the learned one, in its own zone, resolved when the task is added and
// again when it is due; saved again, it is replaced.
func TestQuietWindow(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := context.Background()
			noon := time.Date(2026, 11, 25, 12, 0, 0, 0, time.Local)
			w, how, err := s.Window(ctx, "quiet")
			if err != nil || w.Start != 22*60 || !strings.HasPrefix(how, "default 22:00-07:00") {
				t.Fatalf("before any is saved: %+v %q %v", w, how, err)
			}
			if err := s.SaveQuiet(ctx, Quiet{Spec: "13:00-15:00", TZ: "Asia/Tokyo", Basis: "test", SavedAt: noon}); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveQuiet(ctx, Quiet{Spec: "01:00-06:00", TZ: "UTC", Basis: "1200 attempts", SavedAt: noon}); err != nil {
				t.Fatal(err)
			}
			q, ok, err := s.SavedQuiet(ctx)
			if err != nil || !ok || q.Spec != "01:00-06:00" || q.TZ != "UTC" || q.Basis != "1200 attempts" || !q.SavedAt.Equal(noon) {
				t.Fatalf("saved: %+v %v %v", q, ok, err)
			}
			w, how, err = s.Window(ctx, "quiet")
			if err != nil || w.Spec != "quiet" || !strings.HasPrefix(how, "learned 01:00-06:00 UTC") {
				t.Fatalf("learned: %+v %q %v", w, how, err)
			}
			if !w.Contains(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC).In(time.FixedZone("x", 5*3600))) || w.Contains(time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)) {
				t.Fatal("the learned window is not read in its own zone")
			}
			id, err := s.Add(ctx, Task{Name: "batch", Steps: []Step{{Prompt: "p"}}, Window: "quiet"}, noon)
			if err != nil {
				t.Fatal(err)
			}
			in, _ := s.Get(ctx, id)
			if want := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC); !in.ScheduledAt.Equal(want) || in.Window != "quiet" {
				t.Fatalf("scheduled at %v (window %q), want the learned window's next start %v", in.ScheduledAt, in.Window, want)
			}
			for _, bad := range []Quiet{{Spec: "quiet", TZ: "UTC"}, {Spec: "25:00-01:00", TZ: "UTC"}, {Spec: "01:00-02:00", TZ: "Mars/Olympus"}} {
				if err := s.SaveQuiet(ctx, bad); err == nil {
					t.Errorf("%+v was saved", bad)
				}
			}
		})
	}
}

// The gateway keys' daily tokens add up per key and day, in every store.
func TestKeyUsage(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ctx := context.Background()
			if n, err := s.KeyUsed(ctx, "alice", "2026-11-30"); err != nil || n != 0 {
				t.Fatalf("before any use: %d %v", n, err)
			}
			for _, add := range []int64{100, 250} {
				if err := s.KeyAdd(ctx, "alice", "2026-11-30", add); err != nil {
					t.Fatal(err)
				}
			}
			s.KeyAdd(ctx, "alice", "2026-12-01", 7)
			s.KeyAdd(ctx, "bob", "2026-11-30", 9)
			if n, _ := s.KeyUsed(ctx, "alice", "2026-11-30"); n != 350 {
				t.Fatalf("alice used %d, want 350", n)
			}
		})
	}
}
