package sim

import (
	"encoding/json"
	"net/http"
	"time"
)

// The tool calls of each wire format, whole and streamed, as the providers
// write them.

// argsObject is a call's arguments as a JSON value (Messages and Gemini
// carry an object, not its text).
func argsObject(tc toolCall) any {
	var v any
	if json.Unmarshal([]byte(tc.args), &v) != nil {
		return map[string]any{}
	}
	return v
}

// ---- Chat Completions: tool_calls, arguments streamed in deltas ----

func (p chatProto) callPieces(tc toolCall) []string { return pieces(tc.args, 6) }

func (p chatProto) callID(tc toolCall) string { return "call_" + tc.id }

func (p chatProto) callEntry(tc toolCall, args string, withID bool) map[string]any {
	e := map[string]any{}
	if tc.custom {
		body := map[string]any{"input": args}
		if withID {
			body["name"] = tc.name
		}
		e["custom"] = body
	} else {
		body := map[string]any{"arguments": args}
		if withID {
			body["name"] = tc.name
		}
		e["function"] = body
	}
	if withID {
		e["id"], e["type"] = p.callID(tc), "function"
		if tc.custom {
			e["type"] = "custom"
		}
	}
	return e
}

func (p chatProto) callOpen(sw *stream, c *call, _ []toolCall) error {
	return sw.event("", p.chunk(c, map[string]any{"role": "assistant", "content": nil, "refusal": nil}, nil))
}

func (p chatProto) callPiece(sw *stream, c *call, calls []toolCall, j int, piece string, first, _ bool) error {
	tc := calls[j]
	if first {
		e := p.callEntry(tc, "", true)
		e["index"] = j
		if err := sw.event("", p.chunk(c, map[string]any{"tool_calls": []any{e}}, nil)); err != nil {
			return err
		}
	}
	e := p.callEntry(tc, piece, false)
	e["index"] = j
	return sw.event("", p.chunk(c, map[string]any{"tool_calls": []any{e}}, nil))
}

func (p chatProto) callClose(sw *stream, c *call, _ []toolCall, u usage) error {
	return p.finish(sw, c, "tool_calls", u)
}

func (p chatProto) callWhole(w http.ResponseWriter, c *call, calls []toolCall, u usage) {
	list := make([]any, len(calls))
	for i, tc := range calls {
		list[i] = p.callEntry(tc, tc.args, true)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-" + c.id, "object": "chat.completion", "created": time.Now().Unix(), "model": c.model.name,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": list}, "logprobs": nil, "finish_reason": "tool_calls"}},
		"usage":   map[string]any{"prompt_tokens": u.in, "completion_tokens": u.out, "total_tokens": u.in + u.out},
	})
}

// ---- Responses: function_call and custom_tool_call output items ----

func (p responsesProto) callPieces(tc toolCall) []string { return pieces(tc.args, 6) }

func (p responsesProto) callItem(tc toolCall, status string, done bool) map[string]any {
	if tc.custom {
		in := ""
		if done {
			in = tc.args
		}
		return map[string]any{"type": "custom_tool_call", "id": "ctc_" + tc.id, "call_id": "call_" + tc.id, "name": tc.name, "input": in, "status": status}
	}
	args := ""
	if done {
		args = tc.args
	}
	return map[string]any{"type": "function_call", "id": "fc_" + tc.id, "call_id": "call_" + tc.id, "name": tc.name, "arguments": args, "status": status}
}

func (p responsesProto) callOutput(calls []toolCall) []any {
	out := make([]any, len(calls))
	for i, tc := range calls {
		out[i] = p.callItem(tc, "completed", true)
	}
	return out
}

func (p responsesProto) callOpen(sw *stream, c *call, _ []toolCall) error {
	for _, typ := range []string{"response.created", "response.in_progress"} {
		if err := p.ev(sw, typ, map[string]any{"response": p.response(c, "in_progress", []any{}, nil, nil)}); err != nil {
			return err
		}
	}
	return nil
}

func (p responsesProto) callPiece(sw *stream, c *call, calls []toolCall, j int, piece string, first, last bool) error {
	tc := calls[j]
	item := p.callItem(tc, "in_progress", false)
	id := item["id"]
	if first {
		if err := p.ev(sw, "response.output_item.added", map[string]any{"output_index": j, "item": item}); err != nil {
			return err
		}
	}
	delta, done, key := "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments"
	if tc.custom {
		delta, done, key = "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
	}
	if err := p.ev(sw, delta, map[string]any{"item_id": id, "output_index": j, "delta": piece}); err != nil {
		return err
	}
	if !last {
		return nil
	}
	if err := p.ev(sw, done, map[string]any{"item_id": id, "output_index": j, key: tc.args}); err != nil {
		return err
	}
	return p.ev(sw, "response.output_item.done", map[string]any{"output_index": j, "item": p.callItem(tc, "completed", true)})
}

func (p responsesProto) callClose(sw *stream, c *call, calls []toolCall, u usage) error {
	return p.ev(sw, "response.completed", map[string]any{"response": p.response(c, "completed", p.callOutput(calls), &u, nil)})
}

func (p responsesProto) callWhole(w http.ResponseWriter, c *call, calls []toolCall, u usage) {
	writeJSON(w, http.StatusOK, p.response(c, "completed", p.callOutput(calls), &u, nil))
}

// ---- Messages: tool_use blocks, input streamed as input_json_delta;
// with thinking on, a thinking block first ----

// thinkingSignature stands for the signature of a thinking block whose
// text is omitted (thinking.display: omitted), which a client must send
// back with the tool results.
const thinkingSignature = "c2ltdWxhdGVkIHRoaW5raW5nIHNpZ25hdHVyZQ=="

func (p anthropicProto) callPieces(tc toolCall) []string { return pieces(tc.args, 12) }

// offset is the index of the first tool_use block (after a thinking block).
func (p anthropicProto) offset(c *call) int {
	if c.convo != nil && c.convo.thinking {
		return 1
	}
	return 0
}

func (p anthropicProto) callOpen(sw *stream, c *call, _ []toolCall) error {
	if err := p.start(sw, c); err != nil {
		return err
	}
	if p.offset(c) == 0 {
		return nil
	}
	if err := p.ev(sw, "content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}); err != nil {
		return err
	}
	if err := p.ev(sw, "content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "signature_delta", "signature": thinkingSignature}}); err != nil {
		return err
	}
	return p.ev(sw, "content_block_stop", map[string]any{"index": 0})
}

func (p anthropicProto) callPiece(sw *stream, c *call, calls []toolCall, j int, piece string, first, last bool) error {
	tc, idx := calls[j], j+p.offset(c)
	if first {
		if err := p.ev(sw, "content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "tool_use", "id": "toolu_" + tc.id, "name": tc.name, "input": map[string]any{}}}); err != nil {
			return err
		}
	}
	if err := p.ev(sw, "content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}); err != nil {
		return err
	}
	if !last {
		return nil
	}
	return p.ev(sw, "content_block_stop", map[string]any{"index": idx})
}

func (p anthropicProto) callClose(sw *stream, c *call, _ []toolCall, u usage) error {
	if err := p.ev(sw, "message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": u.out}}); err != nil {
		return err
	}
	return p.ev(sw, "message_stop", map[string]any{})
}

func (p anthropicProto) callWhole(w http.ResponseWriter, c *call, calls []toolCall, u usage) {
	var blocks []any
	if p.offset(c) == 1 {
		blocks = append(blocks, map[string]any{"type": "thinking", "thinking": "", "signature": thinkingSignature})
	}
	for _, tc := range calls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": "toolu_" + tc.id, "name": tc.name, "input": argsObject(tc)})
	}
	p.wholeHeaders(w.Header(), c, u)
	writeJSON(w, http.StatusOK, p.message(c, blocks, "tool_use", u))
}

// ---- Gemini: functionCall parts, each whole in its chunk (Gemini does
// not stream a call's arguments), a thought signature on the first ----

func (p geminiProto) callPieces(tc toolCall) []string { return []string{tc.args} }

func (p geminiProto) callPart(tc toolCall, j int) map[string]any {
	part := map[string]any{"functionCall": map[string]any{"name": tc.name, "args": argsObject(tc)}}
	if j == 0 {
		part["thoughtSignature"] = thinkingSignature
	}
	return part
}

func (p geminiProto) callChunk(c *call, parts []any, u *usage) map[string]any {
	cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": c.vendorModel(), "responseId": c.id}
	if u != nil {
		cand["finishReason"] = "STOP"
		out["usageMetadata"] = map[string]any{"promptTokenCount": u.in, "candidatesTokenCount": u.out, "totalTokenCount": u.in + u.out}
	}
	return out
}

func (p geminiProto) callOpen(sw *stream, _ *call, _ []toolCall) error { sw.begin(); return nil }

func (p geminiProto) callPiece(sw *stream, c *call, calls []toolCall, j int, _ string, _, _ bool) error {
	var u *usage
	if j == len(calls)-1 { // the last call's chunk ends the answer
		u = &usage{in: c.inTokens, out: (&callContent{calls: calls}).tokens()}
	}
	return sw.event("", p.callChunk(c, []any{p.callPart(calls[j], j)}, u))
}

func (p geminiProto) callClose(*stream, *call, []toolCall, usage) error { return nil }

func (p geminiProto) callWhole(w http.ResponseWriter, c *call, calls []toolCall, u usage) {
	parts := make([]any, len(calls))
	for j, tc := range calls {
		parts[j] = p.callPart(tc, j)
	}
	writeJSON(w, http.StatusOK, p.callChunk(c, parts, &u))
}

// callArray answers streamGenerateContent without alt=sse: the chunks as
// one JSON array.
func (p geminiArray) callArray(w http.ResponseWriter, c *call, calls []toolCall, u usage) {
	chunks := make([]any, len(calls))
	for j, tc := range calls {
		var up *usage
		if j == len(calls)-1 {
			up = &u
		}
		chunks[j] = p.callChunk(c, []any{p.callPart(tc, j)}, up)
	}
	writeJSON(w, http.StatusOK, chunks)
}
