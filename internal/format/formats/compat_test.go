package formats

import (
	"net/http"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/sse"
	. "github.com/spillway/spillway/internal/wire"
)

// The tests of a stream's frames, the error shapes and the prompt bodies
// were written against functions of a kind or an endpoint; these ask the
// endpoint's format (WireOf) the same, so the tests hold every format to
// its old rules unchanged.

func Look(k Kind, ev sse.Event) Facts { return WireOf(EndpointOf(k)).Look(ev) }

func FrameOf(k Kind, ev sse.Event) Frame { return Look(k, ev).Frame }

func IsDelta(k Kind, ev sse.Event) bool { return Look(k, ev).Delta }

func onceStarted(k Kind, f Facts) Frame { return WireOf(EndpointOf(k)).OnceStarted(f) }

func errorBody(ep Endpoint, class classify.Class, msg string) (int, []byte) {
	return WireOf(ep).ErrorBody(class, msg)
}

func streamErrorFrame(ep Endpoint, class classify.Class, msg string, r Responding) []byte {
	return WireOf(ep).StreamErrorFrame(class, msg, r)
}

func promptBody(p Prompt, ep Endpoint, model string) []byte { return WireOf(ep).Prompt(p, model) }

func PromptEndpoint(f Format) (Endpoint, bool) {
	e, ok := EnvelopeOf(f)
	return e.PromptEndpoint(), ok
}

func Auth(f Format, key string) http.Header { return Header(Envelope(f), key) }
