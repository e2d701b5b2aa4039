package gemini

import (
	"net/http"
	"net/url"

	"github.com/spillway/spillway/internal/wire"
)

// API is the Gemini API's envelope (format.Envelope): x-goog-api-key (or
// ?key=), the model in the path.
type API struct{}

// SetKey sets key as x-goog-api-key.
func (API) SetKey(h http.Header, key string) {
	wire.ClearKeys(h)
	h.Set("X-Goog-Api-Key", key)
}

// Require requires nothing.
func (API) Require(http.Header) {}

// QueryKey is the ?key= a Gemini caller may send its key as.
func (API) QueryKey(q url.Values) string { return q.Get("key") }

// SignedIn is false: Gemini CLI signs in on a route of its own (Code
// Assist).
func (API) SignedIn(http.Header) bool { return false }

// PlanLogin is false.
func (API) PlanLogin(http.Header) bool { return false }

// ModelsPath is /v1beta/models.
func (API) ModelsPath() string { return "/v1beta/models" }

// ModelEntry is a Gemini model resource.
func (API) ModelEntry(n string) map[string]any {
	return map[string]any{"name": "models/" + n, "displayName": n,
		"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}}
}

// ModelList is a Gemini models list.
func (API) ModelList(data []any) map[string]any { return map[string]any{"models": data} }

// PromptEndpoint is generateContent.
func (API) PromptEndpoint() wire.Endpoint { return wire.EndpointOf(wire.GenerateContent) }
