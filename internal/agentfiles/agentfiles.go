// Package agentfiles knows where the coding agents keep their files on
// this machine (Codex CLI, Claude Code, Gemini CLI) and the name spillway
// gives itself in their configuration: what spillway setup writes, and
// spillway report, doctor and exec read.
package agentfiles

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// CodexProviderID is the Codex model provider id spillway setup codex
// writes (a session of this provider went through the gateway).
const CodexProviderID = "spillway"

// CodexHome is $CODEX_HOME, else $HOME/.codex (on Windows %USERPROFILE%\.codex
// when HOME is unset). It is "" when none of them is set.
func CodexHome(getenv func(string) string) string {
	if h := getenv("CODEX_HOME"); h != "" {
		return h
	}
	for _, v := range []string{"HOME", "USERPROFILE"} {
		if h := getenv(v); h != "" {
			return filepath.Join(h, ".codex")
		}
	}
	return ""
}

// GeminiHome is Gemini CLI's directory: $GEMINI_CLI_HOME/.gemini, else
// ~/.gemini.
func GeminiHome(getenv func(string) string) string {
	if d := getenv("GEMINI_CLI_HOME"); d != "" {
		return filepath.Join(d, ".gemini")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".gemini")
	}
	return ""
}

// ClaudeHome is $CLAUDE_CONFIG_DIR, else $HOME/.claude; "" when neither is
// set.
func ClaudeHome(getenv func(string) string) string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".claude")
	}
	return ""
}

// CodexSignIn is how Codex is signed in, read from codexHome/auth.json:
// "chatgpt" (a ChatGPT plan), "apikey", or "" (no auth.json, or a mode it
// does not say). Only the mode is read: no token is kept.
func CodexSignIn(codexHome string) string {
	b, err := os.ReadFile(filepath.Join(codexHome, "auth.json"))
	if err != nil {
		return ""
	}
	var auth struct {
		Mode   string    `json:"auth_mode"`
		Key    *string   `json:"OPENAI_API_KEY"`
		Tokens *struct{} `json:"tokens"` // (its fields are not read)
	}
	if json.Unmarshal(b, &auth) != nil {
		return ""
	}
	switch strings.ToLower(auth.Mode) {
	case "chatgpt", "chatgptauthtokens":
		return "chatgpt"
	case "apikey", "api_key":
		return "apikey"
	}
	switch {
	case auth.Tokens != nil && (auth.Key == nil || *auth.Key == ""):
		return "chatgpt"
	case auth.Key != nil && *auth.Key != "":
		return "apikey"
	}
	return ""
}
