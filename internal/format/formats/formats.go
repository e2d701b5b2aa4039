// Package formats finds a format's value (format.Format) for an endpoint's
// kind, and where a request goes at a model of a provider format: the one
// place that names every format.
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

// Target is the endpoint a translated request goes to at a model of
// provider format f, and its format: Chat Completions for OpenAI (its
// most widely served endpoint), Messages for Anthropic, Gemini's generate
// methods (streamed when the request streams).
func Target(f wire.Format, stream bool) (wire.Endpoint, format.Format, bool) {
	var k wire.Kind
	switch f {
	case wire.OpenAI:
		k = wire.Chat
	case wire.Anthropic:
		k = wire.Messages
	case wire.Gemini:
		k = wire.GenerateContent
		if stream {
			k = wire.StreamGenerateContent
		}
	default:
		return wire.Endpoint{}, nil, false
	}
	to, _ := Of(k)
	return wire.EndpointOf(k), to, true
}

// Registry is the formats as format.Registry, for the translation engine.
type Registry struct{}

// Of is Of.
func (Registry) Of(k wire.Kind) (format.Format, bool) { return Of(k) }

// Target is Target.
func (Registry) Target(f wire.Format, stream bool) (wire.Endpoint, format.Format, bool) {
	return Target(f, stream)
}

// Parse is body, a request to client, to be read into the neutral form
// when a cross-vendor step needs it (format.Parse with every format).
func Parse(client wire.Endpoint, body []byte) *format.Parsed {
	return format.Parse(Registry{}, client, body)
}

// Native is body, a request to ep going to a model of its own format, made
// fit for that vendor (format.Requests' Native); ok is false when nothing
// needs to change.
func Native(ep wire.Endpoint, body []byte) (out []byte, ok bool) {
	if f, ok := Of(ep.Kind); ok {
		return f.Native(body)
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
