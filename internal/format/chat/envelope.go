package chat

import (
	"net/http"
	"net/url"

	"github.com/spillway/spillway/internal/wire"
)

// API is the OpenAI API's envelope (format.Envelope), which Chat
// Completions, Responses and embeddings share: a bearer key.
type API struct{}

// SetKey sets key as a bearer.
func (API) SetKey(h http.Header, key string) {
	wire.ClearKeys(h)
	h.Set("Authorization", "Bearer "+key)
}

// Require requires nothing.
func (API) Require(http.Header) {}

// QueryKey is "": the key is a header.
func (API) QueryKey(url.Values) string { return "" }

// SignedIn is false: a ChatGPT plan signs in on a route of its own.
func (API) SignedIn(http.Header) bool { return false }

// PlanLogin is false.
func (API) PlanLogin(http.Header) bool { return false }

// ModelsPath is /models (an OpenAI base URL ends in /v1).
func (API) ModelsPath() string { return "/models" }

// ModelEntry is an OpenAI model object.
func (API) ModelEntry(n string) map[string]any {
	return map[string]any{"id": n, "object": "model", "created": 1767225600, "owned_by": "spillway"}
}

// ModelList is an OpenAI list.
func (API) ModelList(data []any) map[string]any {
	return map[string]any{"object": "list", "data": data}
}

// PromptEndpoint is Chat Completions.
func (API) PromptEndpoint() wire.Endpoint { return wire.EndpointOf(wire.Chat) }
