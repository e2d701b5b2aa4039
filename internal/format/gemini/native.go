package gemini

import (
	"bytes"
	"encoding/json"

	"github.com/spillway/spillway/internal/format"
)

// Native is body, going to a model of this format, made fit for that
// vendor when its history holds a turn another vendor answered (format.Requests): a
// model turn's first function call without a thought signature gets
// Gemini's documented skip_thought_signature_validator;
// ok is false, and body unread past a byte search, when nothing needs to
// change.
func (Format) Native(body []byte) (out []byte, ok bool) {
	if !bytes.Contains(body, []byte(`"functionCall"`)) {
		return nil, false
	}
	return nativeGemini(body)
}

func nativeGemini(body []byte) ([]byte, bool) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	changed := false
	for _, c := range format.Objs(m["contents"]) {
		if format.Str(c["role"]) != "model" {
			continue
		}
		for _, p := range format.Objs(c["parts"]) {
			if p["functionCall"] == nil {
				continue
			}
			if p["thoughtSignature"] == nil {
				p["thoughtSignature"] = SkipSignature
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
