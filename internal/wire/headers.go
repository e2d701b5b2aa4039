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

// Bearer is the token of an Authorization: Bearer header, "" without one.
func Bearer(h http.Header) string {
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}
