package agent

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// builtinModel is each agent's own default model, as the pinned clients
// use it with no configuration: Codex's workhorse (medium tier), Claude
// Code's Opus. Gemini CLI's default is not known here: its chain's first.
var builtinModel = map[Kind]string{Codex: "gpt-6.1-sol", Claude: "claude-opus-5-5"}

// DefaultModel is the model the agent would run on its own, and where that
// comes from: its environment (ANTHROPIC_MODEL, GEMINI_MODEL), its
// configuration file (Codex's $CODEX_HOME/config.toml `model`, Claude
// Code's settings.json `model`, Gemini CLI's settings.json `model.name`),
// else its built-in default. "" for a command spillway does not know.
func DefaultModel(k Kind, getenv func(string) string) (model, from string) {
	home := getenv("HOME")
	switch k {
	case Codex:
		dir := getenv("CODEX_HOME")
		if dir == "" && home != "" {
			dir = filepath.Join(home, ".codex")
		}
		var c struct {
			Model string `toml:"model"`
		}
		path := filepath.Join(dir, "config.toml")
		if dir == "" {
			break
		}
		if b, err := os.ReadFile(path); err == nil && toml.Unmarshal(b, &c) == nil && c.Model != "" {
			return c.Model, path
		}
	case Claude:
		if m := getenv("ANTHROPIC_MODEL"); m != "" {
			return m, "ANTHROPIC_MODEL"
		}
		dir := getenv("CLAUDE_CONFIG_DIR")
		if dir == "" && home != "" {
			dir = filepath.Join(home, ".claude")
		}
		var c struct {
			Model string `json:"model"`
		}
		path := filepath.Join(dir, "settings.json")
		if dir == "" {
			break
		}
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &c) == nil && c.Model != "" {
			return c.Model, path
		}
	case Gemini:
		if m := getenv("GEMINI_MODEL"); m != "" {
			return m, "GEMINI_MODEL"
		}
		dir := getenv("GEMINI_CLI_HOME")
		if dir == "" {
			dir = home
		}
		var c struct {
			Model struct {
				Name string `json:"name"`
			} `json:"model"`
		}
		path := filepath.Join(dir, ".gemini", "settings.json")
		if dir == "" {
			break
		}
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &c) == nil && c.Model.Name != "" {
			return c.Model.Name, path
		}
	default:
		return "", ""
	}
	if m := builtinModel[k]; m != "" {
		return m, string(k) + "'s own default"
	}
	return "", ""
}
