package bedrock

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/sse"
)

// benchEvent is one event of a streamed Messages answer: the stream
// BenchmarkEvents reads holds 1,000 of them, as Bedrock sends them, and
// BenchmarkEventsSSE the same 1,000 as the Anthropic API sends them (an
// SSE stream, as internal/sse's BenchmarkReader reads one).
const benchEvent = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" token"}}`

func BenchmarkEvents(b *testing.B) {
	stream := stream(b, []string{benchEvent})
	stream = bytes.Repeat(stream, 1000)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := Framing{}.Events(bytes.NewReader(stream), nil)
		benchRead(b, r)
		r.Release()
	}
}

func BenchmarkEventsSSE(b *testing.B) {
	stream := []byte(strings.Repeat(sseText([]string{benchEvent}), 1000))
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := sse.NewReader(bytes.NewReader(stream))
		benchRead(b, r)
		r.Release()
	}
}

func benchRead(b *testing.B, r interface{ Next() (sse.Event, error) }) {
	n := 0
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if ev.Name != "content_block_delta" {
			b.Fatal(ev.Name)
		}
		n++
	}
	if n != 1000 {
		b.Fatal(n)
	}
}

// discardWriter is a client's ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkAnswer re-envelopes the 1,000 events of BenchmarkEventsSSE for
// a Bedrock client, as the gateway writes them (ten events a write): the
// cost a Bedrock client's stream adds per event.
func BenchmarkAnswer(b *testing.B) {
	ten := []byte(strings.Repeat(sseText([]string{benchEvent}), 10))
	b.SetBytes(int64(len(ten) * 100))
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{"Content-Type": {"text/event-stream"}}}
		a := NewAnswer(w)
		a.WriteHeader(http.StatusOK)
		for range 100 {
			if _, err := a.Write(ten); err != nil {
				b.Fatal(err)
			}
		}
		a.Close()
	}
}
