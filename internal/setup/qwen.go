package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spillway/spillway/internal/agentfiles"
)

// Qwen Code (0.24.4) keeps its settings in settings.json of its directory
// ($QWEN_HOME, else ~/.qwen): JSON with comments, read as Gemini CLI reads
// its own (strip-json-comments, then JSON.parse) but with a leading byte
// order mark dropped first. Its OpenAI-compatible models are the array
// modelProviders.openai, each entry a model: id, name, description,
// baseUrl, envKey (the environment variable that holds the key) and
// generationConfig.

// QwenMarker is the description of the modelProviders entries spillway
// writes: how setup tells its own entries from the user's.
const QwenMarker = "through spillway (spillway setup qwen)"

// QwenOptions are what setup qwen writes: the gateway's OpenAI base URL
// (http://host:port/v1), the models (the first becomes model.name) and
// the environment variable Qwen Code reads the key from.
type QwenOptions struct {
	BaseURL string
	Models  []string
	EnvKey  string
}

// QwenEntry is the modelProviders.openai entry of one model through the
// gateway: the key from EnvKey; the Responses API (wireApi "responses"),
// on which Qwen Code honours the gateway's x-should-retry: false (on Chat
// Completions it tries a chain the gateway found full seven times, each
// held for the gateway's wait budget: about six minutes; on Responses it
// gives up after the one); and generationConfig.maxRetries 0 (its SDK's
// retries and its rate-limit loop of 60 s to 5 min waits would only add
// minutes: the gateway has walked the chain already).
func QwenEntry(o QwenOptions, model string) map[string]any {
	return map[string]any{
		"id":               model,
		"name":             model + " (spillway)",
		"description":      QwenMarker,
		"baseUrl":          o.BaseURL,
		"envKey":           o.EnvKey,
		"wireApi":          "responses",
		"generationConfig": map[string]any{"maxRetries": 0},
	}
}

// QwenSettings are the settings setup merges into existing (the
// settings.json Qwen Code has, already read): OpenAI-compatible auth, the
// first model as model.name, modelProviders.openai with the user's
// entries kept in their order and spillway's (QwenMarker) replaced by one
// per model (ApplyQwen refuses an entry of the user's with the id of one
// of o.Models), and, where the user has some,
// modelFallbacks "" (Qwen Code's
// own fallback off: the gateway falls back inside each request; after
// the gateway says every model of the chain is full, Qwen Code's
// fallbacks, through the same gateway, would each be tried seven times
// more before it exits).
func QwenSettings(existing map[string]any, o QwenOptions) map[string]any {
	mp, _ := existing["modelProviders"].(map[string]any)
	old, _ := mp["openai"].([]any)
	entries := []any{}
	for _, e := range old {
		if m, ok := e.(map[string]any); ok && m["description"] == QwenMarker {
			continue
		}
		entries = append(entries, e)
	}
	for _, m := range o.Models {
		entries = append(entries, QwenEntry(o, m))
	}
	s := map[string]any{
		"security":       map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		"model":          map[string]any{"name": o.Models[0]},
		"modelProviders": map[string]any{"openai": entries},
	}
	if f, _ := existing["modelFallbacks"].(string); f != "" {
		s["modelFallbacks"] = ""
	}
	if len(existing) == 0 {
		s["$version"] = agentfiles.QwenSettingsVersion
	}
	return s
}

// qwenClash is the user's own modelProviders.openai entry (one without
// QwenMarker) with the id of one of models, nil for none.
func qwenClash(s map[string]any, models []string) map[string]any {
	mp, _ := s["modelProviders"].(map[string]any)
	entries, _ := mp["openai"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["description"] != QwenMarker {
			if id, _ := m["id"].(string); slices.Contains(models, id) {
				return m
			}
		}
	}
	return nil
}

// qwenFile is Qwen Code's settings.json.
var qwenFile = JSONFile{Agent: "Qwen Code", File: "settings.json", Command: "spillway setup qwen", Parse: agentfiles.ParseQwenSettings}

// ApplyQwen merges QwenSettings into existing (the settings.json Qwen Code
// has, or nothing), keeping every other byte (comments, order,
// indentation; the modelProviders.openai array is written whole, so
// comments inside it go).
func ApplyQwen(existing []byte, o QwenOptions) ([]byte, error) {
	if len(o.Models) == 0 {
		return nil, errors.New("no model to set up: give --model")
	}
	have := map[string]any{}
	if len(bytes.TrimSpace(existing)) > 0 {
		var err error
		if have, err = agentfiles.ParseQwenSettings(existing); err != nil {
			return nil, fmt.Errorf("Qwen Code cannot start with this file as it is: %v; fix that and run %s again (nothing was changed)", err, qwenFile.Command)
		}
		if mp, ok := have["modelProviders"]; ok {
			if m, ok := mp.(map[string]any); !ok {
				return nil, errors.New("modelProviders is not an object; fix it, or add the settings by hand: spillway setup qwen --print")
			} else if a, ok := m["openai"]; ok {
				if _, ok := a.([]any); !ok {
					return nil, errors.New("modelProviders.openai is not an array; fix it, or add the settings by hand: spillway setup qwen --print")
				}
			}
		}
		if m := qwenClash(have, o.Models); m != nil {
			base, _ := m["baseUrl"].(string)
			return nil, fmt.Errorf("modelProviders.openai has an entry of yours with id %q (baseUrl %q); spillway's entry for that model would replace it: give another --model, or rename or remove yours (nothing was changed)", m["id"], base)
		}
	}
	// the merge reads plain JSON text: a byte order mark (which Qwen Code
	// drops) is set aside, and put back
	bom := []byte("\uFEFF")
	out, err := qwenFile.Apply(bytes.TrimPrefix(existing, bom), QwenSettings(have, o))
	if err != nil || !bytes.HasPrefix(existing, bom) {
		return out, err
	}
	return append(bom, out...), nil
}

// WriteQwen merges the settings into dir/settings.json (dir: see
// agentfiles.QwenHome), keeping the old file as settings.json.spillway-backup-<time>.
// It returns the file and the backup ("" when there was none or nothing
// changed).
func WriteQwen(dir string, o QwenOptions, now time.Time) (path, backup string, err error) {
	if dir == "" {
		return "", "", errors.New("no Qwen Code directory: set QWEN_HOME or HOME")
	}
	return writeMerged(dir, "settings.json", now, func(old []byte) ([]byte, error) {
		return ApplyQwen(old, o)
	})
}

// QwenState says whether Qwen Code is set up for spillway: "api key" when
// its settings.json has a modelProviders.openai entry of spillway's (the
// key from an environment variable), and where = that file.
func QwenState(getenv func(string) string) (state, where string) {
	s, path, ok := settingsIn(agentfiles.QwenHome(getenv, ""), agentfiles.ParseQwenSettings)
	if !ok {
		return "", ""
	}
	mp, _ := s["modelProviders"].(map[string]any)
	entries, _ := mp["openai"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["description"] == QwenMarker {
			return "api key", path
		}
	}
	return "", ""
}

// QwenPrint is what setup qwen --print shows: the settings to merge, as
// JSON (with the user's other modelProviders entries left out).
func QwenPrint(o QwenOptions) string {
	s := QwenSettings(map[string]any{"modelFallbacks": "yours"}, o)
	b, _ := json.MarshalIndent(s, "", "  ")
	return string(b)
}
