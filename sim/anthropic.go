package sim

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// anthropicProto is the Messages format: the Anthropic API's, or a cloud's
// (cloud set: Bedrock's envelope, or Vertex AI's).
type anthropicProto struct {
	s     *Server
	cloud *cloudCall
}

func (p anthropicProto) provider() string { return "anthropic" }

func (p anthropicProto) errorBody(c *call, f failure) (int, map[string]any) {
	status, typ, msg := 500, "api_error", "Internal server error"
	switch f.class {
	case "capacity":
		status, typ, msg = 529, "overloaded_error", "Overloaded"
	case "rate_limit":
		status, typ = 429, "rate_limit_error"
		msg = "This request would exceed the rate limit for your organization (org-spillway-sim). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."
		if rv := f.rate; rv != nil {
			if rv.which == "tokens" {
				msg = fmt.Sprintf("This request would exceed your organization's rate limit of %d input tokens per minute (org: org-spillway-sim, model: %s). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.", rv.limitTok, c.model.name)
			} else {
				msg = fmt.Sprintf("This request would exceed the rate limit for your organization (org-spillway-sim) of %d requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.", rv.limitReq)
			}
		}
	case "quota":
		status, typ, msg = 400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	case "usage_limit":
		status, typ, msg = 429, "rate_limit_error", fmt.Sprintf("Claude usage limit reached. Your limit will reset at %s.", f.resetsAt.UTC().Format(time.RFC3339))
	case "auth":
		status, typ, msg = 401, "authentication_error", "invalid x-api-key"
	case "model_not_found":
		status, typ, msg = 404, "not_found_error", "model: "+c.model.name
	case "context_length":
		status, typ, msg = 400, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", c.inTokens, c.model.context)
	case "bad_json":
		status, typ, msg = 400, "invalid_request_error", "There was an issue with your request body: it is not valid JSON."
	case "bad_request":
		status, typ, msg = 400, "invalid_request_error", "Invalid request."
	case "content_filter":
		status, typ, msg = 400, "invalid_request_error", "Output blocked by content filtering policy"
	case "too_large":
		status, typ, msg = 413, "request_too_large", "Request exceeds the maximum allowed number of bytes."
	}
	if f.message != "" && f.class != "rate_limit" && f.class != "bad_json" {
		msg = f.message
	}
	return status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_" + c.id}
}

func (p anthropicProto) writeError(w http.ResponseWriter, c *call, f failure) {
	switch {
	case p.cloud == nil:
	case p.cloud.kind == "bedrock":
		writeBedrockError(w, c.id, p.s.bedrockErrorOf(c, f))
		return
	case p.s.vertexError(w, c, p.cloud, f):
		return // else an error of the model's own, as Vertex AI relays it
	}
	status, body := p.errorBody(c, f)
	if f.rate != nil {
		p.s.rateHeaders(w.Header(), c, f.rate)
	}
	retryHeaders(w.Header(), f.retryAfter)
	if f.class == "usage_limit" { // a Claude plan's window (modelled, not observed)
		w.Header().Set("anthropic-ratelimit-unified-status", "rejected")
		w.Header().Set("anthropic-ratelimit-unified-reset", fmt.Sprint(f.resetsAt.Unix()))
	}
	w.Header().Set("request-id", "req_"+c.id)
	writeJSON(w, status, body)
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	p := anthropicProto{s: s}
	key := r.Header.Get("x-api-key")
	if key == "" {
		key = bearer(r)
	}
	c, m, ok := s.prepare(w, r, p, key)
	if !ok || !s.lookup(w, c, str(m["model"]), "anthropic") {
		return
	}
	c.prompt = lastUser(m["messages"], "role", "content", true)
	c.prefix = trailingAssistant(m["messages"])
	c.convo = messagesConvo(m, r.Header.Get("anthropic-beta"))
	if c.prefix != "" && strings.TrimRight(c.prefix, " \t\r\n") != c.prefix {
		// the API's own rule for a prefill
		s.count(c.model.name, func(st *ModelStats) { st.Received++; st.Rejected["bad_request"]++ })
		p.writeError(w, c, failure{class: "bad_request", message: "messages: final assistant content cannot end with trailing whitespace"})
		return
	}
	s.run(w, r, c)
}

func (p anthropicProto) message(c *call, content []any, stop any, u usage) map[string]any {
	return map[string]any{
		"id": "msg_" + c.id, "type": "message", "role": "assistant", "model": c.vendorModel(),
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.in, "output_tokens": u.out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
}

func (p anthropicProto) ev(sw *stream, typ string, fields map[string]any) error {
	fields["type"] = typ
	return sw.event(typ, fields)
}

func (p anthropicProto) start(sw *stream, c *call) error {
	return p.ev(sw, "message_start", map[string]any{"message": p.message(c, []any{}, nil, usage{in: c.inTokens, out: 1})})
}

func (p anthropicProto) open(sw *stream, c *call) error {
	if err := p.start(sw, c); err != nil {
		return err
	}
	if err := p.ev(sw, "content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}}); err != nil {
		return err
	}
	return p.ev(sw, "ping", map[string]any{})
}

func (p anthropicProto) token(sw *stream, _ *call, _ int, tok string) error {
	return p.ev(sw, "content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": tok}})
}

// framer is Bedrock's event stream for a Bedrock call, SSE (nil) else.
func (p anthropicProto) framer(c *call) framer {
	if p.cloud == nil || p.cloud.kind != "bedrock" {
		return nil
	}
	return &bedrockFrames{enc: eventstream.NewEncoder(), c: c, start: time.Now()}
}

func (p anthropicProto) streamError(sw *stream, c *call, f failure) error {
	if p.cloud != nil && p.cloud.kind == "bedrock" {
		return bedrockStreamError(sw, f)
	}
	_, body := p.errorBody(c, f)
	return sw.event("error", body)
}

func (p anthropicProto) failEarly(sw *stream, c *call, f failure) error {
	if err := p.start(sw, c); err != nil {
		return err
	}
	return p.streamError(sw, c, f)
}

func (p anthropicProto) close(sw *stream, c *call, _ string, u usage) error {
	if err := p.ev(sw, "content_block_stop", map[string]any{"index": 0}); err != nil {
		return err
	}
	if err := p.ev(sw, "message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": u.out}}); err != nil {
		return err
	}
	return p.ev(sw, "message_stop", map[string]any{})
}

// wholeHeaders are the headers of a whole answer.
func (p anthropicProto) wholeHeaders(h http.Header, c *call, u usage) {
	if p.cloud != nil && p.cloud.kind == "bedrock" {
		bedrockHeaders(h, c, u)
		return
	}
	h.Set("request-id", "req_"+c.id)
}

func (p anthropicProto) complete(w http.ResponseWriter, c *call, text string, u usage) {
	p.wholeHeaders(w.Header(), c, u)
	writeJSON(w, http.StatusOK, p.message(c, []any{map[string]any{"type": "text", "text": text}}, "end_turn", u))
}
