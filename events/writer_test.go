package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/redact"
)

// newTestWriter opens a Writer on a fresh file and closes it at the end of
// the test.
func newTestWriter(t *testing.T, maxBytes int64, keep int, opts ...Option) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "events.jsonl")
	w, err := NewWriter(path, maxBytes, keep, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w, path
}

func closeWriter(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func readAll(t *testing.T, path string, read func(string, func(Record) error) error) []Record {
	t.Helper()
	var got []Record
	if err := read(path, func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return got
}

// sameRecord compares two records, timestamps as instants.
func sameRecord(a, b Record) bool {
	if !a.TS.Equal(b.TS) {
		return false
	}
	a.TS, b.TS = time.Time{}, time.Time{}
	return a == b
}

func TestRoundTrip(t *testing.T) {
	plus2 := time.FixedZone("+02", 2*3600)
	full := Record{
		TS: time.Date(2026, 3, 1, 12, 34, 56, 123_000_000, time.UTC), RequestID: "req-1", Attempt: 2,
		Source: SourceGateway, Provider: "openai", Model: "gpt-6.1-sol", RequestedModel: "gpt-6-astra",
		Endpoint: "/v1/responses", Status: 529, Class: "capacity", LatencyMS: 812, TTFBMS: 90,
		ReqBytes: 12345, EstInputTokens: 3000, OutputTokens: 0, Stream: true,
		FallbackFrom: "gpt-6-astra", WaitMS: 30000, Error: "model overloaded",
	}
	tests := []struct {
		name   string
		in     Record
		want   Record // TS compared as an instant
		wantTS string // the raw ts on disk, if checked
	}{
		{name: "all fields", in: full, want: full, wantTS: "2026-03-01T12:34:56.123Z"},
		{name: "zero values", in: Record{TS: full.TS}, want: Record{TS: full.TS}},
		{
			name:   "other zone, sub-millisecond",
			in:     Record{TS: time.Date(2026, 3, 1, 12, 0, 0, 987_654_321, plus2), Source: SourceExec},
			want:   Record{TS: time.Date(2026, 3, 1, 10, 0, 0, 987_000_000, time.UTC), Source: SourceExec},
			wantTS: "2026-03-01T10:00:00.987Z",
		},
		{
			name:   "whole second keeps its fraction",
			in:     Record{TS: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
			want:   Record{TS: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
			wantTS: "2026-03-01T10:00:00.000Z",
		},
		{
			name: "html, unicode and newlines in error",
			in:   Record{TS: full.TS, Error: "<html>\n\t\"bad\" & ünïcødé 🚦</html>"},
			want: Record{TS: full.TS, Error: "<html>\n\t\"bad\" & ünïcødé 🚦</html>"},
		},
		{
			name: "256 KiB error",
			in:   Record{TS: full.TS, Error: strings.Repeat("overloaded ", 25_000)},
			want: Record{TS: full.TS, Error: strings.Repeat("overloaded ", 25_000)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, path := newTestWriter(t, 0, 0)
			w.Write(tt.in)
			closeWriter(t, w)

			got := readAll(t, path, ReadFile)
			if len(got) != 1 || !sameRecord(got[0], tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			raw, _ := os.ReadFile(path)
			if bytes.Count(raw, []byte("\n")) != 1 || !bytes.HasSuffix(raw, []byte("}\n")) {
				t.Errorf("want exactly one line, got %q…", raw[:min(len(raw), 200)])
			}
			if tt.wantTS != "" && !bytes.HasPrefix(raw, []byte(`{"ts":"`+tt.wantTS+`","request_id":`)) {
				t.Errorf("line starts %q, want ts %s first", raw[:min(len(raw), 60)], tt.wantTS)
			}
		})
	}
}

func TestZeroTimestampIsStamped(t *testing.T) {
	w, path := newTestWriter(t, 0, 0)
	before := time.Now().Truncate(time.Millisecond)
	w.Write(Record{RequestID: "r"})
	after := time.Now()
	closeWriter(t, w)
	got := readAll(t, path, ReadFile)
	if len(got) != 1 || got[0].TS.Before(before) || got[0].TS.After(after) {
		t.Fatalf("got %+v, want a ts in [%v, %v]", got, before, after)
	}
}

func TestNewWriterCreatesPrivateFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "events.jsonl")
	w, err := NewWriter(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	closeWriter(t, w)
	for name, want := range map[string]os.FileMode{filepath.Dir(path): 0o700 | os.ModeDir, path: 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	if _, err := NewWriter("", 0, 0); err == nil {
		t.Error("NewWriter(\"\") succeeded")
	}
}

func TestConcurrentWriters(t *testing.T) {
	const goroutines, perG = 50, 200
	w, path := newTestWriter(t, 0, 0, WithQueueSize(goroutines*perG))
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				w.Write(Record{RequestID: fmt.Sprintf("g%02d", g), Attempt: i, Error: strings.Repeat("x", i%32)})
			}
		})
	}
	wg.Wait()
	closeWriter(t, w)
	if d := w.Dropped(); d != 0 {
		t.Fatalf("Dropped() = %d with a queue large enough for everything", d)
	}

	next := map[string]int{} // per goroutine, the Attempt expected next
	for _, r := range readAll(t, path, ReadFile) {
		if r.Attempt != next[r.RequestID] || r.Error != strings.Repeat("x", r.Attempt%32) {
			t.Fatalf("%s: got attempt %d (error len %d), want %d", r.RequestID, r.Attempt, len(r.Error), next[r.RequestID])
		}
		next[r.RequestID]++
	}
	if len(next) != goroutines {
		t.Fatalf("records from %d goroutines, want %d", len(next), goroutines)
	}
	for g, n := range next {
		if n != perG {
			t.Errorf("%s: %d records, want %d", g, n, perG)
		}
	}
}

func TestRotation(t *testing.T) {
	const total = 200
	// Every line has the same length: fixed-width request IDs, fixed ts.
	rec := func(i int) Record {
		return Record{TS: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), RequestID: fmt.Sprintf("req-%04d", i)}
	}
	line := encodeLine(t, rec(0))
	lineLen := int64(len(line))
	const perFile = 7
	maxBytes := perFile*lineLen + lineLen/2 // room for 7 lines, not 8

	tests := []struct {
		name  string
		keep  int
		stale []int // rotated files left by an earlier, larger keep
	}{
		{name: "keep 0", keep: 0, stale: []int{1}},
		{name: "keep 1", keep: 1},
		{name: "keep 3", keep: 3, stale: []int{4, 9}},
		{name: "keep all", keep: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			for _, n := range tt.stale {
				os.WriteFile(rotatedName(path, n), []byte("{}\n"), 0o600)
			}
			w, err := NewWriter(path, maxBytes, tt.keep, WithQueueSize(total))
			if err != nil {
				t.Fatal(err)
			}
			for i := range total {
				w.Write(rec(i))
			}
			closeWriter(t, w)

			rotations := (total - 1) / perFile // full files moved aside
			wantFiles := min(tt.keep, rotations)
			nums, _ := rotatedNumbers(path)
			if len(nums) != wantFiles || (wantFiles > 0 && nums[len(nums)-1] != wantFiles) {
				t.Fatalf("rotated files %v, want 1…%d", nums, wantFiles)
			}
			for _, n := range nums {
				fi, _ := os.Stat(rotatedName(path, n))
				if fi.Size() != perFile*lineLen {
					t.Errorf("%s: %d bytes, want %d full lines", rotatedName(path, n), fi.Size(), perFile)
				}
			}

			got := readAll(t, path, ReadRotated)
			want := total - rotations*perFile + wantFiles*perFile
			if len(got) != want {
				t.Fatalf("read %d records, want %d", len(got), want)
			}
			for i, r := range got { // the newest records, in order
				if r.RequestID != rec(total-want+i).RequestID {
					t.Fatalf("record %d is %s, want %s", i, r.RequestID, rec(total-want+i).RequestID)
				}
			}
		})
	}
}

func TestRotationCountsExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	line := encodeLine(t, Record{RequestID: "a"})
	os.WriteFile(path, line, 0o600)

	w, err := NewWriter(path, int64(2*len(line)-1), 2)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(Record{RequestID: "b"})
	closeWriter(t, w)

	for name, want := range map[string]string{rotatedName(path, 1): "a", path: "b"} {
		got := readAll(t, name, ReadFile)
		if len(got) != 1 || got[0].RequestID != want {
			t.Errorf("%s holds %+v, want only %q", name, got, want)
		}
	}
}

func TestErrorIsRedacted(t *testing.T) {
	tests := []struct{ name, in, secret string }{
		{"openai project key", "Incorrect API key provided: sk-proj-ABCDEFGHIJKLMNOPQRST", "ABCDEFGHIJKLMNOPQRST"},
		{"anthropic key", `invalid x-api-key: sk-ant-api03-abcdefghijklmnop`, "abcdefghijklmnop"},
		{"bearer token", "upstream said: Authorization: Bearer abc.def.ghi-123456", "abc.def.ghi-123456"},
		{"gemini query key", "GET https://x/v1beta/models?key=AIzaSyA1234567890abcdefghij failed", "AIzaSyA1234567890abcdefghij"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, path := newTestWriter(t, 0, 0)
			w.Write(Record{Error: tt.in})
			closeWriter(t, w)
			raw, _ := os.ReadFile(path)
			if bytes.Contains(raw, []byte(tt.secret)) {
				t.Fatalf("secret on disk: %s", raw)
			}
			got := readAll(t, path, ReadFile)
			if len(got) != 1 || got[0].Error != redact.String(tt.in) || !strings.Contains(got[0].Error, "[redacted") {
				t.Fatalf("error on disk %q, want %q", got[0].Error, redact.String(tt.in))
			}
		})
	}
}

// gatedFile is a log file whose writes wait until gate is closed.
type gatedFile struct {
	io.WriteCloser
	gate chan struct{}
}

func (g gatedFile) Write(p []byte) (int, error) {
	<-g.gate
	return g.WriteCloser.Write(p)
}

func withGate(gate chan struct{}) Option {
	return func(c *config) {
		c.open = func(path string) (io.WriteCloser, error) {
			f, err := openAppend(path)
			return gatedFile{f, gate}, err
		}
	}
}

func TestDropsWhenQueueIsFull(t *testing.T) {
	const total = 1000
	gate := make(chan struct{})
	w, path := newTestWriter(t, 0, 0, WithQueueSize(2), withGate(gate))

	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		for i := range total {
			w.Write(Record{RequestID: fmt.Sprint(i)})
		}
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("%d writes against a stuck disk took %v", total, d)
	case <-time.After(10 * time.Second):
		close(gate)
		t.Fatal("Write blocked on a stuck disk")
	}
	if w.Dropped() == 0 {
		t.Fatal("Dropped() = 0 after overfilling a queue of 2")
	}

	// A stuck disk makes Close give up at its deadline, not hang.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close on a stuck disk = %v, want deadline exceeded", err)
	}

	close(gate)
	closeWriter(t, w) // idempotent: waits for the same shutdown
	got, gaps := attempts(readAll(t, path, ReadFile))
	if uint64(len(got))+w.Dropped() != total {
		t.Fatalf("%d on disk + %d dropped != %d written", len(got), w.Dropped(), total)
	}
	// the log says what it lost, each gap between the first and the
	// last of its records' times, once the queue has caught up: not
	// before every record
	var said uint64
	for _, g := range gaps {
		said += g.Lost
		if g.From.IsZero() || g.Until.Before(g.From) || g.Error != queueFull {
			t.Fatalf("gap %+v", g)
		}
	}
	if said != w.Dropped() || len(gaps) > len(got) {
		t.Fatalf("%d gap lines say %d lost, for %d dropped and %d records written", len(gaps), said, w.Dropped(), len(got))
	}
}

// attempts parts what was read into the attempts and the gaps.
func attempts(recs []Record) (got []Record, gaps []Gap) {
	for _, r := range recs {
		if r.Gap != nil {
			gaps = append(gaps, *r.Gap)
			continue
		}
		got = append(got, r)
	}
	return got, gaps
}

func TestAfterClose(t *testing.T) {
	w, path := newTestWriter(t, 0, 0)
	w.Write(Record{RequestID: "before"})
	closeWriter(t, w)
	closeWriter(t, w)

	w.Write(Record{RequestID: "after"})
	if w.Dropped() != 1 {
		t.Errorf("Dropped() = %d after a Write after Close, want 1", w.Dropped())
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}
	if got := readAll(t, path, ReadFile); len(got) != 1 || got[0].RequestID != "before" {
		t.Errorf("file holds %+v, want only the record written before Close", got)
	}
}

func TestFlush(t *testing.T) {
	w, path := newTestWriter(t, 0, 0)
	for round := 1; round <= 3; round++ {
		for range 100 {
			w.Write(Record{})
		}
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, path, ReadFile); len(got) != 100*round {
			t.Fatalf("after Flush %d: %d records on disk, want %d", round, len(got), 100*round)
		}
	}
}

// A record reaches the file soon without Flush, as soon as the queue is idle.
func TestIdleWriterFlushes(t *testing.T) {
	w, path := newTestWriter(t, 0, 0)
	w.Write(Record{RequestID: "tail-f"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if raw, _ := os.ReadFile(path); bytes.Contains(raw, []byte("tail-f")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("record not on disk 5s after Write on an idle writer")
		}
		time.Sleep(time.Millisecond)
	}
}

// failingFile fails every write.
type failingFile struct{ io.WriteCloser }

func (failingFile) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorsAreReportedAndCounted(t *testing.T) {
	var mu sync.Mutex
	var errs []error
	w, _ := newTestWriter(t, 0, 0,
		WithErrorHandler(func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }),
		func(c *config) {
			c.open = func(path string) (io.WriteCloser, error) {
				f, err := openAppend(path)
				return failingFile{f}, err
			}
		})
	for range 3 {
		w.Write(Record{})
		w.Flush(context.Background())
	}
	// Close tries to say the three lost in the log, and cannot
	if err := w.Close(context.Background()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close = %v, want disk full", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "disk full") {
		t.Errorf("errors reported: %v, want disk full", errs)
	}
	if w.Dropped() == 0 {
		t.Error("Dropped() = 0 after failed writes")
	}
}

// halfFile writes half of its first write, then fails it; later writes pass.
type halfFile struct {
	io.WriteCloser
	failed *bool
}

func (h halfFile) Write(p []byte) (int, error) {
	if !*h.failed {
		*h.failed = true
		n, _ := h.WriteCloser.Write(p[:len(p)/2])
		return n, errors.New("disk full")
	}
	return h.WriteCloser.Write(p)
}

func TestPartialWriteSparesTheNextRecord(t *testing.T) {
	failed := false
	w, path := newTestWriter(t, 0, 0, func(c *config) {
		c.open = func(path string) (io.WriteCloser, error) {
			f, err := openAppend(path)
			return halfFile{f, &failed}, err
		}
	})
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"lost", "kept"} {
		w.Write(Record{TS: at.Add(time.Duration(i) * time.Second), RequestID: id})
		w.Flush(context.Background()) // the goroutine is the only one touching failed
	}
	closeWriter(t, w)
	if w.Dropped() != 1 {
		t.Errorf("Dropped() = %d, want 1", w.Dropped())
	}
	var got []string
	var gaps []Gap
	err := ReadFile(path, func(r Record) error {
		if r.Gap != nil {
			gaps = append(gaps, *r.Gap)
		}
		got = append(got, r.RequestID)
		return nil
	})
	var me *MalformedError
	if !slices.Equal(got, []string{"", "kept"}) || !errors.As(err, &me) || !slices.Equal(me.Lines, []int{1}) || me.Cut != 1 {
		t.Errorf("read %q, %#v; want the gap line, the kept record and the fragment on line 1, cut short", got, err)
	}
	want := Gap{Lost: 1, From: at, Until: at, Error: "events: write " + path + ": disk full"}
	if len(gaps) != 1 || gaps[0] != want {
		t.Errorf("gaps %+v, want %+v", gaps, want)
	}
}

func TestNoopSinks(t *testing.T) {
	var nilWriter *Writer
	var n int
	for _, s := range []Sink{Nop{}, nilWriter, SinkFunc(func(Record) { n++ })} {
		s.Write(Record{})
	}
	if n != 1 {
		t.Errorf("SinkFunc called %d times, want 1", n)
	}
	if nilWriter.Dropped() != 0 || nilWriter.Flush(context.Background()) != nil || nilWriter.Close(context.Background()) != nil {
		t.Error("nil *Writer is not a no-op")
	}
}

// encodeLine returns the line a Writer writes for r.
func encodeLine(t *testing.T, r Record) []byte {
	t.Helper()
	w, path := newTestWriter(t, 0, 0)
	w.Write(r)
	closeWriter(t, w)
	line, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// BenchmarkWrite measures what the hot path pays. "enqueue" is a Write that
// queues its record: the background goroutine is held up on a stuck disk,
// and the benchmark empties the queue itself, timer stopped, every
// DefaultQueueSize records, so none is dropped. In "serial" and "parallel"
// a tight loop outruns the disk and most records are dropped (dropped/op):
// the cost under overload. "drained" flushes every 1024 records, so ns/op is
// the whole cost of a record: waking the goroutine, encoding, redaction and
// the write.
func BenchmarkWrite(b *testing.B) {
	rec := Record{
		TS: time.Now(), RequestID: "req_01HZX3V8K2M4N6P8Q0R2S4T6V8", Attempt: 2, Source: SourceGateway,
		Provider: "openai", Model: "gpt-6.1-sol", RequestedModel: "gpt-6-astra", Endpoint: "/v1/responses",
		Status: 529, Class: "capacity", LatencyMS: 812, TTFBMS: 90, ReqBytes: 48213, EstInputTokens: 12000,
		Stream: true, FallbackFrom: "gpt-6-astra", WaitMS: 500, Error: "The model is currently overloaded. Please try again later.",
	}
	run := map[string]func(b *testing.B, w *Writer){
		"enqueue": func(b *testing.B, w *Writer) {
			for len(w.ch) > 0 { // wait until the goroutine holds the stuck record
				time.Sleep(time.Millisecond)
			}
			time.Sleep(10 * time.Millisecond)
			i := 0
			for b.Loop() {
				w.Write(rec)
				if i++; i%DefaultQueueSize == 0 {
					b.StopTimer()
					for range DefaultQueueSize {
						<-w.ch
					}
					b.StartTimer()
				}
			}
		},
		"serial": func(b *testing.B, w *Writer) {
			for b.Loop() {
				w.Write(rec)
			}
		},
		"parallel": func(b *testing.B, w *Writer) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w.Write(rec)
				}
			})
		},
		"drained": func(b *testing.B, w *Writer) {
			i := 0
			for b.Loop() {
				w.Write(rec)
				if i++; i%1024 == 0 {
					w.Flush(context.Background())
				}
			}
			w.Flush(context.Background())
		},
	}
	for _, name := range []string{"enqueue", "serial", "parallel", "drained"} {
		b.Run(name, func(b *testing.B) {
			var opts []Option
			gate := make(chan struct{})
			if name == "enqueue" {
				opts = append(opts, withGate(gate))
			} else {
				close(gate)
			}
			w, err := NewWriter(filepath.Join(b.TempDir(), "events.jsonl"), 0, 0, opts...)
			if err != nil {
				b.Fatal(err)
			}
			if name == "enqueue" {
				w.Write(rec) // the record the goroutine gets stuck writing
			}
			b.ReportAllocs()
			run[name](b, w)
			b.StopTimer()
			if name == "enqueue" {
				close(gate)
			}
			w.Close(context.Background())
			b.ReportMetric(float64(w.Dropped())/float64(b.N), "dropped/op")
		})
	}
}

// A log whose last line was cut off (a crash mid-write) gets its next
// record on a line of its own: appended to the fragment, it would be lost.
func TestRestartOnATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	torn := `{"ts":"2026-11-30T12:00:00.000Z","request_id":"before","attempt":1}` + "\n" + `{"ts":"2026-11-30T12:00:01.000Z","request_id":"cut","att`
	if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(Record{RequestID: "after", Attempt: 1})
	closeWriter(t, w)
	var got []string
	err = ReadFile(path, func(r Record) error { got = append(got, r.RequestID); return nil })
	var me *MalformedError
	if !slices.Equal(got, []string{"before", "after"}) || !errors.As(err, &me) || !slices.Equal(me.Lines, []int{2}) {
		t.Fatalf("read %q, %v; want both records and the fragment on line 2", got, err)
	}
	// a log that ends well gets no blank line
	w, _ = NewWriter(path, 0, 0)
	w.Write(Record{RequestID: "later", Attempt: 1})
	closeWriter(t, w)
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("\n\n")) {
		t.Fatalf("a blank line in the log:\n%s", b)
	}
}

// fakeClock is a clock for the drop reports: AfterFunc's calls wait for
// advance.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	calls []func()
	at    []time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.at = append(c.calls, f), append(c.at, c.now.Add(d))
	return func() bool { return false }
}
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for i := 0; i < len(c.calls); i++ {
		if !c.at[i].After(c.now) {
			due = append(due, c.calls[i])
			c.calls, c.at = slices.Delete(c.calls, i, i+1), slices.Delete(c.at, i, i+1)
			i--
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// Records lost to a full disk are told at once, then at most once a
// minute with the count, and the rest at Close: never silently.
func TestDropsAreTold(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	var told []*DropError
	w, path := newTestWriter(t, 0, 0, WithClock(clk),
		WithErrorHandler(func(err error) {
			var de *DropError
			if !errors.As(err, &de) {
				t.Errorf("told %v, want a *DropError", err)
				return
			}
			mu.Lock()
			told = append(told, de)
			mu.Unlock()
		}),
		func(c *config) {
			c.open = func(path string) (io.WriteCloser, error) {
				f, err := openAppend(path)
				return failingFile{f}, err
			}
		})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(told) }
	for range 5 {
		w.Write(Record{})
		w.Flush(context.Background())
	}
	if n := count(); n != 1 {
		t.Fatalf("%d reports after the first drops, want 1 at once", n)
	}
	clk.advance(DropEvery) // the timer wakes the writer for the four since
	deadline := time.Now().Add(10 * time.Second)
	for count() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	w.Write(Record{})
	if err := w.Close(context.Background()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close = %v, want disk full", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 3 {
		t.Fatalf("%d reports, want the first, the minute's and Close's: %v", len(told), told)
	}
	if !told[0].First || told[0].Count != 1 || told[1].Count != 4 || told[1].Total != 5 || told[2].Count != 1 || told[2].Total != 6 {
		t.Fatalf("reports %+v %+v %+v", *told[0], *told[1], *told[2])
	}
	if msg := told[1].Error(); !strings.Contains(msg, "4 more records were not written to "+path) || !strings.Contains(msg, "disk full") || !strings.Contains(msg, "(5 in all)") {
		t.Fatalf("report %q", msg)
	}
	if w.Dropped() != 6 {
		t.Fatalf("Dropped() = %d", w.Dropped())
	}
}

// fullDisk is a log file on a disk that fills up: while full (room >= 0)
// a write takes the room left and fails as the disk's does.
type fullDisk struct {
	io.WriteCloser
	path string
	room *int
}

func (d fullDisk) Write(p []byte) (int, error) {
	if *d.room < 0 {
		return d.WriteCloser.Write(p)
	}
	n, _ := d.WriteCloser.Write(p[:min(len(p), *d.room)])
	*d.room -= n
	if n < len(p) {
		return n, &fs.PathError{Op: "write", Path: d.path, Err: syscall.ENOSPC}
	}
	return n, nil
}

var update = flag.Bool("update", false, "rewrite testdata/report/lost.jsonl")

// The disk fills up for a while: the records written then are lost, one
// of them cut off mid-line. When writing resumes, one gap line says how
// many were lost, between the first one's time and the last one's, and
// what lost them, before the next record; the reader counts the cut line.
// testdata/report/lost.jsonl is this log (spillway report's tests and
// docs/report.md read it), its path as the default's.
func TestALostStretchIsSaidInTheLog(t *testing.T) {
	room := -1
	w, path := newTestWriter(t, 0, 0, func(c *config) {
		c.open = func(path string) (io.WriteCloser, error) {
			f, err := openAppend(path)
			return fullDisk{f, path, &room}, err
		}
	})
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	write := func(from, to int) {
		for i := from; i < to; i++ {
			class, status, errText := "ok", 200, ""
			if i%4 == 3 {
				class, status, errText = "capacity", 503, "Our servers are currently overloaded. Please try again later."
			}
			w.Write(Record{TS: at.Add(time.Duration(i) * time.Minute), RequestID: fmt.Sprintf("%016x", 0xa11ce000+i), Attempt: 1, Source: SourceGateway,
				Provider: "openai", Model: "gpt-6-astra", RequestedModel: "gpt-6-astra", Endpoint: "/v1/responses", Status: status, Class: class,
				LatencyMS: 900, TTFBMS: 300, ReqBytes: 54000, EstInputTokens: 13500, OutputTokens: 120, Stream: true, Error: errText})
			w.Flush(context.Background()) // the goroutine alone touches room meanwhile
		}
	}
	write(0, 10)
	room = 120 // then the disk is full
	write(10, 25)
	room = -1 // space again
	write(25, 30)
	closeWriter(t, w)
	if w.Dropped() != 15 {
		t.Fatalf("Dropped() = %d, want 15", w.Dropped())
	}
	var lines []string
	err := ReadFile(path, func(r Record) error {
		line := r.RequestID
		if r.Gap != nil {
			line = fmt.Sprintf("gap %+v", *r.Gap)
		}
		lines = append(lines, line)
		return nil
	})
	var me *MalformedError
	if !errors.As(err, &me) || me.Count != 1 || me.Cut != 1 || !slices.Equal(me.Lines, []int{11}) {
		t.Fatalf("read: %#v, want one line cut short, line 11", err)
	}
	gap := Gap{Lost: 15, From: at.Add(10 * time.Minute), Until: at.Add(24 * time.Minute), Error: "write " + path + ": no space left on device"}
	if want := fmt.Sprintf("gap %+v", gap); len(lines) != 16 || lines[9] != fmt.Sprintf("%016x", 0xa11ce009) || lines[10] != want || lines[11] != fmt.Sprintf("%016x", 0xa11ce019) {
		t.Fatalf("read %q\nwant 10 records, %s, then 5 records", lines, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// the gap line has no other key: a reader that knows only attempts
	// gets a record without a time, which it skips
	var keys map[string]any
	if err := json.Unmarshal(bytes.Split(b, []byte("\n"))[11], &keys); err != nil || len(keys) != 1 || keys["gap"] == nil {
		t.Fatalf("the gap line's keys: %v (%v), want only gap", keys, err)
	}
	b = bytes.ReplaceAll(b, []byte(path), []byte("/home/me/.local/state/spillway/events.jsonl"))
	golden := filepath.Join("..", "testdata", "report", "lost.jsonl")
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(golden); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("the log differs from %s (go test ./events -run TestALostStretchIsSaidInTheLog -update rewrites it): %v\n%s", golden, err, b)
	}
}

// A refused record whose time is out of what a gap can say (before 1678
// or after 2261) leaves the gap's times alone: they are never garbage.
func TestAGapSaysOnlyTimesItCanTell(t *testing.T) {
	gate := make(chan struct{})
	w, path := newTestWriter(t, 0, 0, WithQueueSize(1), withGate(gate))
	ok := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	for i := range 50 {
		ts := ok.Add(time.Duration(i) * time.Second)
		if i%2 == 1 {
			ts = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) // a record of its own time, but none a gap can say
		}
		w.Write(Record{RequestID: fmt.Sprint(i), TS: ts})
	}
	close(gate)
	closeWriter(t, w)
	_, gaps := attempts(readAll(t, path, ReadFile))
	if len(gaps) == 0 {
		t.Fatal("no gap line for the records a queue of 1 refused")
	}
	for _, g := range gaps {
		// absent times (zero) say "unknown": a gap of only refused-for-their-time
		// records has none, and which records the queue refuses is up to the race
		if (!g.From.IsZero() && g.From.Before(ok)) || (!g.Until.IsZero() && g.Until.After(ok.Add(50*time.Second))) {
			t.Fatalf("gap %+v: times outside those of its records", g)
		}
	}
}
