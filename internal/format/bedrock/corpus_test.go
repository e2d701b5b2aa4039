package bedrock

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway/spillway/internal/sse"
)

var update = flag.Bool("update", false, "rewrite testdata/*.eventstream from what the corpus makes")

// corpus makes the event streams of testdata, real bytes of the SDK's
// Encoder: name → stream.
func corpus(t testing.TB) map[string][]byte {
	whole := stream(t, answer)
	third := len(stream(t, answer[:2])) // where the third message starts
	fourth := len(stream(t, answer[:3]))
	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[i] ^= 0x01
		return b
	}
	exception := append(stream(t, answer[:3]), encode(t, []byte(`{"message":"Too many requests, please wait before trying again."}`),
		":exception-type", "throttlingException", ":content-type", "application/json", ":message-type", "exception")...)
	errorMessage := append(stream(t, answer[:1]), encode(t, nil,
		":error-code", "internalFailure", ":error-message", "An internal error occurred.", ":message-type", "error")...)
	unknown := append(encode(t, []byte(`{}`), ":event-type", "initial-response", ":message-type", "event"), stream(t, answer[:2])...)
	unknown = append(unknown, encode(t, []byte(`{"x":1}`), ":message-type", "future")...)
	unknown = append(unknown, stream(t, answer[2:])...)
	return map[string][]byte{
		"answer.eventstream":          whole,
		"exception.eventstream":       exception,
		"error-message.eventstream":   errorMessage,
		"unknown-types.eventstream":   unknown,
		"bad-prelude-crc.eventstream": flip(whole, third+9),
		"bad-message-crc.eventstream": flip(whole, fourth-20), // in the third message's payload
		"cut.eventstream":             whole[:fourth+40],
		"cut-prelude.eventstream":     whole[:fourth+5],
		// a prelude that says 17 MiB, and a few of its bytes: refused
		// before it is read (not a cut stream)
		"oversized.eventstream": append(append(stream(t, answer[:2]), prelude(17<<20, 50)...), "not all of it"...),
	}
}

// TestMakeCorpus holds testdata to what corpus makes (-update rewrites
// it).
func TestMakeCorpus(t *testing.T) {
	for name, b := range corpus(t) {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestMakeCorpus -update writes it)", err)
		}
		if !bytes.Equal(have, b) {
			t.Errorf("%s is not what the corpus makes (go test -run TestMakeCorpus -update)", path)
		}
	}
}

// TestCorpus reads each stream of testdata: its events and the error that
// ends it.
func TestCorpus(t *testing.T) {
	throttled := "event: error\ndata: " + `{"type":"error","error":{"type":"ThrottlingException","message":"Too many requests, please wait before trying again."}}` + "\n\n"
	internal := "event: error\ndata: " + `{"type":"error","error":{"type":"InternalFailure","message":"An internal error occurred."}}` + "\n\n"
	checksum := func(err error) bool { return errors.As(err, new(eventstream.ChecksumError)) }
	is := func(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }
	tests := []struct {
		file  string
		text  string           // the events' text
		err   func(error) bool // the error that ends the stream (nil: io.EOF)
		words string           // in the error's text
	}{
		{file: "answer.eventstream", text: sseText(answer)},
		{file: "exception.eventstream", text: sseText(answer[:3]) + throttled},
		{file: "error-message.eventstream", text: sseText(answer[:1]) + internal},
		{file: "unknown-types.eventstream", text: sseText(answer)},
		{file: "bad-prelude-crc.eventstream", text: sseText(answer[:2]), err: checksum, words: "prelude"},
		{file: "bad-message-crc.eventstream", text: sseText(answer[:2]), err: checksum, words: "bytes are not the ones sent"},
		{file: "cut.eventstream", text: sseText(answer[:3]), err: is(sse.ErrTruncated), words: "ended after 40"},
		{file: "cut-prelude.eventstream", text: sseText(answer[:3]), err: is(sse.ErrTruncated), words: "prelude, after 5 bytes"},
		{file: "oversized.eventstream", text: sseText(answer[:2]), err: is(sse.ErrTooLarge), words: "larger than 16 MiB (17408 KiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(bytes.NewReader(b))
			defer r.Release()
			text, _, err := readAll(r)
			if text != tt.text {
				t.Errorf("events:\n%s\nwant:\n%s", text, tt.text)
			}
			switch {
			case tt.err == nil && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.err != nil && (err == nil || !tt.err(err)):
				t.Errorf("error %v, not the one wanted", err)
			case tt.err != nil && !strings.Contains(err.Error(), tt.words):
				t.Errorf("error %q does not say %q", err, tt.words)
			}
			if tt.err != nil { // the error stays
				if _, again := r.Next(); again != err {
					t.Errorf("next after the error: %v, want %v again", again, err)
				}
			}
		})
	}
}
