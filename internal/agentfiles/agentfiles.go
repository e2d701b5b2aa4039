// Package agentfiles knows where the coding agents keep their files on
// this machine (Codex CLI, Claude Code, Gemini CLI) and the name spillway
// gives itself in their configuration: what spillway setup writes, and
// spillway report, doctor and exec read.
package agentfiles

import "path/filepath"

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
