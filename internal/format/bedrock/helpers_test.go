package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway/spillway/internal/sse"
)

// answer is a streamed Messages answer with text and a tool call, as
// Bedrock sends its events (the last one with its invocation metrics).
var answer = []string{
	`{"type":"message_start","message":{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":412,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check the weather in "}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Zürich \u2014 \"now\"."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_bdrk_01","name":"get_weather","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Zü"}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"rich\", \"unit\": \"c\"}"}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":58}}`,
	`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":412,"outputTokenCount":58,"invocationLatency":1534,"firstByteLatency":402}}`,
}

// typeOf is the "type" of a Messages event's JSON.
func typeOf(event string) string {
	_, rest, _ := strings.Cut(event, `"type":"`)
	t, _, _ := strings.Cut(rest, `"`)
	return t
}

// sseText is events as the Anthropic API streams them.
func sseText(events []string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("event: " + typeOf(e) + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

// encode is one message of headers (name, value pairs) and payload, with
// the SDK's Encoder.
func encode(t testing.TB, payload []byte, headers ...string) []byte {
	t.Helper()
	var hs eventstream.Headers
	for i := 0; i+1 < len(headers); i += 2 {
		hs = append(hs, eventstream.Header{Name: headers[i], Value: eventstream.StringValue(headers[i+1])})
	}
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: hs, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// paddedChunk is a chunk message as Bedrock sends it: the event in
// base64, and "p", padding that hides the event's length.
func paddedChunk(t testing.TB, event string) []byte {
	p := `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(event)) + `","p":"` + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[:len(event)%37] + `"}`
	return encode(t, []byte(p), ":event-type", "chunk", ":content-type", "application/json", ":message-type", "event")
}

// stream is events as a Bedrock event stream, each a padded chunk.
func stream(t testing.TB, events []string) []byte {
	var b []byte
	for _, e := range events {
		b = append(b, paddedChunk(t, e)...)
	}
	return b
}

// prelude is the prelude of a message of total bytes with headers bytes
// of headers, its CRC right.
func prelude(total, headers uint32) []byte {
	p := binary.BigEndian.AppendUint32(nil, total)
	p = binary.BigEndian.AppendUint32(p, headers)
	return binary.BigEndian.AppendUint32(p, crc32.ChecksumIEEE(p))
}

// readAll reads r to its end: the events' text, their names, and the
// error that ended it (nil for io.EOF).
func readAll(r *Reader) (text string, names []string, err error) {
	var b strings.Builder
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return b.String(), names, nil
		}
		if err != nil {
			return b.String(), names, err
		}
		b.Write(ev.Raw)
		names = append(names, ev.Name)
	}
}

// budget is a request's memory (sse.Room) of left bytes.
type budget struct {
	mu    sync.Mutex
	left  int64
	taken int64 // what is taken now
	most  int64 // the most ever taken
}

func (b *budget) Take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	b.taken += n
	b.most = max(b.most, b.taken)
	return true
}

func (b *budget) Give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left += n
	b.taken -= n
}

var _ sse.Room = (*budget)(nil)
