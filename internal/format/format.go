package format

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
type Requests interface{}

// Answers are how a format's answers, whole or event by event, are read
// into neutral events and written from them.
type Answers interface{}
