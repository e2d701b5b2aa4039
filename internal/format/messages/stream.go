package messages

import (
	"strconv"

	"github.com/spillway/spillway/internal/format"
)

func messagesStopOf(stop string) string {
	switch stop {
	case format.StopLength:
		return "max_tokens"
	case format.StopTool:
		return "tool_use"
	case format.StopFilter:
		return "refusal"
	case format.StopSeq:
		return "stop_sequence"
	}
	return "end_turn"
}

func messagesUsage(u format.Usage) map[string]any {
	return map[string]any{"input_tokens": max(u.Input-u.Cached-u.CacheWrite, 0), "output_tokens": u.Output,
		"cache_read_input_tokens": u.Cached, "cache_creation_input_tokens": u.CacheWrite}
}

// writer writes neutral events as a Messages answer.
type writer struct{}

// Writer writes Messages answers.
func (Format) Writer() format.Writer { return writer{} }

func (writer) Keeps() format.Keeping { return format.KeepNone }

func (writer) Open(s *format.Stream) {
	t := s.Turn()
	s.ID = t.NewID("msg_")
	s.SSE("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": s.ID, "type": "message", "role": "assistant",
		"model": t.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}}})
}

func (writer) Start(s *format.Stream, it *format.Item) {
	it.Index = s.Blocks
	s.Blocks++
	if it.Call != nil {
		if !format.ValidID(it.Call.ID) {
			// another vendor's id Messages would refuse on the turn after
			// (functions.x:0): made valid, as the history's are
			it.Call.ID = format.Safe(it.Call.ID, 40)
		}
		s.SSE("content_block_start", map[string]any{"type": "content_block_start", "index": it.Index,
			"content_block": map[string]any{"type": "tool_use", "id": it.Call.ID, "name": it.Call.Tool.Name, "input": map[string]any{}}})
	} else {
		s.SSE("content_block_start", map[string]any{"type": "content_block_start", "index": it.Index,
			"content_block": map[string]any{"type": "text", "text": ""}})
	}
}

// Text builds its frame rather than through a map (same JSON, fixed key
// order): the most frequent event of all.
func (writer) Text(s *format.Stream, it *format.Item, q []byte) {
	s.Buf = append(s.Buf, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	s.Buf = strconv.AppendInt(s.Buf, int64(it.Index), 10)
	s.Buf = append(append(append(s.Buf, `,"delta":{"type":"text_delta","text":`...), q...), "}}\n\n"...)
}

func (writer) Args(s *format.Stream, it *format.Item, text string) {
	s.SSE("content_block_delta", map[string]any{"type": "content_block_delta", "index": it.Index, "delta": map[string]any{"type": "input_json_delta", "partial_json": text}})
}

func (writer) Close(s *format.Stream, it *format.Item) {
	s.SSE("content_block_stop", map[string]any{"type": "content_block_stop", "index": it.Index})
}

func (writer) Final(s *format.Stream) {
	s.SSE("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": messagesStopOf(s.Stop), "stop_sequence": nil},
		"usage": messagesUsage(s.Usage)})
	s.SSE("message_stop", map[string]any{"type": "message_stop"})
}

func (writer) Whole(s *format.Stream) any {
	content := []any{}
	for _, it := range s.Items {
		if it.Call != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": it.Call.ID, "name": it.Call.Tool.Name, "input": format.ArgsObject(format.CallArgs(it.Call))})
		} else {
			content = append(content, map[string]any{"type": "text", "text": it.Text.String()})
		}
	}
	return map[string]any{"id": s.ID, "type": "message", "role": "assistant", "model": s.Turn().Model, "content": content,
		"stop_reason": messagesStopOf(s.Stop), "stop_sequence": nil, "usage": messagesUsage(s.Usage)}
}
