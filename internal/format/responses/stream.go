package responses

import (
	"encoding/json"
	"strconv"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// ItemID is a Responses output item's id, for it: given before the item
// is kept.
func (writer) ItemID(s *format.Stream, it *format.Item) string {
	switch {
	case it.Call == nil:
		return s.Turn().NewID("msg_")
	case it.Call.Tool.Custom:
		return s.Turn().NewID("ctc_")
	}
	return s.Turn().NewID("fc_")
}

// item is an output item as Responses shows it.
func item(it *format.Item, status string) map[string]any {
	done := status != "in_progress" // completed, or incomplete with what it had
	if it.Call == nil {
		content := []any{}
		if done {
			content = []any{map[string]any{"type": "output_text", "text": it.Text.String(), "annotations": []any{}}}
		}
		return map[string]any{"id": it.ID, "type": "message", "status": status, "role": "assistant", "content": content}
	}
	c := it.Call
	if c.Tool.Custom {
		in := ""
		if done {
			in = format.CustomInput(c.Args.String())
		}
		return map[string]any{"id": it.ID, "type": "custom_tool_call", "status": status, "call_id": c.ID, "name": c.Tool.Name, "input": in}
	}
	args := ""
	if done {
		args = format.CallArgs(c)
	}
	m := map[string]any{"id": it.ID, "type": "function_call", "status": status, "call_id": c.ID, "name": c.Tool.Name, "arguments": args}
	if ns := c.Tool.Namespace; ns != "" && ns != "functions" {
		m["namespace"] = ns
	}
	return m
}

// object is the response as its events carry it.
func object(s *format.Stream, status string) map[string]any {
	out := []any{}
	for _, it := range s.Items {
		out = append(out, item(it, "completed"))
	}
	r := map[string]any{"id": s.ID, "object": "response", "created_at": s.Created, "status": status, "model": s.Turn().Model, "output": out}
	switch status {
	case "in_progress":
		r["output"] = []any{}
	default:
		r["usage"] = responsesUsage(s.Usage)
	}
	if status == "incomplete" {
		reason := "max_output_tokens"
		if s.Stop == format.StopFilter {
			reason = "content_filter"
		}
		r["incomplete_details"] = map[string]any{"reason": reason}
	}
	return r
}

func responsesUsage(u format.Usage) map[string]any {
	return map[string]any{"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": u.Cached},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning}, "total_tokens": u.Input + u.Output}
}

// writer writes neutral events as a Responses answer: its events are
// numbered (sequence_number), its items have ids, and its closing events
// repeat every item.
type writer struct{}

// Writer writes Responses answers.
func (Format) Writer() format.Writer { return writer{} }

func (writer) Keeps() format.Keeping { return format.KeepAll }

// numbered adds one named event, numbered (sequence_number).
func numbered(s *format.Stream, name string, v map[string]any) {
	if s.Whole {
		return
	}
	v["sequence_number"] = s.Seq
	s.Seq++
	s.SSE(name, v)
}

func (writer) Open(s *format.Stream) {
	t := s.Turn()
	s.ID = t.NewID(SpilledID(t.Model)) // resp_spw_MODEL_…: never stored, which a later request is told
	numbered(s, "response.created", map[string]any{"type": "response.created", "response": object(s, "in_progress")})
	numbered(s, "response.in_progress", map[string]any{"type": "response.in_progress", "response": object(s, "in_progress")})
}

func (writer) Start(s *format.Stream, it *format.Item) {
	it.Index = s.Outputs
	s.Outputs++
	numbered(s, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": it.Index, "item": item(it, "in_progress")})
	if it.Call == nil {
		numbered(s, "response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": it.ID, "output_index": it.Index, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	}
}

// Text builds its frame rather than through a map (same JSON, fixed key
// order): the most frequent event of all.
func (writer) Text(s *format.Stream, it *format.Item, q []byte) {
	s.Buf = append(s.Buf, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":"...)
	s.Buf = strconv.AppendInt(s.Buf, int64(s.Seq), 10)
	s.Seq++
	s.Buf = append(append(append(s.Buf, `,"item_id":"`...), it.ID...), `","output_index":`...)
	s.Buf = strconv.AppendInt(s.Buf, int64(it.Index), 10)
	s.Buf = append(append(append(s.Buf, `,"content_index":0,"delta":`...), q...), ",\"logprobs\":[]}\n\n"...)
}

func (writer) Args(s *format.Stream, it *format.Item, text string) {
	if !it.Call.Tool.Custom { // a freeform tool's input is its arguments' "input": whole, at the end
		numbered(s, "response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "item_id": it.ID, "output_index": it.Index, "delta": text})
	}
}

func (writer) Close(s *format.Stream, it *format.Item) {
	switch {
	case it.Call == nil:
		text := it.Text.String()
		numbered(s, "response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": it.ID, "output_index": it.Index, "content_index": 0, "text": text, "logprobs": []any{}})
		numbered(s, "response.content_part.done", map[string]any{"type": "response.content_part.done", "item_id": it.ID, "output_index": it.Index, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
	case it.Call.Tool.Custom:
		in := format.CustomInput(it.Call.Args.String())
		numbered(s, "response.custom_tool_call_input.delta", map[string]any{"type": "response.custom_tool_call_input.delta", "item_id": it.ID, "output_index": it.Index, "delta": in})
		numbered(s, "response.custom_tool_call_input.done", map[string]any{"type": "response.custom_tool_call_input.done", "item_id": it.ID, "output_index": it.Index, "input": in})
	default:
		numbered(s, "response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "item_id": it.ID, "output_index": it.Index, "arguments": format.CallArgs(it.Call)})
	}
	numbered(s, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": it.Index, "item": item(it, "completed")})
}

func status(s *format.Stream) string {
	if s.Stop == format.StopLength || s.Stop == format.StopFilter {
		return "incomplete"
	}
	return "completed"
}

func (writer) Final(s *format.Stream) {
	st := status(s)
	numbered(s, "response."+st, map[string]any{"type": "response." + st, "response": object(s, st)})
}

func (writer) Whole(s *format.Stream) any {
	for _, it := range s.Items {
		if it.ID == "" {
			it.ID = s.Turn().NewID("msg_")
			if it.Call != nil {
				it.ID = s.Turn().NewID("fc_")
			}
		}
	}
	return object(s, status(s))
}

// Failing is what the client's stream was told of its response, for the
// response.failed that ends it (format.Failer).
func (writer) Failing(s *format.Stream) wire.Responding {
	out := []any{}
	for _, it := range s.Items {
		st := "completed"
		if it.Open {
			st = "incomplete"
		}
		out = append(out, item(it, st))
	}
	r := wire.Responding{ID: s.ID, Model: s.Turn().Model, CreatedAt: s.Created, Next: int64(s.Seq)}
	s.Seq++
	r.Output, _ = json.Marshal(out)
	r.Usage, _ = json.Marshal(responsesUsage(s.Usage))
	return r
}
