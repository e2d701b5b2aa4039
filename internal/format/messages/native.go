package messages

import (
	"bytes"
	"encoding/json"
)

// Native is body, going to a model of this format, made fit for that
// vendor when its history holds a turn another vendor answered (format.Requests): a
// request with thinking on whose last assistant turn has a tool call but
// no thinking block first is sent with thinking off (Messages refuses it
// otherwise, and the conversation would end there);
// ok is false, and body unread past a byte search, when nothing needs to
// change.
func (Format) Native(body []byte) (out []byte, ok bool) {
	if !bytes.Contains(body, []byte(`"thinking"`)) || !bytes.Contains(body, []byte(`"tool_use"`)) {
		return nil, false
	}
	return nativeMessages(body)
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
