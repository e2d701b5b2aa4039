package responses

import (
	"net/http"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// WriteRequest is nil: no request is translated to Responses (a model
// of OpenAI's is reached through Chat Completions).
func (Format) WriteRequest(*format.Turn, string) map[string]any { return nil }

// Header adds nothing.
func (Format) Header(*format.Turn, http.Header) {}

// Query is none.
func (Format) Query(wire.Endpoint) string { return "" }

// Native changes nothing.
func (Format) Native([]byte) ([]byte, bool) { return nil, false }

// NewReader is nil: no request is translated to Responses.
func (Format) NewReader() format.EventReader { return nil }
