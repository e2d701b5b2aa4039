package formats

import (
	"net/http"
	"testing"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/format/bedrock"
)

// An answer's framing is its content type's: an AWS event stream is
// Bedrock's, server-sent events SSE, anything else no stream at all.
func TestFramingByContentType(t *testing.T) {
	for _, c := range []struct {
		contentType string
		want        format.Framing
	}{
		{"application/vnd.amazon.eventstream", bedrock.Framing{}},
		{"Application/VND.Amazon.EventStream", bedrock.Framing{}},
		{"text/event-stream", format.SSE{}},
		{"text/event-stream; charset=utf-8", format.SSE{}},
		{"application/json", nil},
		{"", nil},
	} {
		if got := Framing(http.Header{"Content-Type": {c.contentType}}); got != c.want {
			t.Errorf("%q: %T, want %T", c.contentType, got, c.want)
		}
	}
}
