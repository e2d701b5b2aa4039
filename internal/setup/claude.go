package setup

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Shells are the values ClaudeEnv knows, in the order help texts list them.
var Shells = []string{"sh", "fish", "powershell"}

// Shell maps a shell name or path (bash, /usr/bin/zsh, pwsh, fish.exe, ...) to
// one of Shells; ok is false for a shell it does not know.
func Shell(name string) (shell string, ok bool) {
	n := strings.ToLower(filepath.Base(strings.ReplaceAll(strings.TrimSpace(name), `\`, "/")))
	n = strings.TrimSuffix(n, ".exe")
	switch n {
	case "sh", "bash", "zsh", "dash", "ksh", "ash", "posix":
		return "sh", true
	case "fish":
		return "fish", true
	case "powershell", "pwsh", "ps":
		return "powershell", true
	}
	return "", false
}

// ClaudeEnv is the environment that points Claude Code at the gateway, as
// lines for shell (see Shells; an unknown shell gets sh syntax):
// ANTHROPIC_BASE_URL without /v1 (Claude Code appends /v1/messages), with
// comments. The output can be given to eval (sh), source (fish) or
// Invoke-Expression (PowerShell).
func ClaudeEnv(baseURL string, shell string) string {
	u := BaseURL(baseURL)
	return envLines("ANTHROPIC_BASE_URL", u, shell, fmt.Sprintf(`# Claude Code: send requests to the spillway gateway at %s.
# Claude Code keeps sending its own ANTHROPIC_API_KEY (or the credentials of
# its login); spillway passes them through to Anthropic unchanged.
`, u))
}

// GeminiEnv is ClaudeEnv for Gemini CLI: GOOGLE_GEMINI_BASE_URL, the
// gateway's root (Gemini CLI appends /v1beta/models/…).
func GeminiEnv(baseURL string, shell string) string {
	u := BaseURL(baseURL)
	return envLines("GOOGLE_GEMINI_BASE_URL", u, shell, fmt.Sprintf(`# Gemini CLI: send requests to the spillway gateway at %s.
# Gemini CLI keeps sending its own GEMINI_API_KEY; spillway passes it through
# (API-key auth only: a Google login talks to Google's own backend).
`, u))
}

// GeminiGoogleEnv is GeminiEnv for Gemini CLI signed in with Google:
// CODE_ASSIST_ENDPOINT, the gateway's root (Gemini CLI appends
// /v1internal:METHOD).
func GeminiGoogleEnv(baseURL string, shell string) string {
	u := BaseURL(baseURL)
	return envLines("CODE_ASSIST_ENDPOINT", u, shell, fmt.Sprintf(`# Gemini CLI signed in with Google: send its Code Assist requests to the
# spillway gateway at %s. Gemini CLI keeps sending its own Google sign-in;
# spillway passes it to Google's Code Assist API untouched and keeps it nowhere.
`, u))
}

// envLines sets name to value in shell's syntax, after comment, saying how
// to keep it and undo it.
func envLines(name, value, shell, comment string) string {
	var set, unset string
	switch s, _ := Shell(shell); s {
	case "fish":
		set = "set -gx " + name + " " + shQuote(value)
		unset = "set -e " + name
	case "powershell":
		set = `$env:` + name + ` = "` + strings.NewReplacer("`", "``", `"`, "`\"", "$", "`$").Replace(value) + `"`
		unset = `Remove-Item Env:` + name
	default:
		set = "export " + name + "=" + shQuote(value)
		unset = "unset " + name
	}
	return fmt.Sprintf("%s# Add the line below to your shell profile to keep it; undo: %s\n%s\n", comment, unset, set)
}

// shQuote quotes s for sh and fish when it holds anything but plain URL
// characters.
func shQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
