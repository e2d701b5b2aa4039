package bedrock

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/jsonw"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// nameRoom is the room left before an event's data in its buffer, for
// "event: <type>\ndata: ": the data is decoded after it, and the event's
// text written in front, without moving the data. A type longer than it
// leaves is refused (Messages' longest is 19 bytes).
const nameRoom = 128

// maxName is the longest event type a chunk may carry.
const maxName = nameRoom - len("event: \ndata: ")

// chunk is the event a chunk message's payload carries: {"bytes": the
// event's JSON in base64} (and "p", padding, skipped).
func (r *Reader) chunk(payload []byte) (sse.Event, error) {
	w := wire.NewWalker(payload)
	var b64 []byte
	if w.Peek() == '{' {
		for name := range w.Fields() {
			if string(name) == "bytes" && w.Peek() == '"' {
				b64 = w.Text()
			} else {
				w.Skip()
			}
		}
	}
	if w.Err() != nil || !w.End() || b64 == nil {
		return sse.Event{}, errors.New(`bedrock: a chunk message whose payload is not {"bytes": "<base64>"}`)
	}
	n := nameRoom + base64.StdEncoding.DecodedLen(len(b64)) + 2
	if !r.grow(&r.out, n, &r.outTaken) {
		return sse.Event{}, tooLarge{room: true, size: int64(n)}
	}
	buf := r.out[:n]
	dn, err := base64.StdEncoding.Decode(buf[nameRoom:], b64)
	if err != nil {
		return sse.Event{}, fmt.Errorf("bedrock: a chunk message's bytes are not base64: %v", err)
	}
	data := buf[nameRoom : nameRoom+dn : nameRoom+dn]
	oneLine(data)
	typ, err := eventType(data)
	if err != nil {
		return sse.Event{}, err
	}
	start := nameRoom - len("data: ")
	copy(buf[start:], "data: ")
	if len(typ) > 0 {
		start -= len("event: ") + len(typ) + 1
		copy(buf[copy(buf[start:], "event: ")+start:], typ)
		buf[nameRoom-len("data: ")-1] = '\n'
	}
	end := nameRoom + dn
	buf[end], buf[end+1] = '\n', '\n'
	return sse.Event{Name: r.names.Of(typ), Data: data, Raw: buf[start : end+2 : end+2]}, nil
}

// oneLine makes data, an event's JSON, one line, as an SSE data line must
// be: a JSON string holds no raw CR or LF, so every one is whitespace
// between tokens, and a space in its place keeps the JSON's meaning.
func oneLine(data []byte) {
	for i := bytes.IndexAny(data, "\r\n"); i >= 0; i = bytes.IndexAny(data, "\r\n") {
		data[i] = ' '
		data = data[i+1:]
	}
}

// eventType is the "type" of data, a Messages event's JSON, which it
// checks is a JSON object; nil when it has none.
func eventType(data []byte) ([]byte, error) {
	w := wire.NewWalker(data)
	if w.Peek() != '{' {
		return nil, errors.New("bedrock: a chunk's event is not a JSON object")
	}
	var typ []byte
	for name := range w.Fields() {
		if string(name) == "type" && w.Peek() == '"' {
			typ = w.Text()
		} else {
			w.Skip()
		}
	}
	if w.Err() != nil || !w.End() {
		return nil, fmt.Errorf("bedrock: a chunk's event is not JSON: %v", w.Err())
	}
	if len(typ) > maxName {
		return nil, fmt.Errorf("bedrock: a chunk's event type is longer than %d bytes", maxName)
	}
	for _, c := range typ {
		if c < 0x20 || c == 0x7f {
			return nil, fmt.Errorf("bedrock: a chunk's event type %q is not a name", typ)
		}
	}
	return typ, nil
}

// The longest error type and message an error event keeps (format.Cut:
// a longer one is cut, with "…"): an exception's message is a sentence,
// and its event stays small (never past keepBuffer, even with every byte
// escaped).
const (
	maxErrorType    = 256
	maxErrorMessage = 8 << 10
)

// failure is the Messages error event of an exception or an error
// message: {"type":"error","error":{"type":typ,"message":msg}}.
func (r *Reader) failure(typ, msg string) sse.Event {
	typ, msg = format.Cut(typ, maxErrorType), format.Cut(msg, maxErrorMessage)
	r.grow(&r.out, 64+6*(len(typ)+len(msg)), &r.outTaken) // within keepBuffer: never refused
	b := append(r.out[:0], "event: error\ndata: "...)
	start := len(b)
	b = append(b, `{"type":"error","error":{"type":`...)
	b = jsonw.String(b, typ, false)
	b = append(b, `,"message":`...)
	b = jsonw.String(b, msg, false)
	b = append(b, "}}"...)
	end := len(b)
	b = append(b, "\n\n"...)
	r.out = b
	return sse.Event{Name: "error", Data: b[start:end:end], Raw: b[:len(b):len(b)]}
}

// ErrorType is an exception's type (throttlingException, as its
// :exception-type header says it) as AWS names it in an answer's
// x-amzn-errortype and in its documentation: ThrottlingException.
// "Exception" for none.
func ErrorType(t string) string {
	if t == "" {
		return "Exception"
	}
	if c := t[0]; c >= 'a' && c <= 'z' {
		return string(c-'a'+'A') + t[1:]
	}
	return t
}

// exceptionMessage is the message of an exception's payload,
// {"message": "..."} ("Message" too, as some AWS services write it).
func exceptionMessage(payload []byte) string {
	w := wire.NewWalker(payload)
	if w.Peek() != '{' {
		return ""
	}
	msg := ""
	for name := range w.Fields() {
		if (string(name) == "message" || string(name) == "Message") && w.Peek() == '"' {
			msg = string(w.Text())
		} else {
			w.Skip()
		}
	}
	return msg
}
