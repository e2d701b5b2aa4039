package format

import (
	"io"

	"github.com/spillway/spillway/internal/sse"
)

// Framing is how a stream's bytes become events, apart from what the
// events say (the format's) and how the request was carried (the
// Envelope's): SSE, or AWS's binary event stream (Bedrock's). An
// answer's Content-Type says which (formats.Framing).
type Framing interface {
	// Events reads body's events; what a large one takes is counted
	// against room.
	Events(body io.Reader, room sse.Room) Events
}

// Events are a stream's events, read one at a time (an *sse.Reader).
type Events interface {
	// Next is the next event, io.EOF at the end.
	Next() (sse.Event, error)
	// Buffered is how much of the stream has arrived and is not read yet.
	Buffered() int
	// Release gives back what a large event took of the room.
	Release()
}

// SSE is the framing of server-sent events (text/event-stream).
type SSE struct{}

// Events reads body as server-sent events.
func (SSE) Events(body io.Reader, room sse.Room) Events {
	r := sse.NewReader(body)
	r.SetRoom(room)
	return r
}
