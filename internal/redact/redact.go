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

	// The clouds' credentials (Bedrock, Vertex AI).
	// A PEM private key (a Google service account's, in its JSON with
	// escaped newlines, or as text), whole, or up to where a cut ended it.
	{regexp.MustCompile(`-----BEGIN[A-Z0-9 ]* PRIVATE KEY-----[A-Za-z0-9+/=\s\\]*(?:-----END[A-Z0-9 ]* PRIVATE KEY-----)?`), "[redacted-private-key]", "PRIVATE KEY-----", false},
	// "private_key": "..." in a credentials JSON, whatever the key looks like.
	{regexp.MustCompile(`("private_key"\s*:\s*")(?:[^"\\]|\\.)*"?`), "${1}[redacted]\"", `"private_key"`, false},
	// OAuth client secrets and refresh tokens (a Google user's credentials
	// JSON, a refresh grant's form).
	{regexp.MustCompile(`(?i)(client_secret["']?\s*[:=]\s*["']?)[^\s"'&,}]{6,}`), "${1}[redacted]", "client_secret", true},
	{regexp.MustCompile(`(?i)(refresh_token["']?\s*[:=]\s*["']?)[^\s"'&,}]{6,}`), "${1}[redacted]", "refresh_token", true},
	// Google OAuth access tokens.
	{regexp.MustCompile(`\bya29\.[A-Za-z0-9_.-]{6,}`), "ya29.[redacted]", "ya29.", false},
	// AWS access key ids (long-term AKIA, temporary ASIA): not secret
	// alone, but they name the key; the kind stays.
	{regexp.MustCompile(`\bAKIA[A-Z0-9]{12,}\b`), "AKIA[redacted]", "AKIA", false},
	{regexp.MustCompile(`\bASIA[A-Z0-9]{12,}\b`), "ASIA[redacted]", "ASIA", false},
	// An AWS secret access key after its name (shared credentials files,
	// environment dumps, the SDK's JSON): only after a name, as 40
	// base64-ish characters alone are too like any other text.
	{regexp.MustCompile(`(?i)((?:aws_)?secret_?access_?key["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{16,}`), "${1}[redacted]", "secret", true},
	// AWS session tokens: the X-Amz-Security-Token header or query
	// parameter, aws_session_token, SessionToken.
	{regexp.MustCompile(`(?i)(x-amz-security-token["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=%_-]{16,}`), "${1}[redacted]", "security-token", true},
	{regexp.MustCompile(`(?i)((?:aws_)?session_?token["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=%_-]{16,}`), "${1}[redacted]", "session", true},
	// A SigV4 signature (an Authorization header or a presigned URL): not
	// reusable for another request, but nothing a reader needs.
	{regexp.MustCompile(`(?i)(signature=)[0-9a-f]{64}`), "${1}[redacted]", "signature=", true},
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
