// Package vertex is Google Vertex AI's envelope around the formats it
// carries: Anthropic's Messages (rawPredict, streamRawPredict) and
// Gemini's generateContent, each model in the path under its publisher.
package vertex

import (
	"net/url"

	"github.com/spillway/spillway/internal/format"
)

// Version is the anthropic_version a Vertex AI Messages body carries.
const Version = "vertex-2023-10-16"

// The methods of a model (Path's method).
const (
	RawPredict            = "rawPredict"
	StreamRawPredict      = "streamRawPredict"
	GenerateContent       = "generateContent"
	StreamGenerateContent = "streamGenerateContent"
)

// Path is the path of method (rawPredict, streamRawPredict,
// generateContent, streamGenerateContent, count-tokens' rawPredict) of
// model under publisher (anthropic, google) in project and region. Each
// part is escaped as one path segment: a model's version stays after its
// "@" (claude-sonnet-4-5@20250929), a "/" or "?" cannot start another
// segment or a query. A streamed Gemini answer also needs the query
// alt=sse, which is not the path's.
func Path(project, region, publisher, model, method string) string {
	return "/v1/projects/" + url.PathEscape(project) +
		"/locations/" + url.PathEscape(region) +
		"/publishers/" + url.PathEscape(publisher) +
		"/models/" + url.PathEscape(model) + ":" + url.PathEscape(method)
}

// CountTokensPath is the path of Anthropic's token count in project and
// region (a Messages body, answered as the Anthropic API's count_tokens).
func CountTokensPath(project, region string) string {
	return Path(project, region, "anthropic", "count-tokens", RawPredict)
}

// Body is a Messages request body made Vertex AI's: no model (the path
// says it), anthropic_version set unless the body has one of Vertex AI's
// (vertex-…: the Anthropic API's 2023-06-01 Vertex AI refuses); stream kept.
// The other fields keep their bytes and their order.
func Body(messages []byte) ([]byte, error) {
	return format.Reshape(messages, []string{"model"}, format.Member{Name: "anthropic_version", Value: []byte(`"` + Version + `"`), Keep: format.Prefixed("vertex-")})
}

// CountTokensBody is a Messages request body made the body of Anthropic's
// token count on Vertex AI (CountTokensPath): its model kept (the path
// names none), anthropic_version set unless the body has one, and what
// a count takes no part in (max_tokens, stream) taken out, as Anthropic's
// count_tokens refuses them.
func CountTokensBody(messages []byte) ([]byte, error) {
	return format.Reshape(messages, []string{"max_tokens", "stream"}, format.Member{Name: "anthropic_version", Value: []byte(`"` + Version + `"`)})
}
