package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
)

// The events WriteChunk writes read back as they were written, each as the
// SSE event a Messages client reads; a reader that gets one byte at a
// time reads the same.
func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	for _, e := range answer {
		if err := WriteChunk(&b, []byte(e)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		r    io.Reader
	}{
		{"whole", bytes.NewReader(b.Bytes())},
		{"byte by byte", iotest.OneByteReader(bytes.NewReader(b.Bytes()))},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(b.Bytes()))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(tt.r)
			defer r.Release()
			for i, want := range answer {
				ev, err := r.Next()
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if ev.Name != typeOf(want) || string(ev.Data) != want {
					t.Errorf("event %d: %q %s, want %q %s", i, ev.Name, ev.Data, typeOf(want), want)
				}
				if string(ev.Raw) != sseText([]string{want}) {
					t.Errorf("event %d's text: %q", i, ev.Raw)
				}
			}
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("after the last event: %v, want io.EOF", err)
			}
		})
	}
}

// Each exception Bedrock streams is a Messages error event whose type is
// the exception's name as AWS writes it in its errors; its message is
// kept, escaped as JSON.
func TestExceptions(t *testing.T) {
	tests := []struct{ typ, name, message string }{
		{"throttlingException", "ThrottlingException", "Too many tokens, please wait before trying again."},
		{"serviceUnavailableException", "ServiceUnavailableException", "Bedrock is unable to process your request."},
		{"modelStreamErrorException", "ModelStreamErrorException", `The model said "no".`},
		{"internalServerException", "InternalServerException", "line one\nline two"},
		{"validationException", "ValidationException", "prompt is too long: 210000 tokens > 200000 maximum"},
		{"modelTimeoutException", "ModelTimeoutException", "Model has timed out in processing the request."},
		{"", "Exception", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteException(&b, tt.typ, tt.message); err != nil {
				t.Fatal(err)
			}
			r := NewReader(&b)
			defer r.Release()
			ev, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatalf("%s: %v", ev.Data, err)
			}
			if ev.Name != "error" || e.Type != "error" || e.Error.Type != tt.name || e.Error.Message != tt.message {
				t.Errorf("%q %s, want an error event of %s: %q", ev.Name, ev.Data, tt.name, tt.message)
			}
			if string(ev.Raw) != "event: error\ndata: "+string(ev.Data)+"\n\n" {
				t.Errorf("text %q", ev.Raw)
			}
		})
	}
}

// A message that is whole but says nothing a Messages client can read is
// an error that names what is wrong with it.
func TestBrokenChunks(t *testing.T) {
	chunk := func(payload string) []byte {
		return encode(t, []byte(payload), ":event-type", "chunk", ":message-type", "event")
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name    string
		message []byte
		words   string
	}{
		{"payload not JSON", chunk(`{"bytes":`), `not {"bytes": "<base64>"}`},
		{"no bytes", chunk(`{"p":"abc"}`), `not {"bytes": "<base64>"}`},
		{"bytes not a string", chunk(`{"bytes":12}`), `not {"bytes": "<base64>"}`},
		{"not base64", chunk(`{"bytes":"***"}`), "not base64"},
		{"event not JSON", chunk(`{"bytes":"` + b64(`{"type":"ping"`) + `"}`), "not JSON"},
		{"event not an object", chunk(`{"bytes":"` + b64(`["ping"]`) + `"}`), "not a JSON object"},
		{"a type of two lines", chunk(`{"bytes":"` + b64(`{"type":"ping\ndata: {}"}`) + `"}`), "is not a name"},
		{"a type too long", chunk(`{"bytes":"` + b64(`{"type":"`+strings.Repeat("x", 200)+`"}`) + `"}`), "longer than"},
		{"no message's worth of bytes", prelude(8, 0), "broken event-stream message: 8 bytes"},
		{"headers longer than the message", prelude(40, 30), "with 30 of headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.message))
			defer r.Release()
			_, err := r.Next()
			if err == nil || !strings.Contains(err.Error(), tt.words) {
				t.Errorf("error %v, want one that says %q", err, tt.words)
			}
			if errors.Is(err, sse.ErrTruncated) || errors.Is(err, sse.ErrTooLarge) {
				t.Errorf("error %v: neither a cut stream nor a large event", err)
			}
		})
	}
}

// An event with no type is a data-only event, as an SSE stream's would be.
func TestNoType(t *testing.T) {
	var b bytes.Buffer
	if err := WriteChunk(&b, []byte(`{"delta":1}`)); err != nil {
		t.Fatal(err)
	}
	ev, err := NewReader(&b).Next()
	if err != nil || ev.Name != "" || string(ev.Raw) != "data: {\"delta\":1}\n\n" {
		t.Errorf("%q %q %v", ev.Name, ev.Raw, err)
	}
}

// An event whose JSON is spread over lines (pretty-printed, CRLF too)
// reaches an SSE client as one data line: a raw newline would end the
// event's data early.
func TestMultilineEvent(t *testing.T) {
	event := "{\n  \"type\": \"content_block_delta\",\r\n  \"delta\": {\"type\":\"text_delta\",\"text\":\"a\\nb\"}\r}\n"
	var b bytes.Buffer
	if err := WriteChunk(&b, []byte(event)); err != nil {
		t.Fatal(err)
	}
	ev, err := NewReader(&b).Next()
	if err != nil {
		t.Fatal(err)
	}
	want := "{   \"type\": \"content_block_delta\",    \"delta\": {\"type\":\"text_delta\",\"text\":\"a\\nb\"} } "
	if ev.Name != "content_block_delta" || string(ev.Data) != want ||
		string(ev.Raw) != "event: content_block_delta\ndata: "+want+"\n\n" {
		t.Errorf("%q %q %q", ev.Name, ev.Data, ev.Raw)
	}
	if !json.Valid(ev.Data) {
		t.Errorf("the event's data is not JSON: %q", ev.Data)
	}
}

// A message past the frame limit is refused from its prelude, before it
// is read; one within it is read.
func TestMaxFrame(t *testing.T) {
	large := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("a", 3000) + `"}}`
	var b bytes.Buffer
	if err := WriteChunk(&b, []byte(large)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		limit int
		err   error
	}{{b.Len(), nil}, {2 * b.Len(), nil}, {b.Len() - 1, sse.ErrTooLarge}} {
		ev, err := Framing{MaxFrame: tt.limit}.Events(bytes.NewReader(b.Bytes()), nil).Next()
		if !errors.Is(err, tt.err) || tt.err == nil && string(ev.Data) != large {
			t.Errorf("a %d-byte message with a limit of %d: %v", b.Len(), tt.limit, err)
		}
	}
}

// A large event's buffers are taken from the room, and given back at the
// next event and at Release; one the room cannot hold is refused.
func TestRoom(t *testing.T) {
	large := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("ab", 100<<10) + `"}}`
	var b bytes.Buffer
	for _, e := range []string{answer[0], large, answer[1], large} {
		if err := WriteChunk(&b, []byte(e)); err != nil {
			t.Fatal(err)
		}
	}
	room := &budget{left: 1 << 20}
	r := Framing{}.Events(bytes.NewReader(b.Bytes()), room)
	for i, want := range []string{answer[0], large, answer[1], large} {
		ev, err := r.Next()
		if err != nil || string(ev.Data) != want {
			t.Fatalf("event %d: %v", i, err)
		}
		if big := len(want) > keepBuffer; big != (room.taken > 0) {
			t.Errorf("event %d: %d bytes taken of the room", i, room.taken)
		}
	}
	// the message (base64: 4/3 of the event) and the event: about 2.3 times the event
	if room.most < int64(2*len(large)-2*keepBuffer) || room.most > int64(3*len(large)) {
		t.Errorf("the most taken was %d bytes, for an event of %d", room.most, len(large))
	}
	r.Release()
	if room.taken != 0 {
		t.Errorf("%d bytes still taken after Release", room.taken)
	}
	if _, err := r.Next(); err != sse.ErrReleased {
		t.Errorf("Next after Release: %v", err)
	}

	small := &budget{left: 100 << 10}
	r = Framing{}.Events(bytes.NewReader(b.Bytes()), small)
	defer r.Release()
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	if !errors.Is(err, sse.ErrTooLarge) || !strings.Contains(err.Error(), "memory its request may hold") {
		t.Errorf("an event past the room: %v", err)
	}
	if small.taken != 0 {
		t.Errorf("%d bytes taken for an event refused", small.taken)
	}
}

// Buffered is what has arrived and is not read yet.
func TestBuffered(t *testing.T) {
	b := stream(t, answer[:3])
	r := NewReader(bytes.NewReader(b))
	defer r.Release()
	if r.Buffered() != 0 {
		t.Errorf("%d buffered before the first read", r.Buffered())
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if want := len(b) - len(stream(t, answer[:1])); r.Buffered() != want {
		t.Errorf("%d buffered after the first event, want %d", r.Buffered(), want)
	}
	r.Release()
	if r.Buffered() != 0 {
		t.Errorf("%d buffered after Release", r.Buffered())
	}
}

// A network error comes back as it came, not as a broken message.
func TestNetworkError(t *testing.T) {
	boom := errors.New("connection reset by peer")
	b := stream(t, answer[:2])
	r := NewReader(io.MultiReader(bytes.NewReader(b[:len(b)-10]), iotest.ErrReader(boom)))
	defer r.Release()
	_, _, err := readAll(r)
	if err != boom {
		t.Errorf("error %v, want the network's", err)
	}
}

var _ format.Framing = Framing{}
