package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tailscale/hujson"
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

// applyGemini merges settings into existing, which Gemini CLI reads as
// JSON with comments and trailing commas: edited in place with hujson, so
// that the user's comments and order stay (a JSON decoder would refuse
// such a file, or drop its comments).
func applyGemini(existing []byte, settings map[string]any) ([]byte, error) {
	if len(bytes.TrimSpace(existing)) == 0 {
		existing = []byte("{}")
	}
	v, err := hujson.Parse(existing)
	if err != nil {
		return nil, fmt.Errorf("not JSON spillway can merge into (%v); fix it, or add the settings by hand: spillway setup gemini --print", err)
	}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, errors.New("not a JSON object spillway can merge into; fix it, or add the settings by hand: spillway setup gemini --print")
	}
	var ops []map[string]any
	patchOps(&v, "", settings, &ops)
	if len(ops) > 0 {
		patch, _ := json.Marshal(ops)
		if err := v.Patch(patch); err != nil {
			return nil, fmt.Errorf("merging into the settings: %v; add them by hand: spillway setup gemini --print", err)
		}
	}
	v.Format()
	out := v.Pack()
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return out, nil
}

// patchOps are the JSON Patch operations that set every key of add in doc
// at ptr: an object both have is descended into, anything else added or
// replaced whole.
func patchOps(doc *hujson.Value, ptr string, add map[string]any, ops *[]map[string]any) {
	keys := make([]string, 0, len(add))
	for k := range add {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
		have := doc.Find(p)
		sub, isObj := add[k].(map[string]any)
		switch {
		case have == nil:
			*ops = append(*ops, map[string]any{"op": "add", "path": p, "value": add[k]})
		case isObj:
			if _, ok := have.Value.(*hujson.Object); ok {
				patchOps(doc, p, sub, ops)
				continue
			}
			fallthrough
		default:
			*ops = append(*ops, map[string]any{"op": "replace", "path": p, "value": add[k]})
		}
	}
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
