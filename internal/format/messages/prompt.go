package messages

import (
	"encoding/json"

	"github.com/spillway/spillway/internal/wire"
)

// Prompt is p as a Messages body: max_tokens is required (4096 when p
// sets none), system when p has one, stream when asked.
func (Format) Prompt(p wire.Prompt, model string) []byte {
	body := map[string]any{"model": model, "max_tokens": cmpOr(p.MaxTokens, 4096),
		"messages": []any{map[string]any{"role": "user", "content": p.User}}}
	if p.System != "" {
		body["system"] = p.System
	}
	if p.Stream {
		body["stream"] = true
	}
	b, _ := json.Marshal(body)
	return b
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
