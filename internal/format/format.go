package format

import (
	"net/http"

	"github.com/spillway/spillway/internal/wire"
)

// Format is one wire format: what spillway knows of it, asked of a value
// instead of switched on. Each format is a folder under internal/format
// (responses, chat, messages, gemini) whose value implements Format, and
// internal/format/formats finds the value of an endpoint's kind. A format
// is the body and its events only: how a provider carries it (the path,
// the credentials, fields an envelope adds, the framing of its events) is
// an Envelope and a Framing of its own.
type Format interface {
	Requests
	Answers
	Wire
}

// Requests are how a format's requests are read into the neutral form
// (Request) and written from it.
type Requests interface {
	// ReadRequest reads m, a client's request to ep, into the neutral
	// form: an error says what the format's request has that no other
	// format can carry.
	ReadRequest(m map[string]any, ep wire.Endpoint) (*Request, error)
	// WriteRequest is t's request in this format, for the model named
	// upstream at its provider; nil for a format no request is ever
	// translated to (Responses).
	WriteRequest(t *Turn, upstream string) map[string]any
	// Header sets what the format requires of a translated request's
	// headers beyond its content type (Anthropic's version and betas).
	Header(t *Turn, h http.Header)
	// Query is the query a translated request's URL needs ("" for none).
	Query(ep wire.Endpoint) string
	// Native is body, a request of this format going to a model of its
	// own format, made fit for that vendor when its history holds a turn
	// another vendor answered; ok is false when nothing needs to change.
	Native(body []byte) (out []byte, ok bool)
}

// Answers are how a format's answers, whole or event by event, are read
// into neutral events and written from them.
type Answers interface {
	// NewReader reads one answer of this format into neutral events; nil
	// for a format no request is ever translated to (Responses).
	NewReader() EventReader
	// Writer writes neutral events as this format's answer, a stream's
	// state kept in the Stream it is given.
	Writer() Writer
}

// EventReader reads one answer of a format into neutral events, keeping the
// state its events need (the call in flight) and nothing that grows with
// the answer.
type EventReader interface {
	// Event is the neutral events of one event of a stream (its name, for
	// formats that name events, and its data), valid until the next call.
	Event(name string, data []byte) ([]Event, error)
	// Whole is the neutral events of a whole answer's body.
	Whole(body []byte) ([]Event, error)
}

// Keeping is what a client format's stream keeps of its answer to close it:
// what its closing events repeat.
type Keeping int

// What a stream keeps.
const (
	KeepNone Keeping = iota // what went out as deltas is not repeated (Chat, Messages)
	KeepArgs                // a call's arguments until it closes (Gemini sends its calls whole)
	KeepAll                 // every item to the end (Responses' closing events list them all)
)

// Writer writes the neutral events of an answer as a client format's
// frames, into the Stream's buffer (Stream.SSE, Stream.Data, Stream.Buf):
// the engine (Stream) calls it at each step and keeps the state every
// format shares.
type Writer interface {
	// Keeps is what the format's stream keeps to close it.
	Keeps() Keeping
	// Open writes the opening events and sets the answer's ID.
	Open(s *Stream)
	// Start opens it, the item in flight.
	Start(s *Stream, it *Item)
	// Text writes a piece of it's text, q being the text as a JSON string.
	Text(s *Stream, it *Item, q []byte)
	// Args writes a piece of it's call's arguments.
	Args(s *Stream, it *Item, text string)
	// Close ends it.
	Close(s *Stream, it *Item)
	// Final writes the closing events.
	Final(s *Stream)
	// Whole is the whole answer made of the stream's items.
	Whole(s *Stream) any
}

// Failer is a Writer whose format ends a failed stream with what the
// stream had told of its answer (Responses' response.failed): Failing is
// that account, taking the stream's next sequence number.
type Failer interface {
	Failing(s *Stream) wire.Responding
}

// Identifier is a Writer whose items carry ids of their own (Responses'):
// ItemID is an item's, given when it starts, before it is kept.
type Identifier interface {
	ItemID(s *Stream, it *Item) string
}

// Registry finds formats: the format of an endpoint's kind, and the
// endpoint and format a request goes to at a model of a provider format
// (internal/format/formats implements it).
type Registry interface {
	Of(k wire.Kind) (Format, bool)
	Target(f wire.Format, stream bool) (wire.Endpoint, Format, bool)
}
