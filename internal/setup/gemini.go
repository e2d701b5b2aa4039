package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// GeminiSettings are the settings spillway needs Gemini CLI to have:
// API-key auth (the only kind a base URL applies to), and one attempt per
// request (the gateway has walked the chain already; Gemini CLI's own ten
// retries of a 503 would only add minutes).
var GeminiSettings = map[string]any{
	"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	"general":  map[string]any{"maxAttempts": 1},
}

// GeminiGoogleSettings are what Gemini CLI signed in with Google needs:
// one attempt per request; its own sign-in stays as it is.
var GeminiGoogleSettings = map[string]any{
	"general": map[string]any{"maxAttempts": 1},
}

// ApplyGemini merges GeminiSettings into existing (the settings.json
// Gemini CLI has, or nothing), keeping every other setting.
func ApplyGemini(existing []byte) ([]byte, error) { return applyGemini(existing, GeminiSettings) }

// ApplyGeminiGoogle merges GeminiGoogleSettings into existing.
func ApplyGeminiGoogle(existing []byte) ([]byte, error) {
	return applyGemini(existing, GeminiGoogleSettings)
}

func applyGemini(existing []byte, settings map[string]any) ([]byte, error) {
	doc := map[string]any{}
	if len(bytes.TrimSpace(existing)) > 0 {
		if err := json.Unmarshal(existing, &doc); err != nil {
			return nil, fmt.Errorf("not JSON spillway can merge into (%v); fix it, or add the settings by hand: spillway setup gemini --print", err)
		}
	}
	merge(doc, settings)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// WriteGemini merges GeminiSettings into dir/settings.json (dir: see
// GeminiHome), keeping the old file as settings.json.spillway-backup-<time>.
// It returns the file and the backup ("" when there was none or nothing
// changed).
func WriteGemini(dir string, now time.Time) (path, backup string, err error) {
	if dir == "" {
		return "", "", errors.New("no Gemini CLI directory: set GEMINI_CLI_HOME or HOME")
	}
	return writeMerged(dir, "settings.json", now, func(old []byte) ([]byte, error) {
		return ApplyGemini(old)
	})
}

// WriteGeminiGoogle is WriteGemini with GeminiGoogleSettings.
func WriteGeminiGoogle(dir string, now time.Time) (path, backup string, err error) {
	if dir == "" {
		return "", "", errors.New("no Gemini CLI directory: set GEMINI_CLI_HOME or HOME")
	}
	return writeMerged(dir, "settings.json", now, func(old []byte) ([]byte, error) {
		return ApplyGeminiGoogle(old)
	})
}

// merge sets every key of add in doc, descending into objects both have.
func merge(doc, add map[string]any) {
	for k, v := range add {
		sub, isObj := v.(map[string]any)
		have, hasObj := doc[k].(map[string]any)
		if isObj && hasObj {
			merge(have, sub)
			continue
		}
		if isObj {
			cp := map[string]any{}
			merge(cp, sub)
			v = cp
		}
		doc[k] = v
	}
}
