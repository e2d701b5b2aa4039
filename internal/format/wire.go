package format

import (
	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// Wire is the rest of a format's truth that the relay, the classifier's
// callers and the gateway ask: what each event of its streams means
// (Look), the errors spillway answers in its shape, and the small prompt
// requests spillway sends in it. internal/format/formats finds the value
// of an endpoint (formats.WireOf).
type Wire interface {
	// Look judges ev, an event of a stream in this format, in one pass
	// over its data: whether it may be passed on, its frame, whether it
	// carries a piece of the answer or may carry usage.
	Look(ev sse.Event) wire.Facts
	// OnceStarted is f's frame (Look's) for an event that comes after the
	// stream's output started, when only errors and the end still matter.
	OnceStarted(f wire.Facts) wire.Frame
	// Seen takes what ev, an event of a stream passed on to its client as
	// it came (fa Look's judgement of it), told the client of its
	// response, into r, for the failure that may end the stream:
	// Responses' failure repeats it; the other formats' note nothing.
	Seen(r *wire.Responding, ev sse.Event, fa wire.Facts)
	// Continuation is how a broken answer of this format is continued,
	// nil for a format whose answers are not (Messages': a partial
	// assistant turn the model goes on from; the relay then follows the
	// answer's text).
	Continuation() Continuation
	// TakesComments reports whether the clients of its streams skip SSE
	// comment lines (spillway's last word on a stream).
	TakesComments() bool

	// ErrorBody is the error for a failure of class that spillway itself
	// reports: the status to answer with and the body.
	ErrorBody(class classify.Class, msg string) (status int, body []byte)
	// StatusBody is the answer of a refusal the gateway makes by itself
	// with status (403, 404, 405), in the shape the provider gives it.
	StatusBody(status int, msg string) []byte
	// BusyBody is the answer for a request the gateway has no room to
	// take: 503, code spillway_busy.
	BusyBody(msg string) (status int, body []byte)
	// StreamErrorFrame is the format's own error event, sent when a stream
	// that already showed output breaks, so that it never looks complete;
	// r is what a Responses stream told its client of its response.
	StreamErrorFrame(class classify.Class, msg string, r wire.Responding) []byte
	// GivesUpInStream reports a format whose streaming requests spillway
	// gives up on are answered with a stream of their own (GiveUpFrame)
	// rather than an HTTP error: Responses', whose client (Codex)
	// resends a request answered 5xx, each time a walk of the whole chain.
	GivesUpInStream() bool
	// GiveUpFrame is the event that ends a stream spillway gave up on
	// before any output.
	GiveUpFrame(class classify.Class, msg string, r wire.Responding) []byte

	// Prompt is p as a request body in this format for model.
	Prompt(p wire.Prompt, model string) []byte
}

// Continuation is how a format's answer broken inside its text is
// continued: what each of its events says of the answer's blocks, and how
// the events of a continuation's stream become the answer's it continues.
type Continuation interface {
	// Block is what ev says of the answer's content blocks; false for an
	// event that says nothing of them.
	Block(ev sse.Event) (Block, bool)
	// Splice turns ev, an event of a continuation's stream, into one of
	// the answer it continues, whose blocks before it number base: drop
	// for an event the caller must not see again (the continuation's
	// opening); trim is whitespace the partial turn left out, dropped
	// from the first text (trimmed: it was).
	Splice(ev sse.Event, base int, trim string) (out sse.Event, drop, trimmed bool, err error)
	// Prefill is the body of a request b with a partial answer, text,
	// after its conversation: what a continuation sends, so that the model
	// goes on from text. It is a new Body; b is unchanged.
	Prefill(b *wire.Body, text string) (*wire.Body, error)
}

// Block is what one event says of an answer's content blocks: one opens
// (Start: its Index, and whether it is Text), a piece of text comes
// (Delta), or the block in flight closes (Stop).
type Block struct {
	Start, Stop bool
	Index       int
	Text        bool
	Delta       string
}
