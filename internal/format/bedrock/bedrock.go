// Package bedrock is Amazon Bedrock's envelope around Anthropic's
// Messages format (InvokeModel): the model in the path, the Messages body
// with Bedrock's anthropic_version and no model, and answers streamed as an
// AWS event stream (application/vnd.amazon.eventstream) whose chunk frames
// each carry one Messages event.
package bedrock

import (
	"errors"
	"io"
	"net/http"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
)

// Version is the anthropic_version a Bedrock Messages body carries.
const Version = "bedrock-2023-05-31"

// ContentType is the content type of an AWS event stream.
const ContentType = "application/vnd.amazon.eventstream"

// BaseURL is the Bedrock runtime endpoint of region.
func BaseURL(region string) string { return "https://bedrock-runtime." + region + ".amazonaws.com" }

// Path is the InvokeModel path of model id (a model id, an inference
// profile or an inference profile's ARN), escaped as AWS escapes it (":"
// and "/" too), streamed or not. TODO(bedrock)
func Path(id string, stream bool) (raw, escaped string) { panic("TODO") }

// Body is a Messages request body made Bedrock's: no model and no stream
// (the path says both), anthropic_version set, the betas of h's
// anthropic-beta header as anthropic_beta. TODO(bedrock)
func Body(messages []byte, h http.Header) ([]byte, error) { return nil, errors.New("TODO") }

// Framing reads an AWS event stream as Messages events (format.Framing).
type Framing struct{}

// Events reads body's frames. TODO(bedrock)
func (Framing) Events(body io.Reader, room sse.Room) format.Events { panic("TODO") }
