package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spillway/spillway/internal/agentfiles"
)

// ClineProvider is the provider id `cline auth -p openai -b URL` saves
// (Cline's OpenAI-compatible client: Chat Completions, streamed), the
// entry setup cline merges into providers.json.
const ClineProvider = "openai-compatible"

// ClineSettings are the settings setup cline merges (see ApplyCline),
// for --print: the gateway's OpenAI base URL as the openai-compatible
// provider's, that provider the one Cline runs, and no key of its own,
// so that Cline sends $OPENAI_API_KEY.
func ClineSettings(baseURL, model string) map[string]any {
	return map[string]any{
		"lastUsedProvider": ClineProvider,
		"providers": map[string]any{ClineProvider: map[string]any{
			"settings": map[string]any{"provider": ClineProvider, "baseUrl": clineBase(baseURL), "model": model},
		}},
	}
}

func clineBase(baseURL string) string {
	if baseURL == "" {
		baseURL = DefaultURL
	}
	return strings.TrimRight(baseURL, "/") + "/v1"
}

var clineFile = JSONFile{Agent: "Cline", File: "providers.json", Command: "spillway setup cline", Parse: ParseClineSettings}

// clineOpenAI is the settings of existing's openai-compatible entry (nil
// for none, or a file that does not parse).
func clineOpenAI(existing []byte) map[string]any {
	m, err := ParseClineSettings(existing)
	if err != nil {
		return nil
	}
	e, _ := m["providers"].(map[string]any)[ClineProvider].(map[string]any)
	s, _ := e["settings"].(map[string]any)
	return s
}

// ClineModel is the model setup cline writes when --model names none: the
// openai-compatible entry's own when its baseUrl is the gateway's already
// (baseURL + "/v1"; a model of another endpoint, LM Studio's or
// OpenRouter's, is one the gateway may not serve), else fallback (the
// configuration's chain's first).
func ClineModel(existing []byte, baseURL, fallback string) string {
	s := clineOpenAI(existing)
	if m, _ := s["model"].(string); m != "" && s["baseUrl"] == clineBase(baseURL) {
		return m
	}
	return fallback
}

// ClineKeyRemoved says whether merging into existing empties a key the
// openai-compatible entry held (Cline then sends $OPENAI_API_KEY).
func ClineKeyRemoved(existing []byte) bool {
	k, _ := clineOpenAI(existing)["apiKey"].(string)
	return k != ""
}

// ApplyCline merges spillway's provider into existing (Cline's
// providers.json, or nothing): the openai-compatible entry's provider,
// baseUrl (baseURL + "/v1") and model (model; with "", the entry's own,
// and an error when it has none: see ClineModel), an apiKey the entry had emptied (Cline then
// sends $OPENAI_API_KEY, which the gateway passes through), and
// lastUsedProvider. A new entry gets updatedAt (now) and tokenSource, a
// new file version and modes, as Cline writes them. Every other byte
// stays; a file Cline cannot read is refused, and the result is read back
// as Cline reads it.
func ApplyCline(existing []byte, baseURL, model string, now time.Time) ([]byte, error) {
	settings := map[string]any{"lastUsedProvider": ClineProvider}
	entry := map[string]any{}
	s := map[string]any{"provider": ClineProvider, "baseUrl": clineBase(baseURL)}
	if len(bytes.TrimSpace(existing)) == 0 {
		settings["version"] = 1
		settings["modes"] = map[string]any{}
	}
	var old map[string]any
	if len(bytes.TrimSpace(existing)) > 0 {
		var err error
		if old, err = ParseClineSettings(existing); err != nil {
			return nil, fmt.Errorf("Cline cannot read this file as it is (it would ignore all of it): %v; fix that and run spillway setup cline again (nothing was changed)", err)
		}
	}
	providers, _ := old["providers"].(map[string]any)
	have, ok := providers[ClineProvider].(map[string]any)
	if !ok {
		entry["updatedAt"] = now.UTC().Format("2006-01-02T15:04:05.000Z")
		entry["tokenSource"] = "manual"
	}
	hs, _ := have["settings"].(map[string]any)
	switch m, _ := hs["model"].(string); {
	case model != "":
		s["model"] = model
	case m == "":
		return nil, errors.New("no model for Cline's openai-compatible provider: give one (setup cline --model)")
	}
	if _, ok := hs["apiKey"]; ok {
		s["apiKey"] = ""
	}
	entry["settings"] = s
	settings["providers"] = map[string]any{ClineProvider: entry}
	return clineFile.Apply(existing, settings)
}

// WriteCline merges spillway's provider into the providers.json at path
// (see agentfiles.ClineSettingsPath), keeping the old file as
// providers.json.spillway-backup-<time>. It returns the file and the
// backup ("" when there was none or nothing changed).
func WriteCline(path, baseURL, model string, now time.Time) (string, string, error) {
	if path == "" {
		return "", "", errors.New("no Cline directory: set HOME, CLINE_DIR or give --config")
	}
	return writeMerged(filepath.Dir(path), filepath.Base(path), now, func(old []byte) ([]byte, error) {
		return ApplyCline(old, baseURL, model, now)
	})
}

// ParseClineSettings reads providers.json as Cline 3.0.65 does: strict
// JSON (JSON.parse: no comments, no trailing commas), then its schema,
// which, when any part fails, makes Cline ignore the whole file (no
// provider at all, no error). The parts of the schema checked are the
// ones spillway writes and the ones every entry needs: version 1, an
// object of modes, lastUsedProvider a non-empty string, each provider
// entry's settings.provider (a non-empty string), apiKey, model (strings),
// baseUrl (a URL), updatedAt (an ISO time) and tokenSource.
func ParseClineSettings(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(b, int(se.Offset)-1) // Offset is just after the byte at fault
			return nil, fmt.Errorf("line %d, column %d: %v (Cline reads strict JSON: no comments, no trailing commas)", line, col, se)
		}
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	if v, ok := m["version"].(float64); !ok || v != 1 {
		return nil, fmt.Errorf(`"version" is %s, not 1`, jsonOf(m["version"]))
	}
	if v, ok := m["modes"]; ok {
		if _, ok := v.(map[string]any); !ok {
			return nil, fmt.Errorf(`"modes" is %s, not an object`, jsonOf(v))
		}
	}
	if v, ok := m["lastUsedProvider"]; ok {
		if s, ok := v.(string); !ok || s == "" {
			return nil, fmt.Errorf(`"lastUsedProvider" is %s, not a provider id`, jsonOf(v))
		}
	}
	providers, ok := m["providers"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`"providers" is %s, not an object of providers`, jsonOf(m["providers"]))
	}
	for id, v := range providers {
		e, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`providers.%s is %s, not an object`, id, jsonOf(v))
		}
		s, ok := e["settings"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`providers.%s.settings is %s, not an object`, id, jsonOf(e["settings"]))
		}
		if p, ok := s["provider"].(string); !ok || p == "" {
			return nil, fmt.Errorf(`providers.%s.settings.provider is %s, not a provider id`, id, jsonOf(s["provider"]))
		}
		for _, k := range []string{"apiKey", "model", "baseUrl"} {
			if v, ok := s[k]; ok {
				if _, ok := v.(string); !ok {
					return nil, fmt.Errorf(`providers.%s.settings.%s is %s, not a string`, id, k, jsonOf(v))
				}
			}
		}
		if u, ok := s["baseUrl"].(string); ok {
			if p, err := url.Parse(u); err != nil || p.Scheme == "" || p.Host == "" {
				return nil, fmt.Errorf(`providers.%s.settings.baseUrl %q is not a URL`, id, u)
			}
		}
		if t, ok := e["updatedAt"].(string); !ok || !clineTime(t) {
			return nil, fmt.Errorf(`providers.%s.updatedAt is %s, not a time like "2026-12-06T15:20:03.633Z"`, id, jsonOf(e["updatedAt"]))
		}
		if v, ok := e["tokenSource"]; ok {
			if s, _ := v.(string); s != "manual" && s != "oauth" && s != "migration" {
				return nil, fmt.Errorf(`providers.%s.tokenSource is %s, not "manual", "oauth" or "migration"`, id, jsonOf(v))
			}
		}
	}
	return m, nil
}

// clineTime is zod's datetime(): an ISO time in UTC, "Z", fractions allowed.
func clineTime(s string) bool {
	if !strings.HasSuffix(s, "Z") {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func jsonOf(v any) string {
	if v == nil {
		return "missing"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// lineCol is the line and column (from 1) of byte offset off in b.
func lineCol(b []byte, off int) (line, col int) {
	off = min(max(off, 0), len(b))
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// ClineState says whether Cline is set up for spillway: state is "" when it
// is not, else what it is set up for ("api key", ...); where is the file
// (or environment) that says so. getenv is the environment setup runs in.
// Cline is set up when the provider it runs is openai-compatible with the
// gateway's base URL (GatewayBase, the rule setup copilot's listing
// follows too: a /v1 URL that is not a vendor's own API): it sends
// $OPENAI_API_KEY there, or the key the entry holds.
func ClineState(getenv func(string) string) (state, where string) {
	path := agentfiles.ClineSettingsPath(getenv, "")
	if path == "" {
		return "", ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	m, err := ParseClineSettings(b)
	if err != nil || m["lastUsedProvider"] != ClineProvider {
		return "", ""
	}
	base, _ := clineOpenAI(b)["baseUrl"].(string)
	if _, ok := GatewayBase(base, "/v1"); !ok {
		return "", ""
	}
	return "api key", path
}
