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

// Cloud is what Claude Code's Bedrock and Vertex AI modes keep of the
// user's own environment, and the gateway key they send.
type Cloud struct {
	// Region is AWS_REGION (Bedrock) or CLOUD_ML_REGION (Vertex AI); empty:
	// us-east-1 or us-east5.
	Region string
	// Project is ANTHROPIC_VERTEX_PROJECT_ID; empty: "spillway".
	Project string
	// Key is the gateway key Claude Code sends (a gateway with
	// gateway.keys); empty: none.
	Key string
}

// cloudSwitches are Claude Code's variables that pick a provider other than
// the Anthropic API, in the order it reads them (the first set wins).
var cloudSwitches = []string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CODE_USE_ANTHROPIC_AWS",
	"CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD", "CLAUDE_CODE_USE_MANTLE", "CLAUDE_CODE_USE_VERTEX"}

// otherSwitches are cloudSwitches but on.
func otherSwitches(on string) []string {
	var out []string
	for _, s := range cloudSwitches {
		if s != on {
			out = append(out, s)
		}
	}
	return out
}

// ClaudeBedrockEnv is the environment that points Claude Code's Bedrock mode
// at the gateway's /bedrock, as lines for shell like ClaudeEnv's: Claude Code
// sends Bedrock's InvokeModel calls there, and the gateway answers them from
// the model the id names. Without c.Key Claude Code sends no credential
// (CLAUDE_CODE_SKIP_BEDROCK_AUTH); with it, the key as a bearer token
// (AWS_BEARER_TOKEN_BEDROCK). The other providers' switches are unset first.
func ClaudeBedrockEnv(baseURL, shell string, c Cloud) string {
	u := BaseURL(baseURL) + "/bedrock"
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	vars := []envVar{{"CLAUDE_CODE_USE_BEDROCK", "1"}, {"ANTHROPIC_BEDROCK_BASE_URL", u}, {"AWS_REGION", region}}
	off := otherSwitches("CLAUDE_CODE_USE_BEDROCK")
	cred := `# No credential: this gateway has no gateway.keys, so Claude Code signs nothing
# (CLAUDE_CODE_SKIP_BEDROCK_AUTH); anything AWS-like it sent would be dropped.
`
	if c.Key != "" {
		vars = append(vars, envVar{"AWS_BEARER_TOKEN_BEDROCK", c.Key})
		off = append(off, "CLAUDE_CODE_SKIP_BEDROCK_AUTH")
		cred = `# Claude Code sends your gateway key ($SPILLWAY_KEY) as Authorization: Bearer
# (AWS_BEARER_TOKEN_BEDROCK); the gateway checks it and forwards it nowhere.
`
	} else {
		vars = append(vars, envVar{"CLAUDE_CODE_SKIP_BEDROCK_AUTH", "1"})
	}
	return envBlock(vars, off, shell, fmt.Sprintf(`# Claude Code in its Bedrock mode: its Bedrock calls go to the spillway gateway
# at %s, which answers them from its configured models
# and chains. ANTHROPIC_BASE_URL is not read in this mode. Nothing of AWS is used:
# AWS_REGION's prefix (us., eu., ...) only picks Claude Code's model ids.
%s# The other providers' switches go first: Claude Code takes the first one set.
`, u, cred))
}

// ClaudeVertexEnv is ClaudeBedrockEnv for Claude Code's Vertex AI mode: the
// gateway's /vertex/v1, a project and region for the path (the gateway
// ignores both), no Google credential (CLAUDE_CODE_SKIP_VERTEX_AUTH), and
// with c.Key the key as an Authorization header (ANTHROPIC_CUSTOM_HEADERS).
func ClaudeVertexEnv(baseURL, shell string, c Cloud) string {
	u := BaseURL(baseURL) + "/vertex/v1"
	region, project := c.Region, c.Project
	if region == "" {
		region = "us-east5"
	}
	if project == "" {
		project = "spillway"
	}
	vars := []envVar{{"CLAUDE_CODE_USE_VERTEX", "1"}, {"ANTHROPIC_VERTEX_BASE_URL", u},
		{"ANTHROPIC_VERTEX_PROJECT_ID", project}, {"CLOUD_ML_REGION", region}, {"CLAUDE_CODE_SKIP_VERTEX_AUTH", "1"}}
	cred := `# No credential: this gateway has no gateway.keys, so Claude Code sends no
# Google token (CLAUDE_CODE_SKIP_VERTEX_AUTH).
`
	if c.Key != "" {
		vars = append(vars, envVar{"ANTHROPIC_CUSTOM_HEADERS", "Authorization: Bearer " + c.Key})
		cred = `# No Google token (CLAUDE_CODE_SKIP_VERTEX_AUTH): Claude Code sends your
# gateway key ($SPILLWAY_KEY) as Authorization: Bearer (ANTHROPIC_CUSTOM_HEADERS);
# the gateway checks it and forwards it nowhere.
`
	}
	return envBlock(vars, otherSwitches("CLAUDE_CODE_USE_VERTEX"), shell, fmt.Sprintf(`# Claude Code in its Vertex AI mode: its Vertex AI calls go to the spillway
# gateway at %s, which answers them from its configured
# models and chains. ANTHROPIC_BASE_URL is not read in this mode. Nothing of Google Cloud
# is used: the project and region only fill the path; the gateway ignores them.
%s# The other providers' switches go first: Claude Code takes the first one set.
`, u, cred))
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
	return envBlock([]envVar{{name, value}}, nil, shell, comment)
}

// envVar is one variable an environment sets.
type envVar struct{ name, value string }

// envBlock is comment, the line that undoes vars, the lines that unset the
// variables in off (those of a setup that would get in the way), and the
// lines that set vars, in shell's syntax (an unknown shell gets sh's).
func envBlock(vars []envVar, off []string, shell, comment string) string {
	var names []string
	for _, v := range vars {
		names = append(names, v.name)
	}
	s, _ := Shell(shell)
	keep := "the line below to your shell profile to keep it"
	if len(vars) > 1 {
		keep = "the lines below to your shell profile to keep them"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s# Add %s; undo: %s\n", comment, keep, unsetLine(names, s, false))
	if len(off) > 0 {
		fmt.Fprintln(&b, unsetLine(off, s, true))
	}
	for _, v := range vars {
		fmt.Fprintln(&b, setLine(v.name, v.value, s))
	}
	return b.String()
}

// setLine sets name to value in shell's syntax.
func setLine(name, value, shell string) string {
	switch shell {
	case "fish":
		return "set -gx " + name + " " + shQuote(value)
	case "powershell":
		return `$env:` + name + ` = "` + strings.NewReplacer("`", "``", `"`, "`\"", "$", "`$").Replace(value) + `"`
	}
	return "export " + name + "=" + shQuote(value)
}

// unsetLine removes names from the environment in shell's syntax; quiet
// says nothing of a name that is not set (PowerShell would).
func unsetLine(names []string, shell string, quiet bool) string {
	switch shell {
	case "fish":
		var l []string
		for _, n := range names {
			l = append(l, "set -e "+n)
		}
		return strings.Join(l, "; ")
	case "powershell":
		l := "Remove-Item Env:" + strings.Join(names, ", Env:")
		if quiet {
			l += " -ErrorAction SilentlyContinue"
		}
		return l
	}
	return "unset " + strings.Join(names, " ")
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
