package bedrock

import (
	"encoding/base64"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway/spillway/internal/jsonw"
)

// WriteChunk writes one chunk message carrying event, one Messages event's
// JSON, as Bedrock streams it: {"bytes": event in base64}, with real CRCs
// (aws-sdk-go-v2's eventstream Encoder).
func WriteChunk(w io.Writer, event []byte) error {
	p := make([]byte, 0, len(`{"bytes":""}`)+base64.StdEncoding.EncodedLen(len(event)))
	p = append(p, `{"bytes":"`...)
	p = base64.StdEncoding.AppendEncode(p, event)
	p = append(p, `"}`...)
	return eventstream.NewEncoder().Encode(w, eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue("chunk")},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		},
		Payload: p,
	})
}

// WriteException writes one exception message of type typ, as its
// :exception-type header says it (throttlingException), whose payload is
// {"message": message}.
func WriteException(w io.Writer, typ, message string) error {
	p := append(jsonw.String([]byte(`{"message":`), message, false), '}')
	return eventstream.NewEncoder().Encode(w, eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":exception-type", Value: eventstream.StringValue(typ)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("exception")},
		},
		Payload: p,
	})
}
