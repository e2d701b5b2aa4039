package setup

import (
	"os"
	"path/filepath"

	"github.com/spillway/spillway/internal/agentfiles"
)

// Agent is an agent `spillway setup` knows.
type Agent struct {
	// Name is its setup command (spillway setup NAME).
	Name string
	// Title is what its users call it.
	Title string
	// Command is the program it runs as.
	Command string
	// State says whether it is set up for spillway, and for which sign-in
	// ("" when it is not), and the file or environment that says so, as
	// seen from an environment (getenv).
	State func(getenv func(string) string) (state, where string)
}

// Agents are the agents setup knows, in the order the docs list them.
func Agents() []Agent {
	return []Agent{
		{"codex", "Codex CLI", "codex", CodexState},
		{"claude", "Claude Code", "claude", ClaudeState},
		{"gemini", "Gemini CLI", "gemini", GeminiState},
		{"opencode", "OpenCode", "opencode", OpenCodeState},
		{"copilot", "GitHub Copilot CLI", "copilot", CopilotState},
		{"qwen", "Qwen Code", "qwen", QwenState},
		{"cline", "Cline", "cline", ClineState},
		{"continue", "Continue (cn)", "cn", ContinueState},
	}
}

// CodexState reads $CODEX_HOME/config.toml: "api key" or "ChatGPT" (as
// setup codex or setup codex --chatgpt wrote it).
func CodexState(getenv func(string) string) (state, where string) {
	home := agentfiles.CodexHome(getenv)
	if home == "" {
		return "", ""
	}
	path := filepath.Join(home, "config.toml")
	switch CodexSetUp(home) {
	case "chatgpt":
		return "ChatGPT", path
	case "apikey":
		return "api key", path
	}
	return "", ""
}

// ClaudeState reads the environment setup claude prints: Anthropic's API
// (its own key or login, passed through), or the Bedrock or Vertex AI mode
// pointed at a gateway.
func ClaudeState(getenv func(string) string) (state, where string) {
	switch {
	case getenv("CLAUDE_CODE_USE_BEDROCK") != "" && getenv("ANTHROPIC_BEDROCK_BASE_URL") != "":
		return "Bedrock mode", "ANTHROPIC_BEDROCK_BASE_URL=" + getenv("ANTHROPIC_BEDROCK_BASE_URL")
	case getenv("CLAUDE_CODE_USE_VERTEX") != "" && getenv("ANTHROPIC_VERTEX_BASE_URL") != "":
		return "Vertex AI mode", "ANTHROPIC_VERTEX_BASE_URL=" + getenv("ANTHROPIC_VERTEX_BASE_URL")
	case getenv("ANTHROPIC_BASE_URL") != "":
		return "its own key or login", "ANTHROPIC_BASE_URL=" + getenv("ANTHROPIC_BASE_URL")
	}
	return "", ""
}

// GeminiState reads Gemini CLI's settings.json (as setup gemini merged
// it) and the environment it prints.
func GeminiState(getenv func(string) string) (state, where string) {
	s, path, ok := settingsIn(agentfiles.GeminiHome(getenv), agentfiles.ParseGeminiSettings)
	if !ok {
		return "", ""
	}
	auth, _ := s["security"].(map[string]any)
	auth, _ = auth["auth"].(map[string]any)
	switch {
	case auth["selectedType"] == "gemini-api-key" && getenv("GOOGLE_GEMINI_BASE_URL") != "":
		return "api key", path + ", GOOGLE_GEMINI_BASE_URL=" + getenv("GOOGLE_GEMINI_BASE_URL")
	case getenv("CODE_ASSIST_ENDPOINT") != "":
		return "Google sign-in", path + ", CODE_ASSIST_ENDPOINT=" + getenv("CODE_ASSIST_ENDPOINT")
	case auth["selectedType"] == "gemini-api-key":
		return "api key, but GOOGLE_GEMINI_BASE_URL is not set here", path
	}
	return "", ""
}

// settingsIn reads dir/settings.json the way its agent does (parse); ok
// is false when dir is "", or the file is missing or does not parse.
func settingsIn(dir string, parse func([]byte) (map[string]any, error)) (s map[string]any, path string, ok bool) {
	if dir == "" {
		return nil, "", false
	}
	path = filepath.Join(dir, "settings.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, path, false
	}
	s, err = parse(b)
	return s, path, err == nil
}
