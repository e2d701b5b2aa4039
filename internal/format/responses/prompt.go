package responses

import (
	"encoding/json"

	"github.com/spillway/spillway/internal/wire"
)

// Prompt is p as a Responses body: input, instructions, max_output_tokens
// when capped, stream when asked.
func (Format) Prompt(p wire.Prompt, model string) []byte {
	body := map[string]any{"model": model, "input": p.User}
	if p.System != "" {
		body["instructions"] = p.System
	}
	if p.MaxTokens > 0 {
		body["max_output_tokens"] = p.MaxTokens
	}
	if p.Stream {
		body["stream"] = true
	}
	b, _ := json.Marshal(body)
	return b
}
