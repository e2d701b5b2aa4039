// Package formats finds a format's value (format.Format) for an endpoint's
// kind: the one place that names every format.
package formats

import (
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/format/chat"
	"github.com/spillway/spillway/internal/format/gemini"
	"github.com/spillway/spillway/internal/format/messages"
	"github.com/spillway/spillway/internal/format/responses"
	"github.com/spillway/spillway/internal/wire"
)

// Of is the format of endpoints of kind k; false for a kind no format
// folder holds (embeddings, passed through as they come).
func Of(k wire.Kind) (format.Format, bool) {
	switch k {
	case wire.Responses:
		return responses.Format{}, true
	case wire.Chat:
		return chat.Format{}, true
	case wire.Messages:
		return messages.Format{}, true
	case wire.GenerateContent, wire.StreamGenerateContent:
		return gemini.Format{}, true
	}
	return nil, false
}

// WireOf is the wire truth of endpoint ep (format.Wire): its kind's
// format; for a kind no format folder holds (embeddings) or an endpoint
// named by its format alone (a refusal on a path of that format), the
// format of its vendor's JSON API: Chat Completions' for OpenAI, whose
// error shapes every OpenAI route shares and whose rules judge any
// data-only chunk, Messages' for Anthropic, Gemini's for Gemini.
func WireOf(ep wire.Endpoint) format.Wire {
	if f, ok := Of(ep.Kind); ok {
		return f
	}
	switch ep.Format {
	case wire.Anthropic:
		return messages.Format{}
	case wire.Gemini:
		return gemini.Format{}
	}
	return chat.Format{}
}
