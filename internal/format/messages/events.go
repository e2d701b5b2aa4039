package messages

import (
	"encoding/json"
	"fmt"

	"github.com/spillway/spillway/internal/format"
)

// messagesEvent is what a Messages event says, typed.
type messagesEvent struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *messagesUsageT `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type messagesUsageT struct {
	Input      *int `json:"input_tokens"`
	Output     *int `json:"output_tokens"`
	CacheRead  int  `json:"cache_read_input_tokens"`
	CacheWrite int  `json:"cache_creation_input_tokens"`
}

// messagesDelta is a content_block_delta's: the event of every piece of an
// answer, decoded into no more than it needs.
type messagesDelta struct {
	Index int `json:"index"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
}

func (rd *reader) messagesEvent(name string, data []byte) ([]format.Event, error) {
	switch name {
	case "ping", "content_block_stop": // nothing the client's events need (a block's end is the next one's start)
		if !json.Valid(data) {
			return nil, fmt.Errorf("a %s event that is not JSON", name)
		}
		return nil, nil
	case "content_block_delta":
		var d messagesDelta
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, err
		}
		switch d.Delta.Type {
		case "text_delta":
			return rd.one(format.Event{Kind: format.EvText, Text: d.Delta.Text}), nil
		case "input_json_delta":
			n, err := rd.toolBlock(d.Index)
			if err != nil {
				return nil, err
			}
			if s := d.Delta.PartialJSON; s != "" {
				return rd.one(format.Event{Kind: format.EvCallArgs, Call: n, Text: s}), nil
			}
		}
		return nil, nil // thinking and its signature never leave Anthropic
	case "message_start":
		var m struct {
			Message struct {
				ID    string         `json:"id"`
				Usage messagesUsageT `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		u := m.Message.Usage
		rd.usage.Cached, rd.usage.CacheWrite = u.CacheRead, u.CacheWrite
		rd.usage.Input = deref(u.Input) + u.CacheRead + u.CacheWrite
		rd.usage.Output = deref(u.Output)
		return []format.Event{{Kind: format.EvStart, ID: m.Message.ID}, {Kind: format.EvUsage, Usage: rd.usage}}, nil
	}
	var m messagesEvent
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if name == "" {
		name = m.Type
	}
	switch name {
	case "content_block_start":
		b := m.ContentBlock
		if b.Type != "tool_use" {
			if b.Text != "" && b.Type == "text" {
				return []format.Event{{Kind: format.EvText, Text: b.Text}}, nil
			}
			return nil, nil // text comes in its deltas; thinking never leaves Anthropic
		}
		n := rd.calls
		rd.calls++
		rd.block = m.Index
		return []format.Event{{Kind: format.EvCallStart, Call: n, ID: b.ID, Name: b.Name}}, nil
	case "content_block_delta":
		switch m.Delta.Type {
		case "text_delta":
			return []format.Event{{Kind: format.EvText, Text: m.Delta.Text}}, nil
		case "input_json_delta":
			n, err := rd.toolBlock(m.Index)
			if err != nil {
				return nil, err
			}
			if s := m.Delta.PartialJSON; s != "" {
				return []format.Event{{Kind: format.EvCallArgs, Call: n, Text: s}}, nil
			}
		}
		return nil, nil
	case "message_delta":
		if u := m.Usage; u != nil {
			if u.Output != nil {
				rd.usage.Output = *u.Output
			}
			if u.Input != nil && *u.Input > 0 {
				rd.usage.Input = *u.Input + rd.usage.Cached + rd.usage.CacheWrite
			}
		}
		out := []format.Event{{Kind: format.EvUsage, Usage: rd.usage}}
		if s := m.Delta.StopReason; s != "" {
			out = append(out, format.Event{Kind: format.EvFinish, Stop: messagesStop(s)})
		}
		return out, nil
	case "message_stop":
		return []format.Event{{Kind: format.EvEnd}}, nil
	case "error":
		return []format.Event{{Kind: format.EvError, Text: m.Error.Message, EType: m.Error.Type}}, nil
	}
	return nil, nil // ping, and what comes later
}

// toolBlock is the call of an input_json_delta's block: the last tool_use
// block's (Messages' blocks come one after another; an earlier one ended).
func (rd *reader) toolBlock(index int) (int, error) {
	if rd.block < 0 || index != rd.block {
		return 0, fmt.Errorf("an input_json_delta for block %d, which is not the tool_use in flight", index)
	}
	return rd.calls - 1, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func messagesStop(s string) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return format.StopLength
	case "tool_use":
		return format.StopTool
	case "refusal":
		return format.StopFilter
	case "stop_sequence":
		return format.StopSeq
	}
	return format.StopEnd
}

// reader reads a Messages answer into neutral events; of the calls it
// keeps the one in flight only.
type reader struct {
	block int // the last tool_use block's index (its call is the last), -1: none
	calls int
	usage format.Usage
	evs   []format.Event // an event's, reused: Event's answer is the caller's until the next call
}

// NewReader reads one Messages answer.
func (Format) NewReader() format.EventReader { return &reader{block: -1} }

// one is the reused answer of one event.
func (rd *reader) one(e format.Event) []format.Event {
	rd.evs = append(rd.evs[:0], e)
	return rd.evs
}

// Event is the neutral events of one named event.
func (rd *reader) Event(name string, data []byte) ([]format.Event, error) {
	return rd.messagesEvent(name, data)
}

// Whole is the neutral events of a whole answer.
func (rd *reader) Whole(body []byte) ([]format.Event, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	out := []format.Event{{Kind: format.EvStart, ID: format.Str(m["id"])}}
	for _, b := range format.Objs(m["content"]) {
		switch format.Str(b["type"]) {
		case "text":
			out = append(out, format.Event{Kind: format.EvText, Text: format.Str(b["text"])})
		case "tool_use":
			n := rd.calls
			rd.calls++
			out = append(out, format.Event{Kind: format.EvCallStart, Call: n, ID: format.Str(b["id"]), Name: format.Str(b["name"])},
				format.Event{Kind: format.EvCallArgs, Call: n, Text: format.ArgsText(b["input"])})
		}
	}
	u := format.Obj(m["usage"])
	cached, write := format.IntOf(u["cache_read_input_tokens"]), format.IntOf(u["cache_creation_input_tokens"])
	rd.usage = format.Usage{Input: format.IntOf(u["input_tokens"]) + cached + write, Output: format.IntOf(u["output_tokens"]), Cached: cached, CacheWrite: write}
	return append(out, format.Event{Kind: format.EvUsage, Usage: rd.usage}, format.Event{Kind: format.EvFinish, Stop: messagesStop(format.Str(m["stop_reason"]))}, format.Event{Kind: format.EvEnd}), nil
}
