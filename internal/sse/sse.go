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
)

// DefaultMaxFrame bounds the memory one frame may take.
const DefaultMaxFrame = 16 << 20

// ErrTruncated reports a stream that ended inside a frame.
var ErrTruncated = errors.New("sse: stream ended in the middle of an event")

// Event is one dispatched frame.
type Event struct {
	Name string // the "event:" field; empty means "message"
	Data []byte // the "data:" lines joined by "\n"
	ID   string
	Raw  []byte // the frame exactly as read, including the blank line ending it
	// Comment marks a comment line (": keep-alive") read between frames:
	// not an event, but a sign the stream is alive. Raw holds the line.
	Comment bool
}

// Reader splits a stream into events.
type Reader struct {
	br       *bufio.Reader
	maxFrame int
}

// readBuffer is the reader's buffer: bufio's default. A line longer than
// it is gathered in pieces (readLine), so the buffer bounds nothing but
// the size of one read; a proxy keeps one per open stream (with 32 KiB,
// 1,000 open streams peaked about 6 MB higher: BENCHMARKS.md).
const readBuffer = 4 << 10

// NewReader returns a Reader with DefaultMaxFrame.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBuffer), maxFrame: DefaultMaxFrame}
}

// SetMaxFrame changes the frame size limit.
func (r *Reader) SetMaxFrame(n int) { r.maxFrame = n }

// Next returns the next event. It returns io.EOF after the last complete
// event, and ErrTruncated when the stream stopped inside an event; the fields
// read so far then come with the error.
func (r *Reader) Next() (Event, error) {
	var ev Event
	var raw bytes.Buffer
	var data bytes.Buffer
	hasData, hasField := false, false
	for {
		line, err := r.readLine(&raw)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if hasField || len(line) > 0 {
					ev.Data = data.Bytes()
					ev.Raw = raw.Bytes()
					if len(line) > 0 { // a last line without its newline
						if name, value, ok := bytes.Cut(line, []byte(":")); ok && string(name) == "data" {
							if hasData {
								ev.Data = append(ev.Data, '\n')
							}
							ev.Data = append(ev.Data, bytes.TrimPrefix(value, []byte(" "))...)
						} else if ok && string(name) == "event" {
							ev.Name = string(bytes.TrimPrefix(value, []byte(" ")))
						}
					}
					return ev, ErrTruncated
				}
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if !hasField {
				raw.Reset() // stray blank line between frames
				continue
			}
			ev.Data = data.Bytes()
			ev.Raw = raw.Bytes()
			return ev, nil
		}
		if line[0] == ':' { // a comment: between frames it is returned on its own
			if !hasField {
				return Event{Comment: true, Raw: raw.Bytes()}, nil
			}
			continue
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		hasField = true
		switch string(name) {
		case "event":
			ev.Name = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			ev.ID = string(value)
		}
	}
}

// readLine reads one line (ending in \n or \r\n), appends its bytes to raw
// and returns it without the line ending. A lone \r is not treated as a line
// end: no provider sends one, and honouring it would cost a byte-by-byte scan.
func (r *Reader) readLine(raw *bytes.Buffer) ([]byte, error) {
	start := raw.Len()
	for {
		chunk, err := r.br.ReadSlice('\n')
		raw.Write(chunk)
		if raw.Len()-start > r.maxFrame || raw.Len() > r.maxFrame {
			return nil, fmt.Errorf("sse: event larger than %d bytes", r.maxFrame)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return raw.Bytes()[start:], err
		}
		line := raw.Bytes()[start : raw.Len()-1]
		return bytes.TrimSuffix(line, []byte{'\r'}), nil
	}
}

// LooksLikeSSE reports whether b starts like an event stream.
func LooksLikeSSE(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return bytes.HasPrefix(b, []byte("event:")) || bytes.HasPrefix(b, []byte("data:")) || bytes.HasPrefix(b, []byte(": "))
}

// Buffered is how many bytes have been read from the stream but not yet
// returned as events: more has already arrived.
func (r *Reader) Buffered() int { return r.br.Buffered() }
