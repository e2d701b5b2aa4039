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

// SignedIn reports an Anthropic request that carries a person's own
// sign-in (Claude Code logged in with a Claude plan: an OAuth bearer and the
// oauth beta), not an API key.
func SignedIn(h http.Header) bool {
	auth := h.Get("Authorization")
	if h.Get("X-Api-Key") != "" || !strings.HasPrefix(auth, "Bearer ") {
		return false
	}
	return strings.HasPrefix(strings.TrimPrefix(auth, "Bearer "), "sk-ant-oat") || strings.Contains(h.Get("Anthropic-Beta"), "oauth-")
}
