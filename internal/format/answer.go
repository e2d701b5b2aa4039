package format

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Usage is an answer's token counts, as far as the target said them.
type Usage struct {
	Input, Output, Cached, CacheWrite, Reasoning int
}

// Stops, in no vendor's words.
const (
	StopEnd    = "end"
	StopLength = "length"
	StopTool   = "tool"
	StopFilter = "filter"
	StopSeq    = "stop_sequence"
)

// Event is one step of an answer in no vendor's format.
type Event struct {
	Kind   EventKind
	Text   string
	Call   int // the call's number in the answer, from 0
	ID     string
	Name   string // the target's tool name
	Stop   string
	Usage  Usage
	Status int    // an error's HTTP-like status
	EType  string // an error's type, in the target's words
}

type EventKind int

const (
	EvStart EventKind = iota // the answer's id is known (usage too, for Messages)
	EvText
	EvCallStart
	EvCallArgs
	EvUsage
	EvFinish // the stop reason (more usage may follow)
	EvEnd    // the answer is over
	EvError  // an error in the stream
)

// ToolCall is one tool ToolCall of the answer.
type ToolCall struct {
	ID, Name string // the client's id and the target's name
	Args     strings.Builder
	Tool     Tool
	Done     bool
}

// NewID is an id for something spillway makes (an answer's, a call's).
func NewID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// ---- reading the target's stream events ----

// reader turns the target's events into neutral ones; it keeps the state
// a format's events need (Messages' content block, Chat's call index): of
// the call in flight only, since arguments for another are an error (the
// stream's), so that what it keeps does not grow with the answer's calls.
type reader struct {
	kind    string // the target endpoint's kind
	block   int    // Messages: the last tool_use block's index (its call is the last), -1: none
	chatAt  int    // Chat: the last call's index, -1: none
	chatMax int    // Chat: the highest call index seen
	calls   int
	usage   Usage
	evs     []Event // an event's, reused: read's answer is the caller's until the next read
}

// one is the reused answer of one event.
func (rd *reader) one(e Event) []Event {
	rd.evs = append(rd.evs[:0], e)
	return rd.evs
}

func newReader(kind string) *reader {
	return &reader{kind: kind, block: -1, chatAt: -1, chatMax: -1}
}

// read is the neutral events of one target event (name, data).
func (rd *reader) read(name string, data []byte) ([]Event, error) {
	switch rd.kind {
	case "chat":
		return rd.chatEvent(data)
	case "messages":
		return rd.messagesEvent(name, data)
	default:
		return rd.geminiEvent(data)
	}
}

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

func (rd *reader) chatEvent(data []byte) ([]Event, error) {
	if strings.TrimSpace(string(data)) == "[DONE]" {
		return []Event{{Kind: EvEnd}}, nil
	}
	var m chatChunk
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if e := m.Error; e != nil {
		return []Event{{Kind: EvError, Text: e.Message, EType: e.Type}}, nil
	}
	out := rd.evs[:0]
	defer func() { rd.evs = out[:0] }()
	if m.ID != "" {
		out = append(out, Event{Kind: EvStart, ID: m.ID})
	}
	for _, ch := range m.Choices {
		d := ch.Delta
		if d == nil {
			d = ch.Message
		}
		if d != nil {
			if d.Content != "" {
				out = append(out, Event{Kind: EvText, Text: d.Content})
			}
			if d.Refusal != "" {
				out = append(out, Event{Kind: EvText, Text: d.Refusal})
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
					out = append(out, Event{Kind: EvCallStart, Call: n, ID: tc.ID, Name: tc.Function.Name})
				}
				if a := tc.Function.Arguments; a != "" {
					if n < 0 {
						return nil, fmt.Errorf("arguments for the tool call at index %d after it ended", idx)
					}
					out = append(out, Event{Kind: EvCallArgs, Call: n, Text: a})
				}
			}
		}
		if ch.Finish != "" {
			out = append(out, Event{Kind: EvFinish, Stop: chatStop(ch.Finish)})
		}
	}
	if u := m.Usage; u != nil {
		rd.usage = Usage{Input: u.Prompt, Output: u.Completion, Cached: u.PD.Cached, Reasoning: u.CD.Reasoning}
		out = append(out, Event{Kind: EvUsage, Usage: rd.usage})
	}
	return out, nil
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
		return StopLength
	case "tool_calls", "function_call":
		return StopTool
	case "content_filter":
		return StopFilter
	}
	return StopEnd
}

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

func (rd *reader) messagesEvent(name string, data []byte) ([]Event, error) {
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
			return rd.one(Event{Kind: EvText, Text: d.Delta.Text}), nil
		case "input_json_delta":
			n, err := rd.toolBlock(d.Index)
			if err != nil {
				return nil, err
			}
			if s := d.Delta.PartialJSON; s != "" {
				return rd.one(Event{Kind: EvCallArgs, Call: n, Text: s}), nil
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
		return []Event{{Kind: EvStart, ID: m.Message.ID}, {Kind: EvUsage, Usage: rd.usage}}, nil
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
				return []Event{{Kind: EvText, Text: b.Text}}, nil
			}
			return nil, nil // text comes in its deltas; thinking never leaves Anthropic
		}
		n := rd.calls
		rd.calls++
		rd.block = m.Index
		return []Event{{Kind: EvCallStart, Call: n, ID: b.ID, Name: b.Name}}, nil
	case "content_block_delta":
		switch m.Delta.Type {
		case "text_delta":
			return []Event{{Kind: EvText, Text: m.Delta.Text}}, nil
		case "input_json_delta":
			n, err := rd.toolBlock(m.Index)
			if err != nil {
				return nil, err
			}
			if s := m.Delta.PartialJSON; s != "" {
				return []Event{{Kind: EvCallArgs, Call: n, Text: s}}, nil
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
		out := []Event{{Kind: EvUsage, Usage: rd.usage}}
		if s := m.Delta.StopReason; s != "" {
			out = append(out, Event{Kind: EvFinish, Stop: messagesStop(s)})
		}
		return out, nil
	case "message_stop":
		return []Event{{Kind: EvEnd}}, nil
	case "error":
		return []Event{{Kind: EvError, Text: m.Error.Message, EType: m.Error.Type}}, nil
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
		return StopLength
	case "tool_use":
		return StopTool
	case "refusal":
		return StopFilter
	case "stop_sequence":
		return StopSeq
	}
	return StopEnd
}

func (rd *reader) geminiEvent(data []byte) ([]Event, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if r := Obj(m["response"]); r != nil { // Code Assist's wrapping
		m = r
	}
	if e := Obj(m["error"]); e != nil {
		return []Event{{Kind: EvError, Text: Str(e["message"]), EType: Str(e["status"]), Status: IntOf(e["code"])}}, nil
	}
	var out []Event
	if id := Str(m["responseId"]); id != "" {
		out = append(out, Event{Kind: EvStart, ID: id})
	}
	stop := ""
	calls := false
	for _, c := range Objs(m["candidates"]) {
		for _, p := range Objs(Obj(c["content"])["parts"]) {
			switch {
			case p["thought"] == true:
			case p["functionCall"] != nil:
				fc := Obj(p["functionCall"])
				n := rd.calls
				rd.calls++
				calls = true
				out = append(out, Event{Kind: EvCallStart, Call: n, ID: Str(fc["id"]), Name: Str(fc["name"])},
					Event{Kind: EvCallArgs, Call: n, Text: ArgsText(fc["args"])})
			case Str(p["text"]) != "":
				out = append(out, Event{Kind: EvText, Text: Str(p["text"])})
			}
		}
		if fr := Str(c["finishReason"]); fr != "" {
			stop = geminiStop(fr)
		}
	}
	if u := Obj(m["usageMetadata"]); u != nil {
		rd.usage = Usage{Input: IntOf(u["promptTokenCount"]), Output: IntOf(u["candidatesTokenCount"]) + IntOf(u["thoughtsTokenCount"]),
			Cached: IntOf(u["cachedContentTokenCount"]), Reasoning: IntOf(u["thoughtsTokenCount"])}
		out = append(out, Event{Kind: EvUsage, Usage: rd.usage})
	}
	if stop != "" {
		if stop == StopEnd && (calls || rd.calls > 0) {
			stop = StopTool
		}
		out = append(out, Event{Kind: EvFinish, Stop: stop}, Event{Kind: EvEnd})
	}
	return out, nil
}

func geminiStop(s string) string {
	switch s {
	case "MAX_TOKENS":
		return StopLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return StopFilter
	}
	return StopEnd
}

// wholeEvents are the events of a target's whole answer.
func (rd *reader) whole(body []byte) ([]Event, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	switch rd.kind {
	case "chat":
		out, err := rd.chatEvent(body)
		return append(out, Event{Kind: EvEnd}), err
	case "messages":
		out := []Event{{Kind: EvStart, ID: Str(m["id"])}}
		for _, b := range Objs(m["content"]) {
			switch Str(b["type"]) {
			case "text":
				out = append(out, Event{Kind: EvText, Text: Str(b["text"])})
			case "tool_use":
				n := rd.calls
				rd.calls++
				out = append(out, Event{Kind: EvCallStart, Call: n, ID: Str(b["id"]), Name: Str(b["name"])},
					Event{Kind: EvCallArgs, Call: n, Text: ArgsText(b["input"])})
			}
		}
		u := Obj(m["usage"])
		cached, write := IntOf(u["cache_read_input_tokens"]), IntOf(u["cache_creation_input_tokens"])
		rd.usage = Usage{Input: IntOf(u["input_tokens"]) + cached + write, Output: IntOf(u["output_tokens"]), Cached: cached, CacheWrite: write}
		return append(out, Event{Kind: EvUsage, Usage: rd.usage}, Event{Kind: EvFinish, Stop: messagesStop(Str(m["stop_reason"]))}, Event{Kind: EvEnd}), nil
	default:
		out, err := rd.geminiEvent(body)
		if len(out) == 0 || out[len(out)-1].Kind != EvEnd {
			out = append(out, Event{Kind: EvFinish, Stop: StopEnd}, Event{Kind: EvEnd})
		}
		return out, err
	}
}
