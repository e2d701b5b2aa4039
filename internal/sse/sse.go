// Package sse reads Server-Sent Events frames.
//
// It is written here rather than taken from a library because spillway needs
// three things together that the common SSE clients do not offer: no line
// length limit below the frame limit (bufio.Scanner stops at 64 KiB, and a
// Responses API output_item.done frame can be larger), the frame's raw bytes
// kept so a proxy can pass them through unchanged, and a clear error for a
// stream that ends in the middle of a frame.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxFrame bounds the memory one frame may take.
const DefaultMaxFrame = 16 << 20

// ErrTruncated reports a stream that ended inside a frame.
var ErrTruncated = errors.New("sse: stream ended in the middle of an event")

// ErrTooLarge is in the error for an event larger than the frame limit:
// what the upstream sent, not a network failure (errors.Is finds it).
var ErrTooLarge = errors.New("sse: event larger than the frame limit")

// tooLarge is the error for an event past limit bytes (the frame limit,
// or, room, what the reader's Room had).
type tooLarge struct {
	limit int
	room  bool
}

func (e tooLarge) Error() string {
	if e.room {
		return fmt.Sprintf("sse: an event larger than the memory its request may hold (%d KiB read)", e.limit>>10)
	}
	return fmt.Sprintf("sse: an event larger than %d MiB", e.limit>>20)
}

func (e tooLarge) Is(target error) bool { return target == ErrTooLarge }

// Event is one dispatched frame. Its Data and Raw are the Reader's, valid
// until its next Next: a caller that keeps them copies them.
type Event struct {
	Name string // the "event:" field; empty means "message"
	Data []byte // the "data:" lines joined by "\n"
	ID   string
	Raw  []byte // the frame exactly as read, including the blank line ending it
	// Comment marks a comment line (": keep-alive") read between frames:
	// not an event, but a sign the stream is alive. Raw holds the line.
	Comment bool
}

// Reader splits a stream into events. It reuses one buffer for the
// events' bytes (and their data, when it is on one line, is a slice of
// it), and the names it saw last: a proxy relays each event before it
// reads the next, and an allocation per event was most of its reading cost.
type Reader struct {
	br        *bufio.Reader
	maxFrame  int
	room      Room   // where a large event's buffer is taken from, if anywhere
	taken     int64  // what the buffer took of room
	dataTaken int64  // what the data buffer (data on several lines) took of room
	raw       []byte // the last event's bytes
	data      []byte // the last event's data, when it had several lines
	names     Names  // recent event names, to return without an allocation
}

// readBuffer is the reader's buffer: bufio's default. A line longer than
// it is gathered in pieces (readLine), so the buffer bounds nothing but
// the size of one read; a proxy keeps one per open stream (with 32 KiB,
// 1,000 open streams peaked about 6 MB higher: BENCHMARKS.md).
const readBuffer = 4 << 10

// keepBuffer is the largest event buffer kept for the next event: one
// large frame does not keep its memory for the stream's life.
const keepBuffer = 64 << 10

// buffers are the read buffers of readers released (Release): a proxy
// opens a reader per stream, and allocating its buffer each time was most
// of the bytes a relayed stream allocated.
var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuffer) }}

// ErrReleased is what a released Reader's Next returns.
var ErrReleased = errors.New("sse: read after Release")

// NewReader returns a Reader with DefaultMaxFrame.
func NewReader(r io.Reader) *Reader {
	br := buffers.Get().(*bufio.Reader)
	br.Reset(r)
	return &Reader{br: br, maxFrame: DefaultMaxFrame}
}

// Release gives the reader's buffer back, for another reader. Only the
// goroutine that reads may call it, after its last read: the Reader then
// reads nothing more (ErrReleased).
func (r *Reader) Release() {
	if r.br != nil {
		r.br.Reset(nil)
		buffers.Put(r.br)
		r.br = nil
	}
	r.raw, r.data = nil, nil
	r.giveBack(&r.taken)
	r.giveBack(&r.dataTaken)
}

// Room is what a reader takes a large event's buffer from (a request's
// memory budget): past it, the event is too large (ErrTooLarge). It may be
// used from several goroutines.
type Room interface {
	Take(n int64) bool
	Give(n int64)
}

// SetRoom makes the reader take its event buffer's growth past keepBuffer
// from room, and give it back once the buffer is let go.
func (r *Reader) SetRoom(room Room) { r.room = room }

// giveBack gives back what a buffer took of its room (*taken).
func (r *Reader) giveBack(taken *int64) {
	if *taken > 0 {
		r.room.Give(*taken)
		*taken = 0
	}
}

// SetMaxFrame changes the frame size limit.
func (r *Reader) SetMaxFrame(n int) { r.maxFrame = n }

// Next returns the next event. It returns io.EOF after the last complete
// event, and ErrTruncated when the stream stopped inside an event; the fields
// read so far then come with the error.
func (r *Reader) Next() (Event, error) {
	if r.br == nil {
		return Event{}, ErrReleased
	}
	r.letGo()
	f := frame{raw: r.raw[:0], data: r.data[:0]}
	defer func() { r.raw, r.data = f.raw, f.data }()
	for {
		start := len(f.raw)
		var line []byte
		var err error
		f.raw, line, err = r.readLine(f.raw)
		if err != nil {
			return r.end(&f, line, err)
		}
		if len(line) == 0 {
			if !f.hasField {
				f.raw = f.raw[:0] // stray blank line between frames
				continue
			}
			f.ev.Data = f.value()
			f.ev.Raw = f.raw
			return f.ev, nil
		}
		if line[0] == ':' { // a comment: between frames it is returned on its own
			if !f.hasField {
				return Event{Comment: true, Raw: f.raw}, nil
			}
			continue
		}
		if err := r.field(&f, line, start); err != nil {
			return Event{}, err
		}
	}
}

// frame is the event Next is reading: its fields so far, and the
// reader's buffers it is read into.
type frame struct {
	ev       Event
	raw      []byte // the frame's bytes
	data     []byte // the data, once it has several lines
	lines    int    // data lines
	first    [2]int // the first data line's value, as offsets in raw
	hasField bool
}

// value is the frame's data as one slice.
func (f *frame) value() []byte {
	if f.lines == 1 {
		return f.raw[f.first[0]:f.first[1]:f.first[1]]
	}
	return f.data
}

// letGo lets go of a buffer that grew past keepBuffer for the last event,
// giving back what it took of the reader's room.
func (r *Reader) letGo() {
	if cap(r.raw) > keepBuffer {
		r.raw = nil
	}
	if cap(r.raw) <= keepBuffer {
		r.giveBack(&r.taken) // (the buffer that took it is let go)
	}
	if cap(r.data) > keepBuffer {
		r.data = nil
		r.giveBack(&r.dataTaken)
	}
}

// end is what Next returns when reading a line of f failed with err: at
// the stream's end io.EOF between frames, else the fields read so far
// (and line, a last line without its newline) with ErrTruncated; any
// other error as it is.
func (r *Reader) end(f *frame, line []byte, err error) (Event, error) {
	if !errors.Is(err, io.EOF) {
		return Event{}, err
	}
	if !f.hasField && len(line) == 0 {
		return Event{}, io.EOF
	}
	ev := f.ev
	ev.Data = f.value()
	ev.Raw = f.raw
	if len(line) > 0 { // a last line without its newline
		if name, v, ok := bytes.Cut(line, []byte(":")); ok && string(name) == "data" {
			d := append([]byte(nil), ev.Data...)
			if f.lines > 0 {
				d = append(d, '\n')
			}
			ev.Data = append(d, bytes.TrimPrefix(v, []byte(" "))...)
		} else if ok && string(name) == "event" {
			ev.Name = r.names.Of(bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	return ev, ErrTruncated
}

// field takes in one field line of f, whose bytes start at start in
// f.raw: its name, data or id. Data on several lines is joined in f.data,
// whose room is taken as the frame's is.
func (r *Reader) field(f *frame, line []byte, start int) error {
	name, v := line, []byte(nil)
	off := start // where v starts in raw
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, v = line[:i], line[i+1:]
		off += i + 1
		if len(v) > 0 && v[0] == ' ' {
			v = v[1:]
			off++
		}
	}
	f.hasField = true
	switch string(name) {
	case "event":
		f.ev.Name = r.names.Of(v)
	case "data":
		if f.lines > 0 { // the data joined, its room taken as the frame's is
			var ok bool
			if f.data, ok = r.grow(f.data, max(0, len(f.raw)-len(f.data)), &r.dataTaken); !ok {
				return tooLarge{len(f.raw), true}
			}
		}
		switch f.lines {
		case 0:
			f.first = [2]int{off, off + len(v)}
		case 1:
			f.data = append(append(append(f.data[:0], f.raw[f.first[0]:f.first[1]]...), '\n'), v...)
		default:
			f.data = append(append(f.data, '\n'), v...)
		}
		f.lines++
	case "id":
		f.ev.ID = string(v)
	}
	return nil
}

// Names keeps the event names a stream used last, so that a reader makes
// a name a string without an allocation when it is one of them (a stream
// repeats a few names). Its zero value is ready.
type Names struct {
	last [4]string
	next int
}

// Of is b as a string: one of the names seen last, or a new one kept.
func (ns *Names) Of(b []byte) string {
	for _, n := range ns.last {
		if n == string(b) {
			return n
		}
	}
	n := string(b)
	ns.last[ns.next] = n
	ns.next = (ns.next + 1) % len(ns.last)
	return n
}

// readLine reads one line (ending in \n or \r\n), appends its bytes to raw
// and returns raw and the line without its ending. A lone \r is not treated
// as a line end: no provider sends one, and honouring it would cost a
// byte-by-byte scan.
func (r *Reader) readLine(raw []byte) ([]byte, []byte, error) {
	start := len(raw)
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(raw)+len(chunk) > r.maxFrame {
			return raw, nil, tooLarge{r.maxFrame, false}
		}
		grown, ok := r.grow(raw, len(chunk), &r.taken)
		if !ok {
			return raw, nil, tooLarge{len(raw), true}
		}
		raw = grown
		raw = append(raw, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return raw, raw[start:], err
		}
		line := raw[start : len(raw)-1]
		return raw, bytes.TrimSuffix(line, []byte{'\r'}), nil
	}
}

// grow makes room in raw (a buffer of the reader's, whose room taken is
// *taken) for n more bytes, never past the frame limit (nor past the
// reader's Room: false): the buffer doubles as an event grows (append's
// growth past the limit would hold a quarter more than it may).
func (r *Reader) grow(raw []byte, n int, taken *int64) ([]byte, bool) {
	if len(raw)+n <= cap(raw) {
		return raw, true
	}
	c := min(max(2*cap(raw), len(raw)+n, 512), r.maxFrame)
	if r.room != nil && c > keepBuffer {
		// the growth past keepBuffer is the request's to hold
		more := int64(c - max(cap(raw), keepBuffer))
		if !r.room.Take(more) {
			return raw, false
		}
		*taken += more
	}
	return append(make([]byte, 0, c), raw...), true
}

// LooksLikeSSE reports whether b starts like an event stream.
func LooksLikeSSE(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return bytes.HasPrefix(b, []byte("event:")) || bytes.HasPrefix(b, []byte("data:")) || bytes.HasPrefix(b, []byte(": "))
}

// Buffered is how many bytes have been read from the stream but not yet
// returned as events: more has already arrived.
func (r *Reader) Buffered() int {
	if r.br == nil {
		return 0
	}
	return r.br.Buffered()
}
