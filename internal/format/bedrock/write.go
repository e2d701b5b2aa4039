package bedrock

import (
	"bytes"
	"encoding/base64"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway/spillway/internal/jsonw"
)

// WriteChunk writes one chunk message carrying event, one Messages event's
// JSON, as Bedrock streams it: {"bytes": event in base64}, with real CRCs
// (aws-sdk-go-v2's eventstream Encoder).
func WriteChunk(w io.Writer, event []byte) error { return NewEncoder().Chunk(w, event) }

// WriteException writes one exception message of type typ, as its
// :exception-type header says it (throttlingException), whose payload is
// {"message": message}.
func WriteException(w io.Writer, typ, message string) error {
	return NewEncoder().Exception(w, typ, message)
}

// Encoder writes the messages of one event stream (WriteChunk,
// WriteException) with aws-sdk-go-v2's eventstream Encoder, reusing its
// buffers from one message to the next: a stream's, never shared by two
// goroutines. Each message goes to its writer in one Write.
type Encoder struct {
	enc     *eventstream.Encoder
	payload []byte
	msg     bytes.Buffer
}

// NewEncoder is an Encoder for one stream.
func NewEncoder() *Encoder { return &Encoder{enc: eventstream.NewEncoder()} }

// Chunk writes one chunk message carrying event to w (WriteChunk).
func (e *Encoder) Chunk(w io.Writer, event []byte) error {
	p := e.payload[:0]
	p = append(p, `{"bytes":"`...)
	p = base64.StdEncoding.AppendEncode(p, event)
	p = append(p, `"}`...)
	e.payload = p
	return e.write(w, eventstream.Message{Headers: chunkHeaders(), Payload: p})
}

// Exception writes one exception message of type typ to w
// (WriteException).
func (e *Encoder) Exception(w io.Writer, typ, message string) error {
	p := append(jsonw.String(append(e.payload[:0], `{"message":`...), message, false), '}')
	e.payload = p
	return e.write(w, eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":exception-type", Value: eventstream.StringValue(typ)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("exception")},
		},
		Payload: p,
	})
}

// write encodes m and writes it to w at once.
func (e *Encoder) write(w io.Writer, m eventstream.Message) error {
	e.msg.Reset()
	if err := e.enc.Encode(&e.msg, m); err != nil {
		return err
	}
	_, err := w.Write(e.msg.Bytes())
	return err
}

// chunkHeaders are a chunk message's headers.
func chunkHeaders() eventstream.Headers {
	return eventstream.Headers{
		{Name: ":event-type", Value: eventstream.StringValue("chunk")},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		{Name: ":message-type", Value: eventstream.StringValue("event")},
	}
}
