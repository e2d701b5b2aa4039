package chat

import (
	"strconv"
	"strings"

	"github.com/spillway/spillway/internal/format"
)

func chatStopOf(stop string) string {
	switch stop {
	case format.StopLength:
		return "length"
	case format.StopTool:
		return "tool_calls"
	case format.StopFilter:
		return "content_filter"
	}
	return "stop"
}

func chatUsage(u format.Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.Cached}, "completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning}}
}

// writer writes neutral events as a Chat answer.
type writer struct{}

// Writer writes Chat answers.
func (Format) Writer() format.Writer { return writer{} }

func (writer) Keeps() format.Keeping { return format.KeepNone }

func chunk(s *format.Stream, delta map[string]any, finish any) map[string]any {
	return map[string]any{"id": s.ID, "object": "chat.completion.chunk", "created": s.Created, "model": s.Turn().Model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
}

func (writer) Open(s *format.Stream) {
	s.ID = s.Turn().NewID("chatcmpl-")
	if !s.Whole { // every stream's first chunk: built, not marshalled
		s.Buf = append(append(append(s.Buf, `data: {"id":"`...), s.ID...), `","object":"chat.completion.chunk","created":`...)
		s.Buf = strconv.AppendInt(s.Buf, s.Created, 10)
		s.Buf = append(append(append(s.Buf, `,"model":`...), s.ModelJSON()...), `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
	}
}

func (writer) Start(s *format.Stream, it *format.Item) {
	if it.Call != nil {
		s.Data(chunk(s, map[string]any{"tool_calls": []any{map[string]any{"index": it.Num, "id": it.Call.ID, "type": "function",
			"function": map[string]any{"name": it.Call.Tool.Name, "arguments": ""}}}}, nil))
	}
}

// Text builds its frame rather than through a map (same JSON, fixed key
// order): the most frequent event of all.
func (writer) Text(s *format.Stream, _ *format.Item, q []byte) {
	s.Buf = append(append(append(s.Buf, `data: {"id":"`...), s.ID...), `","object":"chat.completion.chunk","created":`...)
	s.Buf = strconv.AppendInt(s.Buf, s.Created, 10)
	s.Buf = append(append(append(s.Buf, `,"model":`...), s.ModelJSON()...), `,"choices":[{"index":0,"delta":{"content":`...)
	s.Buf = append(append(s.Buf, q...), "},\"finish_reason\":null}]}\n\n"...)
}

func (writer) Args(s *format.Stream, it *format.Item, text string) {
	s.Data(chunk(s, map[string]any{"tool_calls": []any{map[string]any{"index": it.Num, "function": map[string]any{"arguments": text}}}}, nil))
}

func (writer) Close(*format.Stream, *format.Item) {}

func (writer) Final(s *format.Stream) {
	s.Data(chunk(s, map[string]any{}, chatStopOf(s.Stop)))
	if s.Turn().Req.IncludeUsage { // only when asked: a client that did not may read choices[0] of every chunk
		s.Data(map[string]any{"id": s.ID, "object": "chat.completion.chunk", "created": s.Created, "model": s.Turn().Model, "choices": []any{}, "usage": chatUsage(s.Usage)})
	}
	s.Buf = append(s.Buf, "data: [DONE]\n\n"...)
}

func (writer) Whole(s *format.Stream) any {
	msg := map[string]any{"role": "assistant", "content": nil}
	var text strings.Builder
	var calls []any
	for _, it := range s.Items {
		if it.Call != nil {
			calls = append(calls, map[string]any{"id": it.Call.ID, "type": "function", "function": map[string]any{"name": it.Call.Tool.Name, "arguments": format.CallArgs(it.Call)}})
		} else {
			text.WriteString(it.Text.String())
		}
	}
	if text.Len() > 0 || len(calls) == 0 {
		msg["content"] = text.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	return map[string]any{"id": s.ID, "object": "chat.completion", "created": s.Created, "model": s.Turn().Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": chatStopOf(s.Stop)}}, "usage": chatUsage(s.Usage)}
}
