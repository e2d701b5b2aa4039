// Package vertex is Google Vertex AI's envelope around the formats it
// carries: Anthropic's Messages (rawPredict, streamRawPredict) and
// Gemini's generateContent, each model in the path under its publisher.
package vertex

import "errors"

// Version is the anthropic_version a Vertex AI Messages body carries.
const Version = "vertex-2023-10-16"

// BaseURL is the Vertex AI endpoint of region ("global": the global host).
// TODO(vertex)
func BaseURL(region string) string { panic("TODO") }

// Path is the path of method (rawPredict, streamRawPredict,
// generateContent, streamGenerateContent, count-tokens' rawPredict) of
// model under publisher (anthropic, google) in project and region.
// TODO(vertex)
func Path(project, region, publisher, model, method string) string { panic("TODO") }

// Body is a Messages request body made Vertex AI's: no model (the path
// says it), anthropic_version set; stream kept. TODO(vertex)
func Body(messages []byte) ([]byte, error) { return nil, errors.New("TODO") }
