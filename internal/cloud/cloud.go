// Package cloud authorizes requests to the cloud providers (Amazon
// Bedrock, Google Vertex AI) with spillway's own cloud credentials: AWS
// SigV4 over the exact bytes sent (the AWS default credential chain) or a
// Bedrock API key, and Google's Application Default Credentials. A
// request is marked for its provider (With) when it is built; Transport
// authorizes marked requests as they leave, and nothing else.
package cloud

import (
	"context"
	"net/http"
	"time"

	"github.com/spillway/spillway/config"
)

// Clock is the time credentials are judged by (cached tokens' expiry).
type Clock interface{ Now() time.Time }

// With is ctx marked for a request to provider name, configured p (a
// cloud provider). TODO(cloud)
func With(ctx context.Context, name string, p config.Provider) context.Context { return ctx }

// Transport authorizes requests marked With before base sends them; it
// caches each provider's credentials (refreshed before they expire).
type Transport struct {
	base  http.RoundTripper
	clock Clock
}

// NewTransport is a Transport over base. TODO(cloud)
func NewTransport(base http.RoundTripper, clock Clock) *Transport {
	return &Transport{base: base, clock: clock}
}

// RoundTrip authorizes req when it is marked, then sends it. TODO(cloud)
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) { return t.base.RoundTrip(req) }

// Source says which credential source provider name resolves to (never a
// secret): "environment", "profile work (~/.aws/config)", "service account
// x@y (file ...)", "metadata server", "api_key". TODO(cloud)
func (t *Transport) Source(ctx context.Context, name string, p config.Provider) (string, error) {
	return "", nil
}
