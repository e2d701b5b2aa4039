package wire

import "github.com/spillway/spillway/internal/sse"

// KindFrame tells what an event of a stream of kind k means: an opening event
// to hold, real output, the normal end, or the provider's error.
func KindFrame(k Kind, ev sse.Event) Frame {
	switch k {
	case Messages:
		switch ev.Name {
		case "error":
			return Error
		case "message_start", "ping", "content_block_start", "":
			return Hold
		case "message_stop":
			return Terminal
		}
		return Output
	}
	// Chat Completions' and Gemini's data-only chunks are judged by what
	// is in them
	return KindLook(k, ev).Frame
}
