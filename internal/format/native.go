package format

import (
	"bytes"
	"encoding/json"

	"github.com/spillway/spillway/internal/wire"
)

// Native is body, a request to ep going to a model of its own format, made
// fit for that vendor when its history holds a turn another vendor
// answered (a cross-vendor step earlier in the conversation): such a turn
// has none of the vendor's own reasoning, which it may require. A Messages
// request with thinking on whose last assistant turn has a tool call but
// no thinking block first is sent with thinking off (Messages refuses it
// otherwise, and the conversation would end there); a Gemini model turn's
// first function call without a thought signature gets Gemini's documented
// skip_thought_signature_validator. ok is false, and body unread past a
// byte search, when nothing needs to change.
func Native(ep wire.Endpoint, body []byte) (out []byte, ok bool) {
	switch ep.Kind {
	case wire.Messages:
		if !bytes.Contains(body, []byte(`"thinking"`)) || !bytes.Contains(body, []byte(`"tool_use"`)) {
			return nil, false
		}
		return nativeMessages(body)
	case wire.GenerateContent, wire.StreamGenerateContent:
		if !bytes.Contains(body, []byte(`"functionCall"`)) {
			return nil, false
		}
		return nativeGemini(body)
	}
	return nil, false
}

func nativeMessages(body []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	var th struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(m["thinking"], &th) != nil || th.Type != "enabled" && th.Type != "adaptive" {
		return nil, false
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m["messages"], &msgs) != nil {
		return nil, false
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "assistant" {
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(msgs[i].Content, &blocks) != nil || len(blocks) == 0 {
			return nil, false
		}
		calls := false
		for _, b := range blocks {
			calls = calls || b.Type == "tool_use"
		}
		if !calls || blocks[0].Type == "thinking" || blocks[0].Type == "redacted_thinking" {
			return nil, false
		}
		delete(m, "thinking")
		out, err := json.Marshal(m)
		return out, err == nil
	}
	return nil, false
}

func nativeGemini(body []byte) ([]byte, bool) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	changed := false
	for _, c := range Objs(m["contents"]) {
		if Str(c["role"]) != "model" {
			continue
		}
		for _, p := range Objs(c["parts"]) {
			if p["functionCall"] == nil {
				continue
			}
			if p["thoughtSignature"] == nil {
				p["thoughtSignature"] = skipSignature
				changed = true
			}
			break // the turn's first call carries it
		}
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(m)
	return out, err == nil
}
