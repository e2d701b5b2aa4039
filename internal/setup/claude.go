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
	var set, unset string
	switch s, _ := Shell(shell); s {
	case "fish":
		set = "set -gx ANTHROPIC_BASE_URL " + shQuote(u)
		unset = "set -e ANTHROPIC_BASE_URL"
	case "powershell":
		set = `$env:ANTHROPIC_BASE_URL = "` + strings.NewReplacer("`", "``", `"`, "`\"", "$", "`$").Replace(u) + `"`
		unset = `Remove-Item Env:ANTHROPIC_BASE_URL`
	default:
		set = "export ANTHROPIC_BASE_URL=" + shQuote(u)
		unset = "unset ANTHROPIC_BASE_URL"
	}
	return fmt.Sprintf(`# Claude Code: send requests to the spillway gateway at %s.
# Claude Code keeps sending its own ANTHROPIC_API_KEY (or the credentials of
# its login); spillway passes them through to Anthropic unchanged.
# Add the line below to your shell profile to keep it; undo: %s
%s
`, u, unset, set)
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
