package wire

import (
	"bytes"
	"encoding/json"

	"github.com/spillway/spillway/internal/sse"
)

// Frame is what one event of a stream means for the rule that holds a
// stream's opening events until its first real output.
type Frame int

// The meanings of a frame.
const (
	Hold     Frame = iota // an opening event: held until output starts
	Output                // real output: commit and pass through
	Terminal              // the stream's normal end
	Error                 // the provider's error event
)

// FrameOf tells what an event of a stream of kind k means: an opening event
// to hold, real output, the normal end, or the provider's error.
func FrameOf(k Kind, ev sse.Event) Frame {
	switch k {
	case Responses:
		switch ev.Name {
		case "response.failed", "error":
			return Error
		case "response.created", "response.in_progress", "response.queued",
			"response.output_item.added", "response.content_part.added":
			// no content yet: a failure can still be hidden from the client
			return Hold
		case "response.completed", "response.incomplete":
			return Terminal
		}
		return Output
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
	case StreamGenerateContent:
		return geminiFrame(ev)
	}
	// Chat Completions: data-only chunks
	d := bytes.TrimSpace(ev.Data)
	if string(d) == "[DONE]" {
		return Terminal
	}
	var chunk struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Delta struct {
				Content   *string         `json:"content"`
				ToolCalls json.RawMessage `json:"tool_calls"`
				Refusal   *string         `json:"refusal"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(d, &chunk) != nil {
		return Output // not ours to judge: pass it on
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		return Error
	}
	for _, c := range chunk.Choices {
		if (c.Delta.Content != nil && *c.Delta.Content != "") || len(c.Delta.ToolCalls) > 0 || c.Delta.Refusal != nil || c.FinishReason != nil {
			return Output
		}
	}
	if len(chunk.Choices) == 0 && len(chunk.Usage) > 0 {
		return Output
	}
	return Hold
}

// FrameOnceStarted is FrameOf for a frame after output has started, when
// only errors and the end still matter: a Chat Completions chunk is parsed
// only if it may carry an error (the quoted key "error" appears in it), so
// a long stream is relayed without decoding each of its chunks.
func FrameOnceStarted(k Kind, ev sse.Event) Frame {
	if k != Chat {
		return FrameOf(k, ev)
	}
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		return Terminal
	}
	if bytes.Contains(ev.Data, []byte(`"error"`)) {
		if f := FrameOf(k, ev); f == Error {
			return Error
		}
	}
	return Output
}

// ChatFinished reports a Chat Completions chunk with a finish_reason: some
// providers end there without [DONE].
func ChatFinished(ev sse.Event) bool {
	return bytes.Contains(ev.Data, []byte(`"finish_reason":"`)) || bytes.Contains(ev.Data, []byte(`"finish_reason": "`))
}

// ValidFrame reports whether an event may be passed on: its name has no
// control characters and its data is JSON (or Chat Completions' [DONE], or
// nothing). A frame that is not is never forwarded: the official SDKs fail
// on it. The check is a scan, not a decode: json.Valid uses a pooled
// scanner and allocates nothing.
func ValidFrame(ev sse.Event) bool {
	if ev.Comment {
		return true
	}
	for i := 0; i < len(ev.Name); i++ {
		if ev.Name[i] < 0x20 || ev.Name[i] == 0x7f {
			return false
		}
	}
	d := bytes.TrimSpace(ev.Data)
	return len(d) == 0 || string(d) == "[DONE]" || json.Valid(d)
}

// geminiFrame judges a streamGenerateContent chunk (alt=sse): an error
// object is an error; a candidate with a finishReason is the end (the
// stream closes after it, with no terminator of its own); a part with text
// or a function call is output; anything else (usage only, an empty
// candidate) is held.
func geminiFrame(ev sse.Event) Frame {
	var chunk struct {
		Error      json.RawMessage `json:"error"`
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         *string         `json:"text"`
					FunctionCall json.RawMessage `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if json.Unmarshal(bytes.TrimSpace(ev.Data), &chunk) != nil {
		return Output // not ours to judge: pass it on
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		return Error
	}
	out := Hold
	for _, c := range chunk.Candidates {
		if c.FinishReason != "" {
			return Terminal
		}
		for _, p := range c.Content.Parts {
			if p.Text != nil && *p.Text != "" || len(p.FunctionCall) > 0 {
				out = Output
			}
		}
	}
	return out
}
