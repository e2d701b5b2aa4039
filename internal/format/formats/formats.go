// Package formats finds a format's value (format.Format) for an endpoint's
// kind: the one place that names every format.
package formats

import (
	"net/http"

	"github.com/spillway/spillway/config"
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

// EnvelopeOf is how a provider of format f carries it: the vendor's own
// API (format.Envelope). A format it does not know (false) is carried as
// the OpenAI API carries its own, a bearer key.
func EnvelopeOf(f config.Format) (format.Envelope, bool) {
	switch f {
	case config.OpenAI:
		return chat.API{}, true
	case config.Anthropic:
		return messages.API{}, true
	case config.Gemini:
		return gemini.API{}, true
	}
	return chat.API{}, false
}

// Envelope is EnvelopeOf's envelope of f.
func Envelope(f config.Format) format.Envelope {
	e, _ := EnvelopeOf(f)
	return e
}

// Header is the header of a request of spillway's own sent in e with key:
// its content type, the key, and what e requires.
func Header(e format.Envelope, key string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	e.SetKey(h, key)
	e.Require(h)
	return h
}
