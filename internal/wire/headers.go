package wire

import (
	"net/http"
	"strings"
)

// hopHeaders are not forwarded in either direction.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Host": true,
	"Content-Length": true, "Accept-Encoding": true, "Content-Encoding": true,
}

// CopyHeaders copies src to dst without hop-by-hop headers.
func CopyHeaders(dst, src http.Header) {
	for k, vs := range src {
		if !hopHeaders[k] {
			dst[k] = vs
		}
	}
}

// Outgoing copies a caller's request headers for an upstream request:
// without hop-by-hop headers and without spillway's own X-Spillway-*.
func Outgoing(dst, src http.Header) {
	for k, vs := range src {
		if !hopHeaders[k] && !strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Spillway-") {
			dst[k] = vs
		}
	}
}

// SignedIn reports an Anthropic request whose credential is a person's
// login, not an API key: a bearer (Claude Code's plan login, its
// ANTHROPIC_AUTH_TOKEN, whatever its prefix), with or without an x-api-key
// beside it, but an API key's own shape (sk-ant-api…), which
// anthropic-sdk-go's WithAPIKey sends as a bearer. A gateway with keys
// decides for itself (no credential is a login there).
func SignedIn(h http.Header) bool {
	b := Bearer(h)
	return b != "" && !strings.HasPrefix(b, "sk-ant-api")
}

// PlanLogin reports the unmistakable shape of a Claude plan's login (an
// sk-ant-oat token or the oauth beta): what a gateway that carries no
// login refuses as one, not as a bad key.
func PlanLogin(h http.Header) bool {
	return strings.HasPrefix(Bearer(h), "sk-ant-oat") || Bearer(h) != "" && strings.Contains(h.Get("Anthropic-Beta"), "oauth-")
}

// Bearer is the token of an Authorization: Bearer header, "" without one.
func Bearer(h http.Header) string {
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}
