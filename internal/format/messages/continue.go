package messages

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// continuation is how a broken Messages answer is continued
// (format.Continuation): its content_block_* events say what it has, and a
// continuation's stream, which opens again, is spliced onto it.
type continuation struct{}

// block is what a content_block_* event's data holds that a continuation
// reads.
type block struct {
	Index        int `json:"index"`
	ContentBlock struct {
		Type string `json:"type"`
	} `json:"content_block"`
	Delta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
}

// Block reads a content_block_start (a block opens: its index, whether it
// is text), a content_block_delta (a text_delta's text) or a
// content_block_stop; false for any other event, or one whose data does
// not decode.
func (continuation) Block(ev sse.Event) (format.Block, bool) {
	switch ev.Name {
	case "content_block_start", "content_block_delta", "content_block_stop":
	default:
		return format.Block{}, false
	}
	var b block
	if json.Unmarshal(ev.Data, &b) != nil {
		return format.Block{}, false
	}
	switch ev.Name {
	case "content_block_start":
		return format.Block{Start: true, Index: b.Index, Text: b.ContentBlock.Type == "text"}, true
	case "content_block_delta":
		if b.Delta.Type == "text_delta" {
			return format.Block{Delta: b.Delta.Text}, true
		}
		return format.Block{}, true
	}
	return format.Block{Stop: true}, true
}

// Splice turns an event of a continuation's stream into one of the answer
// it continues, as the caller sees it: the opening (message_start, the
// first block's start, pings) is dropped, content blocks are renumbered
// from base, where the answer broke, and trim, the whitespace the partial
// turn left out, is dropped from the first text.
func (continuation) Splice(ev sse.Event, base int, trim string) (sse.Event, bool, bool, error) {
	switch ev.Name {
	case "message_start", "ping":
		return ev, true, false, nil
	case "content_block_start", "content_block_delta", "content_block_stop":
	default:
		return ev, false, false, nil
	}
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		return ev, false, false, err
	}
	i, _ := m["index"].(float64)
	if ev.Name == "content_block_start" && i == 0 {
		if cb, _ := m["content_block"].(map[string]any); cb["type"] != "text" {
			return ev, false, false, fmt.Errorf("the continuation did not go on with text")
		}
		return ev, true, false, nil // the block it goes on with is the one the caller has open
	}
	m["index"] = base + int(i)
	trimmed := false
	if d, _ := m["delta"].(map[string]any); trim != "" && d["type"] == "text_delta" {
		text, _ := d["text"].(string)
		d["text"] = strings.TrimPrefix(text, trim)
		trimmed = true
	}
	data, err := json.Marshal(m)
	if err != nil {
		return ev, false, false, err
	}
	return sse.Event{Name: ev.Name, Data: data, Raw: fmt.Appendf(nil, "event: %s\ndata: %s\n\n", ev.Name, data)}, false, trimmed, nil
}

// Prefill is b with text as a partial assistant turn after its messages.
func (continuation) Prefill(b *wire.Body, text string) (*wire.Body, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(b.Fields()["messages"], &msgs); err != nil {
		return nil, fmt.Errorf("the request has no messages to continue: %w", err)
	}
	turn, _ := json.Marshal(map[string]string{"role": "assistant", "content": text})
	all, _ := json.Marshal(append(msgs, turn))
	return b.With("messages", all)
}
