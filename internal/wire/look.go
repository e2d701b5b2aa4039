package wire

import (
	"bytes"

	"github.com/spillway/spillway/internal/sse"
)

// Look judges ev, an event of a stream of kind k, in one pass: a Chat or
// Gemini chunk's JSON is walked once (Walker), which checks it is JSON as
// it goes; the other protocols name their events, so only the check walks
// their data.
func KindLook(k Kind, ev sse.Event) Facts {
	if ev.Comment {
		return Facts{Valid: true, Frame: Hold}
	}
	if !validName(ev.Name) {
		return Facts{Frame: Output}
	}
	d := bytes.TrimSpace(ev.Data)
	switch k {
	case Messages:
		f := Facts{Valid: len(d) == 0 || string(d) == "[DONE]" || ValidJSON(d), Frame: KindFrame(k, ev), Delta: KindDelta(k, ev)}
		f.Usage = f.Frame == Terminal || ev.Name == "message_delta"
		return f
	}
	return Facts{Valid: true, Frame: Output} // (the other formats' Look is theirs)
}

// OnceStarted is f's frame for an event of a stream of kind k after its
// output started, when only errors and the end still matter: a Chat chunk
// is then output whatever it holds (a second role chunk is not held).
func (f Facts) OnceStarted(k Kind) Frame {
	if f.Frame == Hold && k != Responses && k != Messages && k != StreamGenerateContent {
		return Output
	}
	return f.Frame
}
