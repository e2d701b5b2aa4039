package sim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/spillway/spillway/classify"
)

// openaiError writes an OpenAI error envelope for f.
func (s *Server) openaiError(w http.ResponseWriter, c *call, f failure) {
	status, typ, code, msg := 500, "server_error", any(nil), "The server had an error while processing your request. Sorry about that!"
	model := c.model.name
	switch f.class {
	case "capacity":
		status, typ, code, msg = 503, "service_unavailable_error", "server_is_overloaded", "Our servers are currently overloaded. Please try again later."
	case "rate_limit":
		status, typ, code = 429, "requests", "rate_limit_exceeded"
		msg = fmt.Sprintf("Rate limit reached for %s in organization org-spillway-sim on requests per min (RPM). Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, classify.FormatWait(f.retryAfter))
		if rv := f.rate; rv != nil {
			s.rateHeaders(w.Header(), c, rv)
			if rv.which == "tokens" {
				typ = "tokens"
				if rv.tooLargeForTPM {
					msg = fmt.Sprintf("Request too large for %s in organization org-spillway-sim on tokens per min (TPM): Limit %d, Requested %d. The input or output tokens must be reduced in order to run successfully.", model, rv.limitTok, rv.req)
				} else {
					msg = fmt.Sprintf("Rate limit reached for %s in organization org-spillway-sim on tokens per min (TPM): Limit %d, Used %d, Requested %d. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, rv.limitTok, rv.usedTok, rv.req, classify.FormatWait(f.retryAfter))
				}
			} else {
				msg = fmt.Sprintf("Rate limit reached for %s in organization org-spillway-sim on requests per min (RPM): Limit %d, Used %d, Requested 1. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, rv.limitReq, rv.usedReq, classify.FormatWait(f.retryAfter))
			}
		}
	case "quota":
		status, typ, code, msg = 429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
	case "auth":
		status, typ, code = 401, "invalid_request_error", "invalid_api_key"
		msg = fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", maskKey(c.key))
		if c.key == "" {
			code = nil
			msg = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
		}
	case "model_not_found":
		status, typ, code, msg = 404, "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)
	case "context_length":
		status, typ, code = 400, "invalid_request_error", "context_length_exceeded"
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", c.model.context, c.inTokens)
		if c.proto.provider() == "openai-responses" {
			msg = "Your input exceeds the context window of this model. Please adjust your input and try again."
		}
	case "bad_json":
		status, typ, code, msg = 400, "invalid_request_error", nil, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
	case "bad_request":
		status, typ, msg = 400, "invalid_request_error", "Invalid request."
	case "content_filter":
		status, typ, code, msg = 400, "invalid_request_error", "content_policy_violation", "Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system."
	case "too_large":
		status, typ, code = 413, "invalid_request_error", "request_too_large"
	}
	if f.message != "" && f.class != "rate_limit" && f.class != "bad_json" {
		msg = f.message
	}
	retryHeaders(w.Header(), f.retryAfter)
	w.Header().Set("x-request-id", "req_"+c.id)
	if f.class == "usage_limit" { // a ChatGPT plan's usage window, as its backend says it
		in := int(f.resetsAt.Sub(s.clock.Now()).Seconds())
		w.Header().Set("x-codex-primary-used-percent", "100.0")
		w.Header().Set("x-codex-primary-reset-at", strconv.FormatInt(f.resetsAt.Unix(), 10))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{"type": "usage_limit_reached", "message": "The usage limit has been reached",
			"plan_type": "plus", "resets_at": f.resetsAt.Unix(), "resets_in_seconds": in}})
		return
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

// ---- Chat Completions ----

type chatProto struct{ s *Server }

func (p chatProto) provider() string { return "openai" }
func (p chatProto) writeError(w http.ResponseWriter, c *call, f failure) {
	p.s.openaiError(w, c, f)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	p := chatProto{s}
	c, m, ok := s.prepare(w, r, p, openaiKey(r))
	if !ok || !s.lookup(w, c, str(m["model"]), "openai") {
		return
	}
	c.prompt = lastUser(m["messages"], "role", "content", false)
	c.convo = chatConvo(m)
	if so, ok := m["stream_options"].(map[string]any); ok {
		if iu, _ := so["include_usage"].(bool); iu {
			c.includeUsage = true
		}
	}
	s.run(w, r, c)
}

func (p chatProto) chunk(c *call, delta map[string]any, finish any) map[string]any {
	return map[string]any{
		"id": "chatcmpl-" + c.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": c.model.name,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
}

func (p chatProto) open(sw *stream, c *call) error {
	return sw.event("", p.chunk(c, map[string]any{"role": "assistant", "content": ""}, nil))
}

func (p chatProto) token(sw *stream, c *call, _ int, tok string) error {
	return sw.event("", p.chunk(c, map[string]any{"content": tok}, nil))
}

func (p chatProto) streamError(sw *stream, c *call, f failure) error {
	// Chat Completions reports a failure inside a stream as a chunk
	// carrying an error object, and ends without [DONE].
	return sw.event("", map[string]any{"error": map[string]any{"message": "Our servers are currently overloaded. Please try again later.", "type": "server_error", "param": nil, "code": "server_is_overloaded"}})
}

func (p chatProto) failEarly(sw *stream, c *call, f failure) error {
	return p.streamError(sw, c, f)
}

func (p chatProto) close(sw *stream, c *call, _ string, u usage) error {
	return p.finish(sw, c, "stop", u)
}

// finish ends a stream: the chunk with the finish reason, the usage chunk
// when the request asked for it, and [DONE].
func (p chatProto) finish(sw *stream, c *call, reason string, u usage) error {
	if err := sw.event("", p.chunk(c, map[string]any{}, reason)); err != nil {
		return err
	}
	if c.includeUsage {
		ch := p.chunk(c, nil, nil)
		ch["choices"] = []any{}
		ch["usage"] = map[string]any{"prompt_tokens": u.in, "completion_tokens": u.out, "total_tokens": u.in + u.out}
		if err := sw.event("", ch); err != nil {
			return err
		}
	}
	return sw.event("", "[DONE]")
}

func (p chatProto) complete(w http.ResponseWriter, c *call, text string, u usage) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-" + c.id, "object": "chat.completion", "created": time.Now().Unix(), "model": c.model.name,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text, "refusal": nil}, "logprobs": nil, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": u.in, "completion_tokens": u.out, "total_tokens": u.in + u.out},
	})
}

// ---- Responses API ----

type responsesProto struct{ s *Server }

func (p responsesProto) provider() string { return "openai-responses" }
func (p responsesProto) writeError(w http.ResponseWriter, c *call, f failure) {
	p.s.openaiError(w, c, f)
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	p := responsesProto{s}
	c, m, ok := s.prepare(w, r, p, openaiKey(r))
	if !ok || !s.lookup(w, c, str(m["model"]), "openai") {
		return
	}
	switch in := m["input"].(type) {
	case string:
		c.prompt = in
	case []any:
		c.prompt = lastUser(in, "role", "content", false)
	}
	c.convo = responsesConvo(m)
	s.run(w, r, c)
}

func (p responsesProto) response(c *call, status string, output []any, u *usage, errObj any) map[string]any {
	resp := map[string]any{
		"id": "resp_" + c.id, "object": "response", "created_at": time.Now().Unix(), "status": status,
		"model": c.model.name, "output": output, "error": errObj, "incomplete_details": nil,
		"parallel_tool_calls": false, "tool_choice": "auto", "tools": []any{}, "usage": nil,
	}
	if u != nil {
		resp["usage"] = map[string]any{
			"input_tokens": u.in, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": u.out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": u.in + u.out,
		}
	}
	return resp
}

func (p responsesProto) message(c *call, text, status string) map[string]any {
	content := []any{}
	if status == "completed" {
		content = []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}
	}
	return map[string]any{"id": "msg_" + c.id, "type": "message", "status": status, "role": "assistant", "content": content}
}

func (p responsesProto) ev(sw *stream, typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["sequence_number"] = sw.seq
	return sw.event(typ, fields)
}

func (p responsesProto) open(sw *stream, c *call) error {
	for _, typ := range []string{"response.created", "response.in_progress"} {
		if err := p.ev(sw, typ, map[string]any{"response": p.response(c, "in_progress", []any{}, nil, nil)}); err != nil {
			return err
		}
	}
	if err := p.ev(sw, "response.output_item.added", map[string]any{"output_index": 0, "item": p.message(c, "", "in_progress")}); err != nil {
		return err
	}
	return p.ev(sw, "response.content_part.added", map[string]any{"item_id": "msg_" + c.id, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
}

func (p responsesProto) token(sw *stream, c *call, _ int, tok string) error {
	return p.ev(sw, "response.output_text.delta", map[string]any{"item_id": "msg_" + c.id, "output_index": 0, "content_index": 0, "delta": tok, "logprobs": []any{}})
}

func (p responsesProto) failed(sw *stream, c *call) error {
	errObj := map[string]any{"code": "server_is_overloaded", "message": "Our servers are currently overloaded. Please try again later."}
	return p.ev(sw, "response.failed", map[string]any{"response": p.response(c, "failed", []any{}, nil, errObj)})
}

func (p responsesProto) streamError(sw *stream, c *call, _ failure) error { return p.failed(sw, c) }

func (p responsesProto) failEarly(sw *stream, c *call, _ failure) error {
	if err := p.ev(sw, "response.created", map[string]any{"response": p.response(c, "in_progress", []any{}, nil, nil)}); err != nil {
		return err
	}
	return p.failed(sw, c)
}

func (p responsesProto) close(sw *stream, c *call, text string, u usage) error {
	id := "msg_" + c.id
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	steps := []struct {
		typ    string
		fields map[string]any
	}{
		{"response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{}}},
		{"response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "part": part}},
		{"response.output_item.done", map[string]any{"output_index": 0, "item": p.message(c, text, "completed")}},
		{"response.completed", map[string]any{"response": p.response(c, "completed", []any{p.message(c, text, "completed")}, &u, nil)}},
	}
	for _, st := range steps {
		if err := p.ev(sw, st.typ, st.fields); err != nil {
			return err
		}
	}
	return nil
}

func (p responsesProto) complete(w http.ResponseWriter, c *call, text string, u usage) {
	resp := p.response(c, "completed", []any{p.message(c, text, "completed")}, &u, nil)
	resp["output_text"] = text
	writeJSON(w, http.StatusOK, resp)
}

// ---- embeddings and models ----

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	p := chatProto{s}
	c, m, ok := s.prepare(w, r, p, openaiKey(r))
	if !ok || !s.lookup(w, c, str(m["model"]), "openai") {
		return
	}
	var inputs []string
	switch in := m["input"].(type) {
	case string:
		inputs = []string{in}
	case []any:
		for _, x := range in {
			inputs = append(inputs, fmt.Sprint(x))
		}
	default:
		p.writeError(w, c, failure{class: "bad_request", message: "'input' is a required property"})
		return
	}
	dims := 8
	if d, ok := m["dimensions"].(float64); ok && d >= 1 && d <= 4096 {
		dims = int(d)
	}
	emb := &embedProto{chatProto: p, inputs: inputs, dims: dims}
	c.proto = emb
	c.stream = false
	s.run(w, r, c)
}

type embedProto struct {
	chatProto
	inputs []string
	dims   int
}

func (p *embedProto) complete(w http.ResponseWriter, c *call, _ string, u usage) {
	data := make([]any, len(p.inputs))
	for i, in := range p.inputs {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Embedding(in, p.dims)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": c.model.name,
		"usage": map[string]any{"prompt_tokens": u.in, "total_tokens": u.in}})
}

// Embedding is the simulator's deterministic unit vector for text.
func Embedding(text string, dims int) []float64 {
	v := make([]float64, dims)
	var norm float64
	h := uint64(1469598103934665603)
	for i := 0; i < dims; i++ {
		for _, b := range []byte(text) {
			h ^= uint64(b)
			h *= 1099511628211
		}
		h ^= uint64(i)
		h *= 1099511628211
		v[i] = float64(int64(h%2000001)-1000000) / 1e6
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	for i := range v {
		if norm > 0 {
			v[i] /= norm
		}
	}
	return v
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	anthropic := r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != ""
	var p protocol = chatProto{s}
	if anthropic {
		p = anthropicProto{s: s}
	}
	if s.keyRefused(w, r, p, "") {
		return
	}
	if anthropic {
		var data []any
		for _, m := range s.sortedModels("anthropic") {
			data = append(data, map[string]any{"type": "model", "id": m.name, "display_name": m.name, "created_at": "2026-01-01T00:00:00Z"})
		}
		first, last := "", ""
		if len(data) > 0 {
			first, last = data[0].(map[string]any)["id"].(string), data[len(data)-1].(map[string]any)["id"].(string)
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last})
		return
	}
	var data []any
	for _, m := range s.sortedModels("openai") {
		data = append(data, map[string]any{"id": m.name, "object": "model", "created": 1767225600, "owned_by": "spillway-sim"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	if s.keyRefused(w, r, chatProto{s}, name) {
		return
	}
	m, ok := s.models[name]
	if !ok {
		s.openaiError(w, &call{proto: chatProto{s}, model: modelInfo{name: name}, id: s.nextID("")}, failure{class: "model_not_found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": m.name, "object": "model", "created": 1767225600, "owned_by": "spillway-sim"})
}
