package gemini

import (
	"encoding/json"

	"github.com/spillway/spillway/internal/wire"
)

// Prompt is p as a generateContent body: contents, generationConfig's
// maxOutputTokens, systemInstruction; the model and the stream are the
// path's.
func (Format) Prompt(p wire.Prompt, _ string) []byte {
	body := map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": p.User}}}}}
	if p.MaxTokens > 0 {
		body["generationConfig"] = map[string]any{"maxOutputTokens": p.MaxTokens}
	}
	if p.System != "" {
		body["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": p.System}}}
	}
	b, _ := json.Marshal(body)
	return b
}
