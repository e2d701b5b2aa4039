package format

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spillway/spillway/internal/jsonw"
	"github.com/spillway/spillway/internal/wire"
)

// Stream turns the target's answer, event by event, into the client's: the
// gateway's relay and the library's body write what it gives. One
// goroutine uses it.
type Stream struct {
	t  *Turn
	rd *reader

	id      string // the answer's id, as the client sees it
	created int64
	opened  bool // the client's opening went out
	// items are the answer's items so far, kept only where a closing
	// event repeats them all (Responses' response.completed and failure)
	// or for a whole answer; for another client only the item in flight
	// is kept (cur), and of it only what its own closing event repeats
	items   []*Item
	cur     *Item // the item in flight (Messages' block, Responses' item)
	calls   int   // the answer's calls so far
	held    int64 // the bytes kept for the closing events (Held)
	over    bool  // keeping more would have gone past Turn.MaxHeld: the stream cannot be closed
	stop    string
	usage   Usage
	done    bool // the client's final event went out
	buf     []byte
	whole   bool   // no events: a whole answer is being read
	seq     int    // Responses' sequence_number
	blocks  int    // Messages: content blocks opened
	outputs int    // Responses: output items opened
	q       []byte // a text's JSON, reused
	modelQ  []byte // the model's name as JSON, made once
}

// model is the answering model's name as a JSON string.
func (s *Stream) model() []byte {
	if s.modelQ == nil {
		s.modelQ = jsonw.String(nil, s.t.Model, true)
	}
	return s.modelQ
}

// Item is one piece of the answer: a text, or a call.
type Item struct {
	Text  strings.Builder
	Call  *ToolCall
	Num   int    // a call's number in the answer, from 0
	Index int    // its Messages block index, its Responses output index
	ID    string // its Responses item id
	Open  bool
}

// itemSize is what a kept item costs beyond its text, arguments, ids and
// name: an item and its call as allocated, and its place in the list
// (TestItemSize holds it to the structs' sizes).
const itemSize = 256

// size is what keeping it costs, for Held.
func (it *Item) size() int {
	n := itemSize + len(it.ID)
	if c := it.Call; c != nil {
		n += len(c.ID) + len(c.Name)
	}
	return n
}

// ErrTooLarge is the error of an event whose text or arguments the stream
// would have to keep past Turn.MaxHeld to close the client's stream: the
// stream ends with the client's error event instead (Event keeps nothing
// more, and keeps nothing from then on).
var ErrTooLarge = errors.New("the answer is larger than its translation may hold to close it in the client's format (gateway.max_body_mb, within the gateway's memory budget gateway.max_inflight_mb)")

// Held is the bytes the stream keeps now for its closing events: the texts
// and arguments a closing event repeats (Responses' output_item.done and
// response.completed, Gemini's whole functionCall), and for a Responses
// client every item of the answer. A Chat or Messages client's stream
// keeps none: what went out as deltas is not repeated.
func (s *Stream) Held() int64 { return s.held }

// keepsAll: every item is kept to the end, whole (a Responses client's
// closing events list them all; a whole answer is made of them).
func (s *Stream) keepsAll() bool { return s.whole || s.t.Client.Kind == wire.Responses }

// keepsArgs: a call's arguments are kept until it closes (Gemini's calls
// go out whole), or to the end.
func (s *Stream) keepsArgs() bool {
	return s.keepsAll() || s.t.Client.Kind == wire.GenerateContent || s.t.Client.Kind == wire.StreamGenerateContent
}

// keep counts n more bytes kept, or, when they would take the stream past
// Turn.MaxHeld, drops all it kept and says so (ErrTooLarge): the stream can
// no longer be closed in the client's format.
func (s *Stream) keep(n int) error {
	if m := s.t.MaxHeld; m > 0 && !s.whole && s.held+int64(n) > m {
		s.over = true
		s.items, s.cur, s.held = nil, nil, 0
		return s.tooLarge()
	}
	s.held += int64(n)
	return nil
}

func (s *Stream) tooLarge() error {
	return fmt.Errorf("%w: it would keep more than %d bytes", ErrTooLarge, s.t.MaxHeld)
}

// NewStream is the converter of t's streamed answer.
func (t *Turn) NewStream() *Stream {
	return &Stream{t: t, rd: newReader(string(t.Target.Kind)), created: t.Now().Unix()}
}

// maxReuse is the most a buffer an event was written in is kept for the
// next: one large event does not leave its size held for the rest of the
// stream.
const maxReuse = 256 << 10

// reuse is b emptied for the next event, or nil when it grew past maxReuse.
func reuse(b []byte) []byte {
	if cap(b) > maxReuse {
		return nil
	}
	return b[:0]
}

// Event is the client's frames for one event of the target's stream (its
// name, for formats that name events, and its data): none, one or several,
// valid until the next call (the relay writes or copies them before it
// reads on). An event out of order (arguments for a call already closed)
// is an error: what the client would get is broken.
func (s *Stream) Event(name string, data []byte) ([]byte, error) {
	s.buf, s.q = reuse(s.buf), reuse(s.q)
	if s.over {
		return nil, s.tooLarge()
	}
	evs, err := s.rd.read(name, data)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if err := s.take(ev); err != nil {
			return nil, err
		}
	}
	return s.buf, nil
}

// End is what the client still needs when the target's stream ended
// without its final event but after its stop reason (a Chat provider that
// sends no [DONE]): the client's final events; nil otherwise.
func (s *Stream) End() []byte {
	if s.done || s.stop == "" || s.over {
		return nil
	}
	s.buf = s.buf[:0]
	_ = s.take(Event{Kind: EvEnd})
	return append([]byte(nil), s.buf...)
}

// Done reports that the client's final event went out.
func (s *Stream) Done() bool { return s.done }

// Failing is what the client's Responses stream was told of its response,
// for the failure event that ends it (wire.StreamErrorFrame): its id, model,
// creation time and the next sequence number (taken: the failure is the
// stream's last event), the output so far (an item cut off is incomplete,
// with what it had; none once the stream dropped what it kept: ErrTooLarge)
// and the usage reported so far. A stream that sent
// nothing yet opens first: opening is its response.created and
// response.in_progress, to go before the failure. For another client
// format it is the zero Responding and no opening.
func (s *Stream) Failing() (r wire.Responding, opening []byte) {
	if s.t.Client.Kind != wire.Responses {
		return wire.Responding{}, nil
	}
	if !s.opened {
		s.buf = s.buf[:0]
		s.open()
		opening = append([]byte(nil), s.buf...)
	}
	out := []any{}
	for _, it := range s.items {
		status := "completed"
		if it.Open {
			status = "incomplete"
		}
		out = append(out, s.responsesItem(it, status))
	}
	r = wire.Responding{ID: s.id, Model: s.t.Model, CreatedAt: s.created, Next: int64(s.seq)}
	s.seq++
	r.Output, _ = json.Marshal(out)
	r.Usage, _ = json.Marshal(responsesUsage(s.usage))
	return r, opening
}

func (s *Stream) take(ev Event) error {
	if s.done {
		return nil
	}
	if !s.opened && ev.Kind != EvError {
		s.open()
	}
	switch ev.Kind {
	case EvStart:
	case EvText:
		if ev.Text == "" {
			return nil
		}
		if s.cur == nil || s.cur.Call != nil {
			s.closeItem()
			if err := s.startItem(&Item{}); err != nil {
				return err
			}
		}
		if s.keepsAll() {
			if err := s.keep(len(ev.Text)); err != nil {
				return err
			}
			s.cur.Text.WriteString(ev.Text)
		}
		s.textDelta(ev.Text)
	case EvCallStart:
		s.closeItem()
		id := s.t.ClientID(ev.ID)
		switch {
		case id == "":
			id = s.t.NewID("call_")
		case s.t.Client.Kind == "messages" && !ValidID(id):
			// another vendor's id Messages would refuse on the turn after
			// (functions.x:0): made valid, as the history's are
			id = Safe(id, 40)
		}
		c := &ToolCall{ID: id, Name: ev.Name, Tool: s.t.ToolOf(ev.Name)}
		return s.startItem(&Item{Call: c})
	case EvCallArgs:
		it := s.cur // only the item in flight is open
		if it == nil || it.Call == nil || it.Num != ev.Call {
			return fmt.Errorf("the model sent arguments for call %d after it ended", ev.Call)
		}
		if s.keepsArgs() {
			if err := s.keep(len(ev.Text)); err != nil {
				return err
			}
			it.Call.Args.WriteString(ev.Text)
		}
		s.argsDelta(it, ev.Text)
	case EvUsage:
		s.usage = ev.Usage
	case EvFinish:
		s.closeItem()
		s.stop = ev.Stop
	case EvEnd:
		s.closeItem()
		if s.stop == "" {
			s.stop = StopEnd
		}
		s.final()
		s.done = true
	case EvError:
		// the relay writes the client's error event, in the client's
		// words for the class the classifier gives it
	}
	return nil
}

// startItem opens it, the item in flight; keeping it (a Responses client)
// past Turn.MaxHeld is ErrTooLarge.
func (s *Stream) startItem(it *Item) error {
	if s.t.Client.Kind == wire.Responses {
		it.ID = s.responsesID(it)
	}
	if s.keepsAll() {
		if err := s.keep(it.size()); err != nil {
			return err
		}
		s.items = append(s.items, it)
	}
	if it.Call != nil {
		it.Num = s.calls
		s.calls++
	}
	it.Open = true
	s.cur = it
	switch s.t.Client.Kind {
	case "messages":
		it.Index = s.blocks
		s.blocks++
		if it.Call != nil {
			s.sse("content_block_start", map[string]any{"type": "content_block_start", "index": it.Index,
				"content_block": map[string]any{"type": "tool_use", "id": it.Call.ID, "name": it.Call.Tool.Name, "input": map[string]any{}}})
		} else {
			s.sse("content_block_start", map[string]any{"type": "content_block_start", "index": it.Index,
				"content_block": map[string]any{"type": "text", "text": ""}})
		}
	case "responses":
		it.Index = s.outputs
		s.outputs++
		s.sse("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": it.Index, "item": s.responsesItem(it, "in_progress")})
		if it.Call == nil {
			s.sse("response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": it.ID, "output_index": it.Index, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		}
	case "chat":
		if it.Call != nil {
			s.data(s.chatChunk(map[string]any{"tool_calls": []any{map[string]any{"index": it.Num, "id": it.Call.ID, "type": "function",
				"function": map[string]any{"name": it.Call.Tool.Name, "arguments": ""}}}}, nil))
		}
	}
	return nil
}

// responsesID is a Responses output item's id, for it.
func (s *Stream) responsesID(it *Item) string {
	switch {
	case it.Call == nil:
		return s.t.NewID("msg_")
	case it.Call.Tool.Custom:
		return s.t.NewID("ctc_")
	}
	return s.t.NewID("fc_")
}

// textDelta writes a piece of text: the most frequent event of all, so its
// frame is built here rather than through a map (same JSON, fixed key
// order).
func (s *Stream) textDelta(text string) {
	if s.whole {
		return
	}
	it := s.cur
	q := jsonw.String(s.q[:0], text, true)
	s.q = q
	switch s.t.Client.Kind {
	case "messages":
		s.buf = append(s.buf, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
		s.buf = strconv.AppendInt(s.buf, int64(it.Index), 10)
		s.buf = append(append(append(s.buf, `,"delta":{"type":"text_delta","text":`...), q...), "}}\n\n"...)
	case "responses":
		s.buf = append(s.buf, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":"...)
		s.buf = strconv.AppendInt(s.buf, int64(s.seq), 10)
		s.seq++
		s.buf = append(append(append(s.buf, `,"item_id":"`...), it.ID...), `","output_index":`...)
		s.buf = strconv.AppendInt(s.buf, int64(it.Index), 10)
		s.buf = append(append(append(s.buf, `,"content_index":0,"delta":`...), q...), ",\"logprobs\":[]}\n\n"...)
	case "chat":
		s.buf = append(append(append(s.buf, `data: {"id":"`...), s.id...), `","object":"chat.completion.chunk","created":`...)
		s.buf = strconv.AppendInt(s.buf, s.created, 10)
		s.buf = append(append(append(s.buf, `,"model":`...), s.model()...), `,"choices":[{"index":0,"delta":{"content":`...)
		s.buf = append(append(s.buf, q...), "},\"finish_reason\":null}]}\n\n"...)
	default:
		s.buf = append(append(append(s.buf, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":`...), q...), `}]},"index":0}],"modelVersion":`...)
		s.buf = append(append(append(append(s.buf, s.model()...), `,"responseId":"`...), s.id...), "\"}\n\n"...)
	}
}

func (s *Stream) argsDelta(it *Item, text string) {
	switch s.t.Client.Kind {
	case "messages":
		s.sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": it.Index, "delta": map[string]any{"type": "input_json_delta", "partial_json": text}})
	case "responses":
		if !it.Call.Tool.Custom { // a freeform tool's input is its arguments' "input": whole, at the end
			s.sse("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "item_id": it.ID, "output_index": it.Index, "delta": text})
		}
	case "chat":
		s.data(s.chatChunk(map[string]any{"tool_calls": []any{map[string]any{"index": it.Num, "function": map[string]any{"arguments": text}}}}, nil))
	}
	// Gemini's calls go out whole, when they end
}

// closeItem ends the item in flight.
func (s *Stream) closeItem() {
	it := s.cur
	if it == nil || !it.Open {
		return
	}
	it.Open = false
	s.cur = nil
	switch s.t.Client.Kind {
	case "messages":
		s.sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": it.Index})
	case "responses":
		switch {
		case it.Call == nil:
			text := it.Text.String()
			s.sse("response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": it.ID, "output_index": it.Index, "content_index": 0, "text": text, "logprobs": []any{}})
			s.sse("response.content_part.done", map[string]any{"type": "response.content_part.done", "item_id": it.ID, "output_index": it.Index, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case it.Call.Tool.Custom:
			in := CustomInput(it.Call.Args.String())
			s.sse("response.custom_tool_call_input.delta", map[string]any{"type": "response.custom_tool_call_input.delta", "item_id": it.ID, "output_index": it.Index, "delta": in})
			s.sse("response.custom_tool_call_input.done", map[string]any{"type": "response.custom_tool_call_input.done", "item_id": it.ID, "output_index": it.Index, "input": in})
		default:
			s.sse("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "item_id": it.ID, "output_index": it.Index, "arguments": CallArgs(it.Call)})
		}
		s.sse("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": it.Index, "item": s.responsesItem(it, "completed")})
	case "generateContent", "streamGenerateContent":
		if it.Call != nil {
			s.data(s.geminiChunk([]any{s.geminiCall(it.Call)}, "", false))
		}
	}
	if !s.keepsAll() && it.Call != nil { // a Gemini call's arguments went out whole
		s.held -= int64(it.Call.Args.Len())
	}
}

// CustomInput is a freeform tool's input from the arguments the target's
// model gave its one-string function: their "input" (the text as it came
// when it is not such an object).
func CustomInput(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) == nil {
		if s, ok := m["input"].(string); ok {
			return s
		}
	}
	return args
}

// CallArgs is a call's arguments as the client gets them: the JSON text the
// model gave ({} for none).
func CallArgs(c *ToolCall) string {
	if a := strings.TrimSpace(c.Args.String()); a != "" {
		return a
	}
	return "{}"
}

// open sends the client's opening events.
func (s *Stream) open() {
	s.opened = true
	switch s.t.Client.Kind {
	case "messages":
		s.id = s.t.NewID("msg_")
		s.sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": s.id, "type": "message", "role": "assistant",
			"model": s.t.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}}})
	case "responses":
		s.id = s.t.NewID(wire.SpilledID(s.t.Model)) // resp_spw_MODEL_…: never stored, which a later request is told
		s.sse("response.created", map[string]any{"type": "response.created", "response": s.responsesObject("in_progress")})
		s.sse("response.in_progress", map[string]any{"type": "response.in_progress", "response": s.responsesObject("in_progress")})
	case "chat":
		s.id = s.t.NewID("chatcmpl-")
		if !s.whole { // every stream's first chunk: built, not marshalled
			s.buf = append(append(append(s.buf, `data: {"id":"`...), s.id...), `","object":"chat.completion.chunk","created":`...)
			s.buf = strconv.AppendInt(s.buf, s.created, 10)
			s.buf = append(append(append(s.buf, `,"model":`...), s.model()...), `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
		}
	default:
		s.id = s.t.NewID("")
	}
}

// final sends the client's final events.
func (s *Stream) final() {
	u := s.usage
	switch s.t.Client.Kind {
	case "messages":
		s.sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": messagesStopOf(s.stop), "stop_sequence": nil},
			"usage": messagesUsage(u)})
		s.sse("message_stop", map[string]any{"type": "message_stop"})
	case "responses":
		status := "completed"
		if s.stop == StopLength || s.stop == StopFilter {
			status = "incomplete"
		}
		s.sse("response."+status, map[string]any{"type": "response." + status, "response": s.responsesObject(status)})
	case "chat":
		s.data(s.chatChunk(map[string]any{}, chatStopOf(s.stop)))
		if s.t.req.IncludeUsage { // only when asked: a client that did not may read choices[0] of every chunk
			s.data(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.t.Model, "choices": []any{}, "usage": chatUsage(u)})
		}
		s.buf = append(s.buf, "data: [DONE]\n\n"...)
	default:
		s.data(s.geminiChunk([]any{map[string]any{"text": ""}}, geminiStopOf(s.stop), true))
	}
}

// sse adds one named event.
func (s *Stream) sse(name string, v map[string]any) {
	if s.whole {
		return
	}
	if s.t.Client.Kind == "responses" {
		v["sequence_number"] = s.seq
		s.seq++
	}
	b, _ := json.Marshal(v)
	s.buf = fmt.Appendf(s.buf, "event: %s\ndata: %s\n\n", name, b)
}

// data adds one unnamed event.
func (s *Stream) data(v map[string]any) {
	if s.whole {
		return
	}
	b, _ := json.Marshal(v)
	s.buf = fmt.Appendf(s.buf, "data: %s\n\n", b)
}

func (s *Stream) chatChunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.t.Model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
}

func (s *Stream) geminiChunk(parts []any, finish string, usage bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": s.t.Model, "responseId": s.id}
	if usage {
		out["usageMetadata"] = geminiUsage(s.usage)
	}
	return out
}

func (s *Stream) geminiCall(c *ToolCall) map[string]any {
	return map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Tool.Name, "args": ArgsObject(CallArgs(c))}}
}

// responsesItem is an output item as Responses shows it.
func (s *Stream) responsesItem(it *Item, status string) map[string]any {
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
			in = CustomInput(c.Args.String())
		}
		return map[string]any{"id": it.ID, "type": "custom_tool_call", "status": status, "call_id": c.ID, "name": c.Tool.Name, "input": in}
	}
	args := ""
	if done {
		args = CallArgs(c)
	}
	m := map[string]any{"id": it.ID, "type": "function_call", "status": status, "call_id": c.ID, "name": c.Tool.Name, "arguments": args}
	if ns := c.Tool.Namespace; ns != "" && ns != "functions" {
		m["namespace"] = ns
	}
	return m
}

// responsesObject is the response as its events carry it.
func (s *Stream) responsesObject(status string) map[string]any {
	out := []any{}
	for _, it := range s.items {
		out = append(out, s.responsesItem(it, "completed"))
	}
	r := map[string]any{"id": s.id, "object": "response", "created_at": s.created, "status": status, "model": s.t.Model, "output": out}
	switch status {
	case "in_progress":
		r["output"] = []any{}
	default:
		r["usage"] = responsesUsage(s.usage)
	}
	if status == "incomplete" {
		reason := "max_output_tokens"
		if s.stop == StopFilter {
			reason = "content_filter"
		}
		r["incomplete_details"] = map[string]any{"reason": reason}
	}
	return r
}

func responsesUsage(u Usage) map[string]any {
	return map[string]any{"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": u.Cached},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning}, "total_tokens": u.Input + u.Output}
}

func messagesStopOf(stop string) string {
	switch stop {
	case StopLength:
		return "max_tokens"
	case StopTool:
		return "tool_use"
	case StopFilter:
		return "refusal"
	case StopSeq:
		return "stop_sequence"
	}
	return "end_turn"
}

func chatStopOf(stop string) string {
	switch stop {
	case StopLength:
		return "length"
	case StopTool:
		return "tool_calls"
	case StopFilter:
		return "content_filter"
	}
	return "stop"
}

func geminiStopOf(stop string) string {
	switch stop {
	case StopLength:
		return "MAX_TOKENS"
	case StopFilter:
		return "SAFETY"
	}
	return "STOP"
}

func messagesUsage(u Usage) map[string]any {
	return map[string]any{"input_tokens": max(u.Input-u.Cached-u.CacheWrite, 0), "output_tokens": u.Output,
		"cache_read_input_tokens": u.Cached, "cache_creation_input_tokens": u.CacheWrite}
}

func chatUsage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.Cached}, "completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning}}
}

func geminiUsage(u Usage) map[string]any {
	m := map[string]any{"promptTokenCount": u.Input, "candidatesTokenCount": max(u.Output-u.Reasoning, 0), "totalTokenCount": u.Input + u.Output}
	if u.Cached > 0 {
		m["cachedContentTokenCount"] = u.Cached
	}
	if u.Reasoning > 0 {
		m["thoughtsTokenCount"] = u.Reasoning
	}
	return m
}

// Answer is the client's whole answer for the target's whole answer body.
func (t *Turn) Answer(body []byte) ([]byte, error) {
	s := t.NewStream()
	s.whole = true
	evs, err := s.rd.whole(body)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if err := s.take(ev); err != nil {
			return nil, err
		}
	}
	var out any
	switch t.Client.Kind {
	case "messages":
		content := []any{}
		for _, it := range s.items {
			if it.Call != nil {
				content = append(content, map[string]any{"type": "tool_use", "id": it.Call.ID, "name": it.Call.Tool.Name, "input": ArgsObject(CallArgs(it.Call))})
			} else {
				content = append(content, map[string]any{"type": "text", "text": it.Text.String()})
			}
		}
		out = map[string]any{"id": s.id, "type": "message", "role": "assistant", "model": t.Model, "content": content,
			"stop_reason": messagesStopOf(s.stop), "stop_sequence": nil, "usage": messagesUsage(s.usage)}
	case "responses":
		status := "completed"
		if s.stop == StopLength || s.stop == StopFilter {
			status = "incomplete"
		}
		for _, it := range s.items {
			if it.ID == "" {
				it.ID = s.t.NewID("msg_")
				if it.Call != nil {
					it.ID = s.t.NewID("fc_")
				}
			}
		}
		out = s.responsesObject(status)
	case "chat":
		msg := map[string]any{"role": "assistant", "content": nil}
		var text strings.Builder
		var calls []any
		for _, it := range s.items {
			if it.Call != nil {
				calls = append(calls, map[string]any{"id": it.Call.ID, "type": "function", "function": map[string]any{"name": it.Call.Tool.Name, "arguments": CallArgs(it.Call)}})
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
		out = map[string]any{"id": s.id, "object": "chat.completion", "created": s.created, "model": t.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": chatStopOf(s.stop)}}, "usage": chatUsage(s.usage)}
	default:
		parts := []any{}
		for _, it := range s.items {
			if it.Call != nil {
				parts = append(parts, s.geminiCall(it.Call))
			} else {
				parts = append(parts, map[string]any{"text": it.Text.String()})
			}
		}
		out = map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": geminiStopOf(s.stop), "index": 0}},
			"usageMetadata": geminiUsage(s.usage), "modelVersion": t.Model, "responseId": s.id}
	}
	return json.Marshal(out)
}
