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
	// Continues reports a format whose answer broken inside its text can
	// be continued (Messages: a partial assistant turn the model goes on
	// from), which the relay then follows.
	Continues() bool
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
