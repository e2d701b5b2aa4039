package behaviour

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Call is one request as a client sends it: a path (with its query), a JSON
// body and headers. The front-end tests build theirs with these helpers.
type Call struct {
	Path, Body string
	Header     map[string]string
}

// Chat is a Chat Completions request.
func Chat(model, prompt string, stream bool) Call {
	return Call{"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, prompt),
		map[string]string{"Authorization": "Bearer sk-test-key-0123456789"}}
}

// Responses is a Responses API request, as Codex sends it.
func Responses(model, prompt string, stream bool) Call {
	return Call{"/v1/responses", fmt.Sprintf(`{"model":%q,"stream":%v,"input":%q}`, model, stream, prompt),
		map[string]string{"Authorization": "Bearer sk-test-key-0123456789"}}
}

// Messages is an Anthropic Messages request, as Claude Code sends it.
func Messages(model, prompt string, stream bool) Call {
	return Call{"/v1/messages?beta=true", fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, prompt),
		map[string]string{"x-api-key": "sk-ant-test-key-0123456789", "anthropic-version": "2023-06-01"}}
}

// Gemini is a Gemini request, as Gemini CLI sends it: the model in the
// path, a stream as streamGenerateContent?alt=sse, the key in
// x-goog-api-key.
func Gemini(model, prompt string, stream bool) Call {
	path := "/v1beta/models/" + model + ":generateContent"
	if stream {
		path = "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
	}
	return Call{path, fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"text":%q}]}]}`, prompt),
		map[string]string{"x-goog-api-key": "AIza-test-key-0123456789"}}
}

// With is c with one more header.
func (c Call) With(k, v string) Call {
	h := map[string]string{}
	for old, ov := range c.Header {
		if !strings.EqualFold(old, k) { // header names match in any case
			h[old] = ov
		}
	}
	h[k] = v // the new value wins over one the call had
	c.Header = h
	return c
}

// WithBody is c with another body.
func (c Call) WithBody(body string) Call {
	c.Body = body
	return c
}

// Request is c as a POST to base.
func (c Call) Request(ctx context.Context, base string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+c.Path, strings.NewReader(c.Body))
	if err != nil {
		return nil, err
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	return req, nil
}

// Text extracts the answer text from a body of any of the protocols, whole
// or streamed.
func Text(b []byte) string {
	var out strings.Builder
	if bytes.Contains(b, []byte("data: ")) {
		for _, line := range strings.Split(string(b), "\n") {
			d, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(d), &m) != nil {
				continue
			}
			switch m["type"] {
			case "response.output_text.delta":
				d, _ := m["delta"].(string)
				out.WriteString(d)
			case "content_block_delta": // a text's (a tool call's arguments are not text)
				d, _ := m["delta"].(map[string]any)
				t, _ := d["text"].(string)
				out.WriteString(t)
			}
			if ch, ok := m["choices"].([]any); ok && len(ch) > 0 {
				if c, ok := ch[0].(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
					out.WriteString(c)
				}
			}
			out.WriteString(geminiText(m))
		}
		return out.String()
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	if s := geminiText(m); s != "" {
		return s
	}
	if ch, ok := m["choices"].([]any); ok && len(ch) > 0 {
		return ch[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	}
	if s, ok := m["output_text"].(string); ok {
		return s
	}
	if items, ok := m["output"].([]any); ok { // a Responses answer without the SDKs' output_text
		for _, it := range items {
			c, _ := it.(map[string]any)["content"].([]any)
			for _, p := range c {
				if t, ok := p.(map[string]any)["text"].(string); ok {
					out.WriteString(t)
				}
			}
		}
		return out.String()
	}
	if c, ok := m["content"].([]any); ok && len(c) > 0 {
		return c[0].(map[string]any)["text"].(string)
	}
	return ""
}

// geminiText is the text of a Gemini answer or chunk's first candidate.
func geminiText(m map[string]any) string {
	cands, _ := m["candidates"].([]any)
	if len(cands) == 0 {
		return ""
	}
	c, _ := cands[0].(map[string]any)
	content, _ := c["content"].(map[string]any)
	parts, _ := content["parts"].([]any)
	var out strings.Builder
	for _, p := range parts {
		if pm, ok := p.(map[string]any); ok {
			if s, ok := pm["text"].(string); ok {
				out.WriteString(s)
			}
		}
	}
	return out.String()
}
