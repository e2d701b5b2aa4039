package chat

import (
	"encoding/json"

	"github.com/spillway/spillway/internal/wire"
)

// Prompt is p as a Chat Completions body: a system message when p has
// one, the user's, max_tokens when capped, stream when asked.
func (Format) Prompt(p wire.Prompt, model string) []byte {
	var msgs []any
	if p.System != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": p.System})
	}
	body := map[string]any{"model": model, "messages": append(msgs, map[string]any{"role": "user", "content": p.User})}
	if p.MaxTokens > 0 {
		body["max_tokens"] = p.MaxTokens // a probe's one token, not a whole answer
	}
	if p.Stream {
		body["stream"] = true
	}
	b, _ := json.Marshal(body)
	return b
}
