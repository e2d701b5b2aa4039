package events

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/internal/redact"
)

// Sink receives attempt records. Write must not block on I/O: it is called on
// request paths. Packages that produce records take a Sink; pass Nop{} (or a
// nil *Writer) to record nothing.
type Sink interface {
	Write(Record)
}

// Nop is a Sink that discards every record.
type Nop struct{}

// Write discards r.
func (Nop) Write(Record) {}

// SinkFunc adapts a function to a Sink (handy in tests). The function is
// called on the caller's goroutine, so it must be fast and safe for
// concurrent use.
type SinkFunc func(Record)

// Write calls f(r).
func (f SinkFunc) Write(r Record) { f(r) }

// Compile-time interface guards.
var (
	_ Sink = (*Writer)(nil)
	_ Sink = Nop{}
	_ Sink = SinkFunc(nil)
)

// DefaultQueueSize is the number of records a Writer buffers in memory
// before it starts dropping them.
const DefaultQueueSize = 4096

// Option configures a Writer.
type Option func(*config)

type config struct {
	queueSize int
	onError   func(error)
	clock     Clock
	// open opens the log file for appending; tests replace it to slow down
	// or fail the underlying writes.
	open func(path string) (io.WriteCloser, error)
}

// WithQueueSize sets how many records may wait in memory for the disk
// (DefaultQueueSize if n < 1).
func WithQueueSize(n int) Option { return func(c *config) { c.queueSize = n } }

// WithErrorHandler sets a function told of what goes wrong, on the
// background goroutine (it must not block). Records that do not reach the
// file are told as a *DropError: the first at once, then at most one a
// minute with how many were lost since (and a last one at Close), whatever
// lost them (the disk full, a write or open that failed, a queue that the
// disk could not keep up with). Other I/O errors (a rotation's rename)
// are told as they come. Without it, drops are only visible through
// Dropped, Flush and Close.
func WithErrorHandler(fn func(error)) Option { return func(c *config) { c.onError = fn } }

// Clock is the time a Writer tells drops by: policy.Clock, or the wall
// clock's (the default).
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// WithClock sets the clock drops are told by (tests).
func WithClock(c Clock) Option { return func(cf *config) { cf.clock = c } }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// DropEvery is how often, at most, a Writer tells of records it dropped.
const DropEvery = time.Minute

// DropError tells of records that never reached the log.
type DropError struct {
	Path string
	// Count is how many were dropped since the last report, Total how
	// many since the Writer started.
	Count, Total uint64
	// First: this is the first report of the Writer's.
	First bool
	// Err is the last error that lost one; nil when the queue was full
	// (the disk could not keep up).
	Err error
}

func (e *DropError) Error() string {
	why := queueFull
	if e.Err != nil {
		why = e.Err.Error()
	}
	noun := "records were"
	if e.Count == 1 {
		noun = "record was"
	}
	if e.First {
		return fmt.Sprintf("events: %d %s not written to %s: %s", e.Count, noun, e.Path, why)
	}
	return fmt.Sprintf("events: %d more %s not written to %s since the last report (%d in all): %s", e.Count, noun, e.Path, e.Total, why)
}

// Unwrap is the error that lost the records.
func (e *DropError) Unwrap() error { return e.Err }

func openAppend(path string) (io.WriteCloser, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// Writer appends records to a JSONL file from a single background goroutine,
// rotating the file by size. Write only enqueues, so a slow disk never
// slows the caller: when the queue is full the record is dropped and
// counted. All methods are safe for concurrent use, and on a nil *Writer
// they do nothing.
type Writer struct {
	path     string
	maxBytes int64
	keep     int
	cfg      config

	mu     sync.RWMutex // guards closed against Write racing close(ch)
	closed bool
	ch     chan Record

	flushReq chan chan error // Flush asks the goroutine to flush
	dropped  atomic.Uint64
	// the records Write refused (the queue full), for the next gap line:
	// how many, and the first and last of their ts (Unix ns; 0: none)
	qn            atomic.Uint64
	qfrom, quntil atomic.Int64
	closing       sync.Once
	done          chan struct{} // closed when the goroutine has exited
	closeErr      error         // set before done is closed

	// Owned by the background goroutine.
	told     uint64      // drops told so far
	toldAt   time.Time   // when they were last told; zero before the first
	cause    error       // the last error that dropped a record, until told
	tellStop func() bool // the armed timer of the next report, if any
	wake     chan struct{}
	f        io.WriteCloser // nil after a failed open; reopened on the next record
	bw       *bufio.Writer
	size     int64      // bytes in the current file, including bw's buffer
	pend     []pendLine // the lines in bw's buffer, lost if the flush fails
	torn     bool       // a write failed, maybe mid-line: start with a newline
	lost     lostSpan   // records lost and not yet said in the log
	line     []byte
	gapLine  []byte
}

// pendLine is a line in the buffer: its length (with the newline that
// ends a torn one before it, when newline), and the record's ts or the gap
// it says.
type pendLine struct {
	n       int
	newline bool
	ts      time.Time
	gap     lostSpan
	isGap   bool
}

// lostSpan is records lost: how many, the first and last of their ts, and
// the last error that lost one (nil: the queue was full).
type lostSpan struct {
	n           uint64
	from, until time.Time
	cause       error
}

func (l *lostSpan) add(ts time.Time, cause error) {
	l.merge(lostSpan{n: 1, from: ts, until: ts, cause: cause})
}

func (l *lostSpan) merge(o lostSpan) {
	if o.n == 0 {
		return
	}
	l.n += o.n
	if !o.from.IsZero() && (l.from.IsZero() || o.from.Before(l.from)) {
		l.from = o.from
	}
	if o.until.After(l.until) {
		l.until = o.until
	}
	if o.cause != nil {
		l.cause = o.cause
	}
}

// gap is l as its gap line says it.
func (l *lostSpan) gap() Gap {
	g := Gap{Lost: l.n, From: l.from, Until: l.until, Error: queueFull}
	var pe *fs.PathError
	switch {
	case errors.As(l.cause, &pe):
		g.Error = pe.Error() // "write PATH: no space left on device"
	case l.cause != nil:
		g.Error = l.cause.Error()
	}
	return g
}

// queueFull is why records are lost when the disk was not failing.
const queueFull = "the queue of records waiting for the disk was full: the disk could not keep up"

// NewWriter opens path for appending (creating its directory with mode 0700
// and the file with mode 0600) and starts the background goroutine. When
// writing a record would take the file past maxBytes, the file is rotated:
// path.keep is deleted, path.N renamed to path.N+1 and path to path.1, so at
// most keep old files remain (keep 0 simply starts the file over). maxBytes
// <= 0 disables rotation. Call Close to flush and stop.
func NewWriter(path string, maxBytes int64, keep int, opts ...Option) (*Writer, error) {
	if path == "" {
		return nil, errors.New("events: empty log path")
	}
	cfg := config{queueSize: DefaultQueueSize, open: openAppend, clock: wallClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.queueSize < 1 {
		cfg.queueSize = DefaultQueueSize
	}
	w := &Writer{
		path:     path,
		maxBytes: maxBytes,
		keep:     max(keep, 0),
		cfg:      cfg,
		ch:       make(chan Record, cfg.queueSize),
		flushReq: make(chan chan error),
		done:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		bw:       bufio.NewWriterSize(nil, 64<<10),
	}
	if err := w.openFile(); err != nil {
		return nil, err
	}
	go w.run()
	return w, nil
}

// Write enqueues r without blocking. A zero r.TS is set to the current
// time. If the queue is full or the Writer is closed, r is dropped and
// counted in Dropped.
func (w *Writer) Write(r Record) {
	if w == nil {
		return
	}
	if r.TS.IsZero() {
		r.TS = time.Now()
	}
	w.mu.RLock()
	if !w.closed {
		select {
		case w.ch <- r:
			w.mu.RUnlock()
			return
		default:
		}
	}
	w.mu.RUnlock()
	w.dropped.Add(1)
	// for the gap line, without a lock (a drop costs what a write does):
	// the count is exact; a drop racing sayGap may have its time said
	// in one gap and its count in the next
	// (a time UnixNano cannot say, or the zero time, is not one: 0 is
	// "none yet", and write refuses such a record too)
	if y := r.TS.Year(); y > 1678 && y < 2262 {
		ns := r.TS.UnixNano()
		for v := w.qfrom.Load(); (v == 0 || ns < v) && !w.qfrom.CompareAndSwap(v, ns); v = w.qfrom.Load() {
		}
		for v := w.quntil.Load(); ns > v && !w.quntil.CompareAndSwap(v, ns); v = w.quntil.Load() {
		}
	}
	w.qn.Add(1)
}

// Dropped reports how many records never reached the file: refused because
// the queue was full or the Writer closed, or lost to an open or write
// error. (A write that fails part-way may leave part of a line in the file;
// the next record starts on a new line and readers report the fragment as
// malformed.) The log says them too: when a line is written again after
// records were lost, a gap line (Record.Gap) says how many and between
// which times, before it.
func (w *Writer) Dropped() uint64 {
	if w == nil {
		return 0
	}
	return w.dropped.Load()
}

// Flush waits until every record enqueued before the call has been written
// to the file (not fsynced), or until ctx is done. After Close it waits for
// Close to finish and returns its result.
func (w *Writer) Flush(ctx context.Context) error {
	if w == nil {
		return nil
	}
	reply := make(chan error, 1)
	select {
	case w.flushReq <- reply:
	case <-w.done:
		return w.closeErr
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting records, writes everything already queued, flushes
// and closes the file. It returns ctx.Err() if ctx ends first (the
// goroutine then finishes in the background). Close is idempotent: later
// calls wait for the same shutdown and return the same error.
func (w *Writer) Close(ctx context.Context) error {
	if w == nil {
		return nil
	}
	w.closing.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.ch)
		w.mu.Unlock()
	})
	select {
	case <-w.done:
		return w.closeErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tsLayout is ts as written: always UTC with exactly three fractional
// digits, so that lines compare as text in time order (time.Time's own
// encoding keeps the zone and trims trailing zeros).
const tsLayout = "2006-01-02T15:04:05.000Z" // with a UTC time

// run is the background goroutine: it owns the file.
func (w *Writer) run() {
	defer close(w.done)
	for {
		select {
		case r, ok := <-w.ch:
			if !ok {
				w.sayGap(true)
				w.closeErr = w.closeFile()
				if w.tellStop != nil {
					w.tellStop()
				}
				w.tell(true) // the last word on what was lost
				return
			}
			w.write(r)
			if len(w.ch) == 0 {
				// Momentarily idle: the queue caught up, so say what it
				// lost, and let readers (tail -f) see what we have.
				w.sayGap(true)
				w.flush()
			}
			w.tell(false)
		case reply := <-w.flushReq:
			// Everything enqueued before Flush was called is in ch now.
			for n := len(w.ch); n > 0; n-- {
				r, ok := <-w.ch
				if !ok {
					break
				}
				w.write(r)
			}
			w.sayGap(true)
			err := w.flush()
			w.tell(false)
			reply <- err
		case <-w.wake:
			w.tellStop = nil
			w.tell(false)
		}
	}
}

// write encodes r as one line, after the gap line of the records the
// goroutine lost before it, if it lost any.
func (w *Writer) write(r Record) {
	ts := r.TS.UTC()
	if y := ts.Year(); y < 0 || y > 9999 {
		w.drop(time.Time{}, fmt.Errorf("events: record %q: timestamp %v out of range", r.RequestID, r.TS))
		return
	}
	if r.Error != "" {
		r.Error = redact.String(r.Error)
	}
	w.line = appendRecord(w.line[:0], ts, &r)
	w.sayGap(false)
	if err := w.put(w.line, pendLine{ts: ts}); err != nil {
		w.drop(ts, err)
	}
}

// sayGap writes the gap line of the records lost since the last one said,
// if any were: when it does not reach the file, they are said with the
// next. queued: with those Write refused, the queue full (said when it
// has caught up, at most once a queue's length, not before every record
// while the disk cannot keep up).
func (w *Writer) sayGap(queued bool) {
	if queued && w.qn.Load() > 0 {
		q := lostSpan{n: w.qn.Swap(0)}
		if ns := w.qfrom.Swap(0); ns != 0 {
			q.from = time.Unix(0, ns).UTC()
		}
		if ns := w.quntil.Swap(0); ns != 0 {
			q.until = time.Unix(0, ns).UTC()
		}
		w.lost.merge(q)
	}
	if w.lost.n == 0 {
		return
	}
	l := w.lost
	w.lost = lostSpan{} // what put's own flush loses is said next time
	g := l.gap()
	w.gapLine = appendGap(w.gapLine[:0], &g)
	if w.put(w.gapLine, pendLine{gap: l, isGap: true}) != nil {
		w.lost.merge(l)
	}
}

// put appends line to the buffer, rotating the file first if it would take
// it past maxBytes; pl says what the line is, should its flush fail.
func (w *Writer) put(line []byte, pl pendLine) error {
	n := int64(len(line))
	if w.f != nil && w.maxBytes > 0 && w.size > 0 && w.size+n > w.maxBytes {
		w.rotate()
	}
	if w.f == nil {
		if err := w.openFile(); err != nil {
			return err
		}
	}
	if w.bw.Buffered() > 0 && w.bw.Available() <= int(n) {
		// Flush ourselves rather than let bufio do it inside Write, so
		// that a failure knows which records it lost.
		w.flush()
	}
	pl.n = len(line)
	if w.torn {
		// End whatever half line a failed write left; readers skip
		// the blank line this makes otherwise.
		w.bw.WriteByte('\n')
		w.size++
		w.torn = false
		pl.n++
		pl.newline = true
	}
	if _, err := w.bw.Write(line); err != nil {
		// Only a line larger than the buffer is written directly.
		w.bw.Reset(w.f) // bufio errors are sticky; try afresh next time
		w.torn = true
		return fmt.Errorf("events: write %s: %w", w.path, err)
	}
	w.size += n
	w.pend = append(w.pend, pl)
	return nil
}

// flush writes out the buffer. On failure the lines that did not wholly
// reach the file are lost: their records count as dropped (and are said
// by the next gap line), and the error is also reported.
func (w *Writer) flush() error {
	if w.f == nil {
		return nil
	}
	before := w.bw.Buffered()
	err := w.bw.Flush()
	if err != nil {
		written := before - w.bw.Buffered() // bufio keeps what it could not write
		w.bw.Reset(w.f)
		w.size -= int64(before - written)
		err = fmt.Errorf("events: write %s: %w", w.path, err)
		end, cut := 0, false
		for _, pl := range w.pend {
			start := end
			end += pl.n
			if end <= written {
				continue // in the file
			}
			cut = cut || start < written
			if pl.isGap {
				w.lost.merge(pl.gap)
			} else {
				w.dropped.Add(1)
				w.lost.add(pl.ts, nil)
			}
		}
		w.lost.cause = err
		w.cause = err
		// the file ends in a line cut off, or still in the one before
		w.torn = cut || (written == 0 && len(w.pend) > 0 && w.pend[0].newline)
	}
	w.pend = w.pend[:0]
	return err
}

// drop counts a record lost to err, at ts (zero: unknown).
func (w *Writer) drop(ts time.Time, err error) {
	w.dropped.Add(1)
	w.cause = err
	w.lost.add(ts, err)
}

// tell reports the records dropped since the last report: at once the
// first time, then at most once every DropEvery (a timer wakes the
// goroutine for what is left), and at the end (final) whatever is left.
func (w *Writer) tell(final bool) {
	n := w.dropped.Load()
	if n == w.told || w.cfg.onError == nil {
		return
	}
	now := w.cfg.clock.Now()
	if next := w.toldAt.Add(DropEvery); !final && !w.toldAt.IsZero() && now.Before(next) {
		if w.tellStop == nil {
			w.tellStop = w.cfg.clock.AfterFunc(next.Sub(now), func() {
				select {
				case w.wake <- struct{}{}:
				default:
				}
			})
		}
		return
	}
	w.cfg.onError(&DropError{Path: w.path, Count: n - w.told, Total: n, First: w.told == 0, Err: w.cause})
	w.told, w.toldAt, w.cause = n, now, nil
}

func (w *Writer) report(err error) {
	if err != nil && w.cfg.onError != nil {
		w.cfg.onError(err)
	}
}

// openFile opens the log and learns its current size.
func (w *Writer) openFile() error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	f, err := w.cfg.open(w.path)
	if err != nil {
		return fmt.Errorf("events: open log: %w", err)
	}
	w.f, w.size, w.torn = f, 0, false
	if fi, err := os.Stat(w.path); err == nil {
		w.size = fi.Size()
		// a log whose last line was cut (a crash, a disk that filled)
		// gets a new line first: a record appended to the torn one would
		// be lost with it
		w.torn = w.size > 0 && !endsInNewline(w.path, w.size)
	}
	w.bw.Reset(f)
	return nil
}

// endsInNewline reports whether the file at path, of size bytes, ends in
// a newline (true when it cannot be read: no newline is added then).
func endsInNewline(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return true
	}
	return last[0] == '\n'
}

// closeFile flushes and closes the current file, if any.
func (w *Writer) closeFile() error {
	if w.f == nil {
		return nil
	}
	err := w.flush()
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("events: close %s: %w", w.path, cerr)
		w.report(err)
	}
	w.f = nil
	return err
}

// rotate closes the current file, shifts the old ones and opens a new one.
// If renaming fails the writer goes on appending to the file it had; if
// opening fails, the next record tries again.
func (w *Writer) rotate() {
	w.closeFile()
	w.report(shift(w.path, w.keep))
	w.report(w.openFile())
}

// shift makes room for a fresh path: it deletes path.N for N >= keep
// (including leftovers of a larger keep), renames path.N to path.N+1 from
// the top down, and path to path.1 (or deletes path when keep is 0).
func shift(path string, keep int) error {
	nums, err := rotatedNumbers(path)
	if err != nil {
		return err
	}
	for _, n := range nums {
		if n >= keep {
			if err := os.Remove(rotatedName(path, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("events: rotate: %w", err)
			}
		}
	}
	if keep == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("events: rotate: %w", err)
		}
		return nil
	}
	for n := keep - 1; n >= 1; n-- {
		err := os.Rename(rotatedName(path, n), rotatedName(path, n+1))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("events: rotate: %w", err)
		}
	}
	if err := os.Rename(path, rotatedName(path, 1)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("events: rotate: %w", err)
	}
	return nil
}
