// Package redact removes secrets (API keys, bearer tokens, OAuth tokens) from
// text before it reaches a log line, an event record or an error message.
package redact

import "regexp"

// The patterns cover the key shapes of the providers spillway talks to. They are
// deliberately greedy on the key body: a leaked suffix is as bad as a leaked key.
var patterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	// "Bearer <token>" in an Authorization header echoed back in a message.
	{regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}`), "${1}[redacted]"},
	// x-api-key / api-key / api_key header or field forms.
	{regexp.MustCompile(`(?i)((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=-]{6,}`), "${1}[redacted]"},
	// key=... in a query string (Gemini uses ?key=).
	{regexp.MustCompile(`([?&]key=)[^&\s"']+`), "${1}[redacted]"},
	// OpenAI (sk-, sk-proj-), Anthropic (sk-ant-...) keys; keep the prefix so a
	// reader can tell which kind of key it was.
	{regexp.MustCompile(`\b(sk-(?:ant-|proj-|svcacct-|admin-)?)[A-Za-z0-9_*-]{8,}`), "${1}[redacted]"},
	// Google API keys.
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{20,}`), "AIza[redacted]"},
	// the password of a URL's user (postgres://user:PASSWORD@host, redis://:PASSWORD@host)
	// (up to its last @: a password may hold a raw @)
	{regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@"']*:)[^\s/"']+@`), "${1}[redacted]@"},
	// JWT-looking tokens (OAuth access tokens of ChatGPT / Claude logins).
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}`), "[redacted-jwt]"},
}

// String returns s with every secret-looking substring replaced.
func String(s string) string {
	for _, p := range patterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
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
