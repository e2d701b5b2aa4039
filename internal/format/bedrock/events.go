package bedrock

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
)

// Framing reads an AWS event stream as Messages events (format.Framing).
type Framing struct {
	// MaxFrame bounds one message of the stream (sse.DefaultMaxFrame when
	// 0), as sse.Reader's frame limit bounds an event.
	MaxFrame int
}

// Events reads body's messages as Messages events (a *Reader); what a
// large one takes is counted against room.
func (f Framing) Events(body io.Reader, room sse.Room) format.Events {
	r := NewReader(body)
	r.SetRoom(room)
	if f.MaxFrame > 0 {
		r.SetMaxFrame(f.MaxFrame)
	}
	return r
}

// Reader reads an AWS event stream as the Messages events its chunk
// messages carry, each as the SSE event a Messages client reads from the
// Anthropic API: Name the event's type, Data its JSON, Raw its text
// ("event: T\ndata: J\n\n"). An exception message, or an error message,
// is a Messages error event in the same way. Messages of any other type
// or event type carry nothing of the answer and are skipped.
//
// Each message is decoded by aws-sdk-go-v2's eventstream Decoder, which
// checks both its CRCs. Like sse.Reader, it reuses its buffers from one
// event to the next (an event's Data and Raw are valid until the next
// Next), refuses a message past its frame limit (ErrTooLarge) before
// reading it, and takes a large message's buffers from its Room.
type Reader struct {
	br       *bufio.Reader
	dec      *eventstream.Decoder
	part     part // the message being decoded
	maxFrame int
	room     sse.Room  // where a large message's buffers are taken from, if anywhere
	payload  []byte    // the message's payload
	payTaken int64     // what payload took of room
	out      []byte    // the event's bytes
	outTaken int64     // what out took of room
	err      error     // what ended the stream, returned again
	names    sse.Names // the event names seen last
}

// The sizes of an event-stream message: its prelude (total length,
// headers' length, the prelude's CRC), the least a message can be (a
// prelude and the message's CRC), and the most its headers may be (Bedrock
// sends three short ones; a message of many tiny headers would allocate
// several times its size in the Decoder).
const (
	preludeLen = 12
	minMessage = preludeLen + 4
	maxHeaders = 16 << 10
)

// readBuffer is the reader's buffer, as sse.Reader's: it bounds a read,
// not a message.
const readBuffer = 4 << 10

// keepBuffer is the largest buffer kept for the next event, as
// sse.Reader's.
const keepBuffer = 64 << 10

// buffers are the read buffers of readers released (Release), as
// sse.Reader keeps its own.
var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuffer) }}

// NewReader returns a Reader of r with sse.DefaultMaxFrame.
func NewReader(r io.Reader) *Reader {
	br := buffers.Get().(*bufio.Reader)
	br.Reset(r)
	return &Reader{br: br, dec: eventstream.NewDecoder(), maxFrame: sse.DefaultMaxFrame}
}

// SetRoom makes the reader take its buffers' growth past keepBuffer from
// room, and give it back once they are let go.
func (r *Reader) SetRoom(room sse.Room) { r.room = room }

// SetMaxFrame changes the limit of one message's size.
func (r *Reader) SetMaxFrame(n int) { r.maxFrame = n }

// Buffered is how many bytes have been read from the stream but not yet
// returned as events.
func (r *Reader) Buffered() int {
	if r.br == nil {
		return 0
	}
	return r.br.Buffered()
}

// Release gives the reader's buffers back. Only the goroutine that reads
// may call it, after its last read: the Reader then reads nothing more
// (sse.ErrReleased).
func (r *Reader) Release() {
	if r.br != nil {
		r.br.Reset(nil)
		buffers.Put(r.br)
		r.br = nil
	}
	r.payload, r.out = nil, nil
	r.giveBack(&r.payTaken)
	r.giveBack(&r.outTaken)
}

// Next returns the next event: io.EOF after the last whole message, an
// error wrapping sse.ErrTruncated when the stream stopped inside one,
// sse.ErrTooLarge for a message past the frame limit or the room, and an
// error wrapping eventstream.ChecksumError for a message whose bytes are
// not the ones sent. After an error, Next returns it again.
func (r *Reader) Next() (sse.Event, error) {
	if r.br == nil {
		return sse.Event{}, sse.ErrReleased
	}
	if r.err != nil {
		return sse.Event{}, r.err
	}
	r.letGo()
	for {
		m, err := r.message()
		if err != nil {
			r.err = err
			return sse.Event{}, err
		}
		ev, ok, err := r.event(m)
		if err != nil {
			r.err = err
			return sse.Event{}, err
		}
		if ok {
			return ev, nil
		}
		// a message of no Messages event: the next one
	}
}

// letGo lets go of a buffer that grew past keepBuffer for the last event,
// giving back what it took of the reader's room.
func (r *Reader) letGo() {
	if cap(r.payload) > keepBuffer {
		r.payload = nil
		r.giveBack(&r.payTaken)
	}
	if cap(r.out) > keepBuffer {
		r.out = nil
		r.giveBack(&r.outTaken)
	}
}

// giveBack gives back what a buffer took of its room (*taken).
func (r *Reader) giveBack(taken *int64) {
	if *taken > 0 {
		r.room.Give(*taken)
		*taken = 0
	}
}

// grow makes *buf, a buffer of the reader's whose room taken is *taken,
// an empty one of at least n bytes (false: past the reader's Room). A
// small buffer doubles, up to keepBuffer, for the events to come; a large
// one is the size asked, its growth past keepBuffer taken from the room.
func (r *Reader) grow(buf *[]byte, n int, taken *int64) bool {
	if n <= cap(*buf) {
		*buf = (*buf)[:0]
		return true
	}
	c := n
	if n <= keepBuffer {
		c = max(min(2*cap(*buf), keepBuffer), n, 512)
	}
	if r.room != nil && c > keepBuffer {
		more := int64(c - max(cap(*buf), keepBuffer))
		if !r.room.Take(more) {
			return false
		}
		*taken += more
	}
	*buf = make([]byte, 0, c)
	return true
}

// message reads the next message whole: its prelude first, to refuse it
// before reading it when it is too large, then the message through the
// Decoder, its payload in r.payload.
func (r *Reader) message() (eventstream.Message, error) {
	p, err := r.br.Peek(preludeLen)
	if err != nil {
		if errors.Is(err, io.EOF) && len(p) == 0 {
			return eventstream.Message{}, io.EOF
		}
		if errors.Is(err, io.EOF) {
			return eventstream.Message{}, fmt.Errorf("%w (the last event-stream message ended in its prelude, after %d bytes)", sse.ErrTruncated, len(p))
		}
		return eventstream.Message{}, err
	}
	total, headers := binary.BigEndian.Uint32(p), binary.BigEndian.Uint32(p[4:])
	// The Decoder checks the prelude's CRC too, but only as it reads the
	// message: its lengths must be known true before a buffer is sized.
	if crc32.ChecksumIEEE(p[:8]) != binary.BigEndian.Uint32(p[8:]) {
		return eventstream.Message{}, fmt.Errorf("bedrock: an event-stream message's prelude is not the one sent: %w", eventstream.ChecksumError{})
	}
	switch {
	case total < minMessage || headers > total-minMessage:
		return eventstream.Message{}, fmt.Errorf("bedrock: a broken event-stream message: %d bytes with %d of headers", total, headers)
	case headers > maxHeaders:
		return eventstream.Message{}, fmt.Errorf("bedrock: an event-stream message with %d KiB of headers (%d KiB at most)", headers>>10, maxHeaders>>10)
	case int64(total) > int64(r.maxFrame):
		return eventstream.Message{}, tooLarge{limit: r.maxFrame, size: int64(total)}
	}
	// the Decoder reads the payload with bytes.Buffer.ReadFrom, which
	// wants MinRead bytes free to read the end: with them it never grows
	payload := int(total-headers-minMessage) + bytes.MinRead
	if !r.grow(&r.payload, payload, &r.payTaken) {
		return eventstream.Message{}, tooLarge{room: true, size: int64(total)}
	}
	r.part = part{br: r.br, n: int64(total)}
	m, err := r.dec.Decode(&r.part, r.payload)
	switch {
	case r.part.err != nil && !errors.Is(r.part.err, io.EOF):
		return eventstream.Message{}, r.part.err // the network's, as it came
	case r.part.err != nil && r.part.n > 0:
		return eventstream.Message{}, fmt.Errorf("%w (an event-stream message of %d bytes ended after %d)", sse.ErrTruncated, total, int64(total)-r.part.n)
	case errors.As(err, new(eventstream.ChecksumError)):
		return eventstream.Message{}, fmt.Errorf("bedrock: an event-stream message's bytes are not the ones sent: %w", err)
	case err != nil:
		return eventstream.Message{}, fmt.Errorf("bedrock: a broken event-stream message: %w", err)
	case r.part.n != 0:
		return eventstream.Message{}, fmt.Errorf("bedrock: a broken event-stream message: %d of its %d bytes not read", r.part.n, total)
	}
	return m, nil
}

// part is the message being read: the next n bytes of br, and the error
// br gave (the stream's end, or the network's), if any.
type part struct {
	br  *bufio.Reader
	n   int64
	err error
}

func (p *part) Read(b []byte) (int, error) {
	if p.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n {
		b = b[:p.n]
	}
	n, err := p.br.Read(b)
	p.n -= int64(n)
	if err != nil {
		p.err = err
	}
	return n, err
}

// tooLarge is the error for a message of size bytes past limit (the
// frame limit) or, room, past what the reader's Room had: sse.ErrTooLarge,
// in words that follow the relay's "the upstream sent".
type tooLarge struct {
	limit int
	size  int64
	room  bool
}

func (e tooLarge) Error() string {
	if e.room {
		return fmt.Sprintf("an event-stream message larger than the memory its request may hold (%d KiB)", e.size>>10)
	}
	if e.limit >= 1<<20 {
		return fmt.Sprintf("an event-stream message larger than %d MiB (%d KiB)", e.limit>>20, e.size>>10)
	}
	return fmt.Sprintf("an event-stream message larger than %d bytes (%d)", e.limit, e.size)
}

func (e tooLarge) Is(target error) bool { return target == sse.ErrTooLarge }

// event is message m's Messages event; ok is false for a message that
// carries none.
func (r *Reader) event(m eventstream.Message) (ev sse.Event, ok bool, err error) {
	switch header(m, ":message-type") {
	case "event":
		if header(m, ":event-type") != "chunk" {
			return sse.Event{}, false, nil
		}
		ev, err = r.chunk(m.Payload)
		return ev, err == nil, err
	case "exception":
		return r.failure(ErrorType(header(m, ":exception-type")), exceptionMessage(m.Payload)), true, nil
	case "error":
		return r.failure(ErrorType(header(m, ":error-code")), header(m, ":error-message")), true, nil
	}
	return sse.Event{}, false, nil
}

// header is m's string header name, "" without one.
func header(m eventstream.Message, name string) string {
	for _, h := range m.Headers {
		if h.Name == name {
			if v, ok := h.Value.(eventstream.StringValue); ok {
				return string(v)
			}
		}
	}
	return ""
}
