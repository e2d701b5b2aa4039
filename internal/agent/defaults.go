package agent

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"

	"github.com/spillway/spillway/internal/agentfiles"
)

// builtinModel is each agent's own default model, as the pinned clients
// use it with no configuration: Codex's workhorse (medium tier), Claude
// Code's Opus. Gemini CLI's default is not known here: its chain's first.
var builtinModel = map[Kind]string{Codex: "gpt-6.1-sol", Claude: "claude-opus-5-5"}

// modelSource is where an agent keeps the model it runs: an environment
// variable, and a file under a directory that a variable may move (else
// under HOME).
type modelSource struct {
	env     string // "" for none
	dirEnv  string
	homeDir string // under HOME when dirEnv is unset
	file    string
	model   func([]byte) string
	// find, when set, finds the model and its file itself (an agent
	// that reads several files, or resolves its file in its own way), in
	// place of dirEnv, homeDir, file and model.
	find func(getenv func(string) string) (model, path string)
}

var modelSources = map[Kind]modelSource{
	Codex: {dirEnv: "CODEX_HOME", homeDir: ".codex", file: "config.toml", model: func(b []byte) string {
		var c struct {
			Model string `toml:"model"`
		}
		_ = toml.Unmarshal(b, &c)
		return c.Model
	}},
	Claude: {env: "ANTHROPIC_MODEL", dirEnv: "CLAUDE_CONFIG_DIR", homeDir: ".claude", file: "settings.json", model: func(b []byte) string {
		var c struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(b, &c)
		return c.Model
	}},
	Gemini: {env: "GEMINI_MODEL", dirEnv: "GEMINI_CLI_HOME", homeDir: "", file: filepath.Join(".gemini", "settings.json"), model: func(b []byte) string {
		s, _ := agentfiles.ParseGeminiSettings(b) // with its comments, as Gemini CLI reads it
		m, _ := s["model"].(map[string]any)
		name, _ := m["name"].(string)
		return name
	}},
}

// DefaultModel is the model the agent would run on its own, and where that
// comes from: its environment (ANTHROPIC_MODEL, GEMINI_MODEL), its
// configuration file (Codex's $CODEX_HOME/config.toml `model`, Claude
// Code's settings.json `model`, Gemini CLI's settings.json `model.name`),
// else its built-in default. "" for a command spillway does not know.
func DefaultModel(k Kind, getenv func(string) string) (model, from string) {
	src, ok := modelSources[k]
	if s := specOf(k); s != nil && s.model != nil {
		src, ok = *s.model, true
	}
	if !ok {
		if s := specOf(k); s != nil && s.builtin != "" {
			return s.builtin, string(k) + "'s own default"
		}
		return "", ""
	}
	if src.env != "" {
		if m := getenv(src.env); m != "" {
			return m, src.env
		}
	}
	if src.find != nil {
		if m, path := src.find(getenv); m != "" {
			return m, path
		}
	}
	dir := getenv(src.dirEnv)
	if home := getenv("HOME"); src.find == nil && dir == "" && home != "" {
		dir = filepath.Join(home, src.homeDir)
	}
	if src.find == nil && dir != "" { // never a path relative to wherever spillway runs
		path := filepath.Join(dir, src.file)
		if b, err := os.ReadFile(path); err == nil {
			if m := src.model(b); m != "" {
				return m, path
			}
		}
	}
	if m := builtinModel[k]; m != "" {
		return m, string(k) + "'s own default"
	}
	if s := specOf(k); s != nil && s.builtin != "" {
		return s.builtin, string(k) + "'s own default"
	}
	return "", ""
}
