package formats

import (
	"net/http"
	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/format/bedrock"
)

// Framing is how an answer whose headers are h frames its stream, by its
// content type: an AWS event stream (Bedrock's, each frame one Messages
// event) or server-sent events; nil for an answer that is not a stream.
// The one place the relay learns how to read a stream's bytes.
func Framing(h http.Header) format.Framing {
	ct := strings.ToLower(strings.TrimSpace(h.Get("Content-Type")))
	switch {
	case strings.HasPrefix(ct, bedrock.ContentType):
		return bedrock.Framing{}
	case strings.HasPrefix(ct, "text/event-stream"):
		return format.SSE{}
	}
	return nil
}
