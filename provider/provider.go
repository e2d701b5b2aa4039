// Package provider holds wire facts shared by the gateway and the Go
// library: what each event of a provider's stream means for the rule that
// holds a stream's opening events until its first real output.
package provider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/spillway/spillway/sse"
)

// IsSSE reports an event-stream answer.
func IsSSE(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

// Frame is what one event means for the hold-until-output rule.
type Frame int

const (
	Hold     Frame = iota // opening event: held until output starts
	Output                // real output: commit and pass through
	Terminal              // the stream's normal end
	Error                 // the provider's error event
)

// KindOf tells what an event of an endpoint kind (responses, messages,
// chat) means: an opening event to hold, real output, the normal end, or the
// provider's error.
func KindOf(kind string, ev sse.Event) Frame {
	switch kind {
	case "responses":
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
	case "messages":
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

// KindOnceStarted is KindOf for a frame after output has started, when
// only errors and the end still matter: a Chat Completions chunk is parsed
// only if it may carry an error (the quoted key "error" appears in it), so
// a long stream is relayed without decoding each of its chunks.
func KindOnceStarted(kind string, ev sse.Event) Frame {
	if kind != "chat" {
		return KindOf(kind, ev)
	}
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		return Terminal
	}
	if bytes.Contains(ev.Data, []byte(`"error"`)) {
		if f := KindOf(kind, ev); f == Error {
			return Error
		}
	}
	return Output
}

// EndMarkers are byte strings that appear only in the frames that end a
// stream of the endpoint kind (normally or with the provider's error).
func EndMarkers(kind string) [][]byte {
	switch kind {
	case "responses":
		return [][]byte{[]byte("event: response.completed"), []byte("event: response.incomplete"), []byte("event: response.failed"), []byte("event: error")}
	case "messages":
		return [][]byte{[]byte("event: message_stop"), []byte("event: error")}
	}
	return [][]byte{[]byte("data: [DONE]"), []byte(`"finish_reason":"`), []byte(`"finish_reason": "`)}
}

// ChatFinished reports a Chat Completions chunk with a finish_reason: some
// providers end there without [DONE].
func ChatFinished(ev sse.Event) bool {
	return bytes.Contains(ev.Data, []byte(`"finish_reason":"`)) || bytes.Contains(ev.Data, []byte(`"finish_reason": "`))
}
