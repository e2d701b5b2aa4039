package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spillway/spillway/internal/format"
)

// chatChunk is what a Chat chunk (or whole answer) says; typed, not a map:
// every event of a translated stream goes through here.
type chatChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta   *chatDelta `json:"delta"`
		Message *chatDelta `json:"message"`
		Finish  string     `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		PD         struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CD struct {
			Reasoning int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

type chatDelta struct {
	Content   string `json:"content"`
	Refusal   string `json:"refusal"`
	ToolCalls []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// chatCall is the call number of a Chat tool call's index, and whether it
// starts there: an index above every one before starts a call (OpenAI
// numbers them in order), the last call's continues it; an earlier one's
// (an ended call's) is -1, for the stream to refuse its arguments, and a
// call that starts at an earlier index than one before is out of order.
func (rd *reader) chatCall(idx int, starts bool) (n int, start bool, err error) {
	switch {
	case idx == rd.chatAt:
		return rd.calls - 1, false, nil
	case idx > rd.chatMax:
		rd.chatAt, rd.chatMax = idx, idx
		rd.calls++
		return rd.calls - 1, true, nil
	case starts:
		return 0, false, fmt.Errorf("a tool call at index %d after one at index %d: out of order", idx, rd.chatMax)
	}
	return -1, false, nil
}

func chatStop(s string) string {
	switch s {
	case "length":
		return format.StopLength
	case "tool_calls", "function_call":
		return format.StopTool
	case "content_filter":
		return format.StopFilter
	}
	return format.StopEnd
}
func (rd *reader) chatEvent(data []byte) ([]format.Event, error) {
	if strings.TrimSpace(string(data)) == "[DONE]" {
		return []format.Event{{Kind: format.EvEnd}}, nil
	}
	var m chatChunk
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if e := m.Error; e != nil {
		return []format.Event{{Kind: format.EvError, Text: e.Message, EType: e.Type}}, nil
	}
	out := rd.evs[:0]
	defer func() { rd.evs = out[:0] }()
	if m.ID != "" {
		out = append(out, format.Event{Kind: format.EvStart, ID: m.ID})
	}
	for _, ch := range m.Choices {
		d := ch.Delta
		if d == nil {
			d = ch.Message
		}
		if d != nil {
			if d.Content != "" {
				out = append(out, format.Event{Kind: format.EvText, Text: d.Content})
			}
			if d.Refusal != "" {
				out = append(out, format.Event{Kind: format.EvText, Text: d.Refusal})
			}
			for j, tc := range d.ToolCalls {
				idx := j // a whole answer's calls have no index
				if tc.Index != nil {
					idx = *tc.Index
				}
				n, start, err := rd.chatCall(idx, tc.ID != "" || tc.Function.Name != "")
				if err != nil {
					return nil, err
				}
				if start {
					out = append(out, format.Event{Kind: format.EvCallStart, Call: n, ID: tc.ID, Name: tc.Function.Name})
				}
				if a := tc.Function.Arguments; a != "" {
					if n < 0 {
						return nil, fmt.Errorf("arguments for the tool call at index %d after it ended", idx)
					}
					out = append(out, format.Event{Kind: format.EvCallArgs, Call: n, Text: a})
				}
			}
		}
		if ch.Finish != "" {
			out = append(out, format.Event{Kind: format.EvFinish, Stop: chatStop(ch.Finish)})
		}
	}
	if u := m.Usage; u != nil {
		rd.usage = format.Usage{Input: u.Prompt, Output: u.Completion, Cached: u.PD.Cached, Reasoning: u.CD.Reasoning}
		out = append(out, format.Event{Kind: format.EvUsage, Usage: rd.usage})
	}
	return out, nil
}

// reader reads a Chat answer into neutral events; of the calls it keeps
// the one in flight only.
type reader struct {
	chatAt  int // the last call's index, -1: none
	chatMax int // the highest call index seen
	calls   int
	usage   format.Usage
	evs     []format.Event // an event's, reused: Event's answer is the caller's until the next call
}

// NewReader reads one Chat answer.
func (Format) NewReader() format.EventReader { return &reader{chatAt: -1, chatMax: -1} }

// Event is the neutral events of one chunk.
func (rd *reader) Event(_ string, data []byte) ([]format.Event, error) { return rd.chatEvent(data) }

// Whole is the neutral events of a whole answer.
func (rd *reader) Whole(body []byte) ([]format.Event, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	out, err := rd.chatEvent(body)
	return append(out, format.Event{Kind: format.EvEnd}), err
}
