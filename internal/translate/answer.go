package translate

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
	stopEnd    = "end"
	stopLength = "length"
	stopTool   = "tool"
	stopFilter = "filter"
	stopSeq    = "stop_sequence"
)

// event is one step of an answer in no vendor's format.
type event struct {
	kind   evKind
	text   string
	call   int // the call's number in the answer, from 0
	id     string
	name   string // the target's tool name
	stop   string
	usage  Usage
	status int    // an error's HTTP-like status
	etype  string // an error's type, in the target's words
}

type evKind int

const (
	evStart evKind = iota // the answer's id is known (usage too, for Messages)
	evText
	evCallStart
	evCallArgs
	evUsage
	evFinish // the stop reason (more usage may follow)
	evEnd    // the answer is over
	evError  // an error in the stream
)

// call is one tool call of the answer.
type call struct {
	id, name string // the client's id and the target's name
	args     strings.Builder
	tool     Tool
	done     bool
}

// newID is an id for something spillway makes (an answer's, a call's).
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// ---- reading the target's stream events ----

// reader turns the target's events into neutral ones; it keeps the state
// a format's events need (Messages' content blocks, Chat's call indexes).
type reader struct {
	kind   string      // the target endpoint's kind
	blocks map[int]int // Messages: a tool_use block's index: the call's number
	chat   map[int]int // Chat: a tool call's index: the call's number
	calls  int
	usage  Usage
}

func newReader(kind string) *reader {
	return &reader{kind: kind, blocks: map[int]int{}, chat: map[int]int{}}
}

// read is the neutral events of one target event (name, data).
func (rd *reader) read(name string, data []byte) ([]event, error) {
	switch rd.kind {
	case "chat":
		return rd.chatEvent(data)
	case "messages":
		return rd.messagesEvent(name, data)
	default:
		return rd.geminiEvent(data)
	}
}

func (rd *reader) chatEvent(data []byte) ([]event, error) {
	if strings.TrimSpace(string(data)) == "[DONE]" {
		return []event{{kind: evEnd}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if e := obj(m["error"]); e != nil {
		return []event{{kind: evError, text: str(e["message"]), etype: str(e["type"]) + "/" + str(e["code"])}}, nil
	}
	var out []event
	if id := str(m["id"]); id != "" {
		out = append(out, event{kind: evStart, id: id})
	}
	for _, ch := range objs(m["choices"]) {
		d := obj(ch["delta"])
		if d == nil {
			d = obj(ch["message"])
		}
		if t := str(d["content"]); t != "" {
			out = append(out, event{kind: evText, text: t})
		}
		if t := str(d["refusal"]); t != "" {
			out = append(out, event{kind: evText, text: t})
		}
		for j, tc := range objs(d["tool_calls"]) {
			idx := j // a whole answer's calls have no index
			if v, ok := tc["index"]; ok {
				idx = intOf(v)
			}
			f := obj(tc["function"])
			n, seen := rd.chat[idx]
			if !seen {
				n = rd.calls
				rd.chat[idx] = n
				rd.calls++
				out = append(out, event{kind: evCallStart, call: n, id: str(tc["id"]), name: str(f["name"])})
			}
			if a := str(f["arguments"]); a != "" {
				out = append(out, event{kind: evCallArgs, call: n, text: a})
			}
		}
		if fr := str(ch["finish_reason"]); fr != "" {
			out = append(out, event{kind: evFinish, stop: chatStop(fr)})
		}
	}
	if u := obj(m["usage"]); u != nil {
		rd.usage = Usage{Input: intOf(u["prompt_tokens"]), Output: intOf(u["completion_tokens"]),
			Cached: intOf(obj(u["prompt_tokens_details"])["cached_tokens"]), Reasoning: intOf(obj(u["completion_tokens_details"])["reasoning_tokens"])}
		out = append(out, event{kind: evUsage, usage: rd.usage})
	}
	return out, nil
}

func chatStop(s string) string {
	switch s {
	case "length":
		return stopLength
	case "tool_calls", "function_call":
		return stopTool
	case "content_filter":
		return stopFilter
	}
	return stopEnd
}

func (rd *reader) messagesEvent(name string, data []byte) ([]event, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if name == "" {
		name = str(m["type"])
	}
	switch name {
	case "message_start":
		msg := obj(m["message"])
		u := obj(msg["usage"])
		rd.usage.Input = intOf(u["input_tokens"]) + intOf(u["cache_read_input_tokens"]) + intOf(u["cache_creation_input_tokens"])
		rd.usage.Cached, rd.usage.CacheWrite = intOf(u["cache_read_input_tokens"]), intOf(u["cache_creation_input_tokens"])
		rd.usage.Output = intOf(u["output_tokens"])
		return []event{{kind: evStart, id: str(msg["id"])}, {kind: evUsage, usage: rd.usage}}, nil
	case "content_block_start":
		b := obj(m["content_block"])
		if str(b["type"]) != "tool_use" {
			if t := str(b["text"]); t != "" && str(b["type"]) == "text" {
				return []event{{kind: evText, text: t}}, nil
			}
			return nil, nil // text comes in its deltas; thinking never leaves Anthropic
		}
		n := rd.calls
		rd.calls++
		rd.blocks[intOf(m["index"])] = n
		return []event{{kind: evCallStart, call: n, id: str(b["id"]), name: str(b["name"])}}, nil
	case "content_block_delta":
		d := obj(m["delta"])
		switch str(d["type"]) {
		case "text_delta":
			return []event{{kind: evText, text: str(d["text"])}}, nil
		case "input_json_delta":
			n, ok := rd.blocks[intOf(m["index"])]
			if !ok {
				return nil, fmt.Errorf("an input_json_delta for block %d, which is not a tool_use", intOf(m["index"]))
			}
			if s := str(d["partial_json"]); s != "" {
				return []event{{kind: evCallArgs, call: n, text: s}}, nil
			}
		}
		return nil, nil
	case "message_delta":
		u := obj(m["usage"])
		if v, ok := u["output_tokens"]; ok {
			rd.usage.Output = intOf(v)
		}
		if v, ok := u["input_tokens"]; ok && intOf(v) > 0 {
			rd.usage.Input = intOf(v) + rd.usage.Cached + rd.usage.CacheWrite
		}
		out := []event{{kind: evUsage, usage: rd.usage}}
		if s := str(obj(m["delta"])["stop_reason"]); s != "" {
			out = append(out, event{kind: evFinish, stop: messagesStop(s)})
		}
		return out, nil
	case "message_stop":
		return []event{{kind: evEnd}}, nil
	case "error":
		e := obj(m["error"])
		return []event{{kind: evError, text: str(e["message"]), etype: str(e["type"])}}, nil
	}
	return nil, nil // ping, and what comes later
}

func messagesStop(s string) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return stopLength
	case "tool_use":
		return stopTool
	case "refusal":
		return stopFilter
	case "stop_sequence":
		return stopSeq
	}
	return stopEnd
}

func (rd *reader) geminiEvent(data []byte) ([]event, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if r := obj(m["response"]); r != nil { // Code Assist's wrapping
		m = r
	}
	if e := obj(m["error"]); e != nil {
		return []event{{kind: evError, text: str(e["message"]), etype: str(e["status"]), status: intOf(e["code"])}}, nil
	}
	var out []event
	if id := str(m["responseId"]); id != "" {
		out = append(out, event{kind: evStart, id: id})
	}
	stop := ""
	calls := false
	for _, c := range objs(m["candidates"]) {
		for _, p := range objs(obj(c["content"])["parts"]) {
			switch {
			case p["thought"] == true:
			case p["functionCall"] != nil:
				fc := obj(p["functionCall"])
				n := rd.calls
				rd.calls++
				calls = true
				out = append(out, event{kind: evCallStart, call: n, id: str(fc["id"]), name: str(fc["name"])},
					event{kind: evCallArgs, call: n, text: argsText(fc["args"])})
			case str(p["text"]) != "":
				out = append(out, event{kind: evText, text: str(p["text"])})
			}
		}
		if fr := str(c["finishReason"]); fr != "" {
			stop = geminiStop(fr)
		}
	}
	if u := obj(m["usageMetadata"]); u != nil {
		rd.usage = Usage{Input: intOf(u["promptTokenCount"]), Output: intOf(u["candidatesTokenCount"]) + intOf(u["thoughtsTokenCount"]),
			Cached: intOf(u["cachedContentTokenCount"]), Reasoning: intOf(u["thoughtsTokenCount"])}
		out = append(out, event{kind: evUsage, usage: rd.usage})
	}
	if stop != "" {
		if stop == stopEnd && (calls || rd.calls > 0) {
			stop = stopTool
		}
		out = append(out, event{kind: evFinish, stop: stop}, event{kind: evEnd})
	}
	return out, nil
}

func geminiStop(s string) string {
	switch s {
	case "MAX_TOKENS":
		return stopLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return stopFilter
	}
	return stopEnd
}

// wholeEvents are the events of a target's whole answer.
func (rd *reader) whole(body []byte) ([]event, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	switch rd.kind {
	case "chat":
		out, err := rd.chatEvent(body)
		return append(out, event{kind: evEnd}), err
	case "messages":
		out := []event{{kind: evStart, id: str(m["id"])}}
		for _, b := range objs(m["content"]) {
			switch str(b["type"]) {
			case "text":
				out = append(out, event{kind: evText, text: str(b["text"])})
			case "tool_use":
				n := rd.calls
				rd.calls++
				out = append(out, event{kind: evCallStart, call: n, id: str(b["id"]), name: str(b["name"])},
					event{kind: evCallArgs, call: n, text: argsText(b["input"])})
			}
		}
		u := obj(m["usage"])
		cached, write := intOf(u["cache_read_input_tokens"]), intOf(u["cache_creation_input_tokens"])
		rd.usage = Usage{Input: intOf(u["input_tokens"]) + cached + write, Output: intOf(u["output_tokens"]), Cached: cached, CacheWrite: write}
		return append(out, event{kind: evUsage, usage: rd.usage}, event{kind: evFinish, stop: messagesStop(str(m["stop_reason"]))}, event{kind: evEnd}), nil
	default:
		out, err := rd.geminiEvent(body)
		if len(out) == 0 || out[len(out)-1].kind != evEnd {
			out = append(out, event{kind: evFinish, stop: stopEnd}, event{kind: evEnd})
		}
		return out, err
	}
}
