// Package redact removes secrets (API keys, bearer tokens, OAuth tokens) from
// text before it reaches a log line, an event record or an error message.
package redact

import (
	"regexp"
	"strings"
)

// The patterns cover the key shapes of the providers spillway talks to. They are
// deliberately greedy on the key body: a leaked suffix is as bad as a leaked key.
var patterns = []struct {
	re   *regexp.Regexp
	repl string
	// hint is a literal every match holds (matched in any ASCII case when
	// fold): a message without it skips the pattern's regexp, which is
	// most of what redaction cost on the request path (a failed attempt's
	// message goes into its record).
	hint string
	fold bool
}{
	// "Bearer <token>" in an Authorization header echoed back in a message.
	{regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}`), "${1}[redacted]", "bearer", true},
	// x-api-key / api-key / api_key header or field forms.
	{regexp.MustCompile(`(?i)((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=-]{6,}`), "${1}[redacted]", "api", true},
	// key=... in a query string (Gemini uses ?key=).
	{regexp.MustCompile(`([?&]key=)[^&\s"']+`), "${1}[redacted]", "key=", false},
	// OpenAI (sk-, sk-proj-), Anthropic (sk-ant-...) keys; keep the prefix so a
	// reader can tell which kind of key it was.
	{regexp.MustCompile(`\b(sk-(?:ant-|proj-|svcacct-|admin-)?)[A-Za-z0-9_*-]{8,}`), "${1}[redacted]", "sk-", false},
	// Google API keys.
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{20,}`), "AIza[redacted]", "AIza", false},
	// the password of a URL's user (postgres://user:PASSWORD@host, redis://:PASSWORD@host)
	// (up to its last @: a password may hold a raw @)
	{regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@"']*:)[^\s/"']+@`), "${1}[redacted]@", "://", false},
	// JWT-looking tokens (OAuth access tokens of ChatGPT / Claude logins).
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}`), "[redacted-jwt]", "eyJ", false},
}

// String returns s with every secret-looking substring replaced.
func String(s string) string {
	for _, p := range patterns {
		if p.fold && !containsFold(s, p.hint) || !p.fold && !strings.Contains(s, p.hint) {
			continue
		}
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

// containsFold reports whether s holds lower (ASCII lower case) in any
// ASCII case, without a lowered copy of s.
func containsFold(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for ; j < len(lower); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// Mask shows that a secret is set without showing it: the first characters
// that identify its kind and its length class, never its body.
func Mask(secret string) string {
	switch {
	case secret == "":
		return ""
	case len(secret) <= 8:
		return "****"
	default:
		return secret[:3] + "****"
	}
}
