package messages

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/spillway/spillway/internal/wire"
)

// API is the Anthropic API's envelope (format.Envelope): x-api-key, the
// anthropic-version it requires, a Claude plan's login as a bearer.
type API struct{}

// SetKey sets key as x-api-key; a login's oauth beta goes with the login
// it replaces.
func (API) SetKey(h http.Header, key string) {
	wire.ClearKeys(h)
	h.Set("X-Api-Key", key)
	if beta := h.Get("Anthropic-Beta"); strings.Contains(beta, "oauth-") {
		var keep []string
		for _, b := range strings.Split(beta, ",") {
			if b = strings.TrimSpace(b); b != "" && !strings.HasPrefix(b, "oauth-") {
				keep = append(keep, b)
			}
		}
		h.Set("Anthropic-Beta", strings.Join(keep, ","))
		if len(keep) == 0 {
			h.Del("Anthropic-Beta")
		}
	}
}

// Require sets anthropic-version when h has none.
func (API) Require(h http.Header) {
	if h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", "2023-06-01")
	}
}

// QueryKey is "": the key is a header.
func (API) QueryKey(url.Values) string { return "" }

// SignedIn reports a credential that is a person's login, not an API key:
// a bearer (Claude Code's plan login, its ANTHROPIC_AUTH_TOKEN, whatever
// its prefix), with or without an x-api-key beside it, but an API key's
// own shape (sk-ant-api…), which anthropic-sdk-go's WithAPIKey sends as a
// bearer. A gateway with keys decides for itself (no credential is a
// login there).
func (API) SignedIn(h http.Header) bool {
	b := wire.Bearer(h)
	return b != "" && !strings.HasPrefix(b, "sk-ant-api")
}

// PlanLogin reports the unmistakable shape of a Claude plan's login (an
// sk-ant-oat token or the oauth beta).
func (API) PlanLogin(h http.Header) bool {
	return strings.HasPrefix(wire.Bearer(h), "sk-ant-oat") || wire.Bearer(h) != "" && strings.Contains(h.Get("Anthropic-Beta"), "oauth-")
}

// ModelsPath is /v1/models.
func (API) ModelsPath() string { return "/v1/models" }

// ModelEntry is an Anthropic model object.
func (API) ModelEntry(n string) map[string]any {
	return map[string]any{"type": "model", "id": n, "display_name": n, "created_at": "2026-01-01T00:00:00Z"}
}

// ModelList is an Anthropic page with nothing after it.
func (API) ModelList(data []any) map[string]any {
	return map[string]any{"data": data, "has_more": false}
}

// PromptEndpoint is Messages.
func (API) PromptEndpoint() wire.Endpoint { return wire.EndpointOf(wire.Messages) }
