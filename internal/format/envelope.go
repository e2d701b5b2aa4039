package format

import (
	"net/http"
	"net/url"

	"github.com/spillway/spillway/internal/wire"
)

// Envelope is how a provider carries a format over HTTP, apart from the
// format itself: where the credentials go and what a person's sign-in
// looks like, the headers its API requires, where its models are listed
// and in what shape, and where spillway's own small prompts go. Today's
// are the vendors' own APIs (formats.EnvelopeOf: the OpenAI API's, the
// Anthropic API's, the Gemini API's); a cloud provider is a format in an
// envelope of its own (a signature instead of a key, the model in
// another path), never a copy of the format.
type Envelope interface {
	// SetKey replaces whatever credentials h carries with key, where the
	// API expects it.
	SetKey(h http.Header, key string)
	// Require sets the headers the API requires that h lacks (Anthropic's
	// anthropic-version).
	Require(h http.Header)
	// QueryKey is a credential the caller put in the URL's query (Gemini's
	// ?key=), "" for none or an API that takes none there.
	QueryKey(q url.Values) string
	// SignedIn reports a request whose credential is a person's sign-in,
	// not an API key (a Claude plan's login); PlanLogin, one that is
	// unmistakably a plan's login (what a gateway with keys refuses as
	// one, not as a bad key).
	SignedIn(h http.Header) bool
	PlanLogin(h http.Header) bool

	// ModelsPath is the path, under a provider's base URL, that lists its
	// models (GET; it costs no tokens).
	ModelsPath() string
	// ModelEntry is model name as the API's model list shows one, and
	// ModelList the list of entries.
	ModelEntry(name string) map[string]any
	ModelList(entries []any) map[string]any
	// PromptEndpoint is where spillway's own small prompts go (the queue's
	// steps, a probe, the demo).
	PromptEndpoint() wire.Endpoint
}
