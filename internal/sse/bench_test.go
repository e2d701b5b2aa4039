package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func BenchmarkReader(b *testing.B) {
	frame := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" token\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0}\n\n"
	stream := []byte(strings.Repeat(frame, 1000))
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(stream))
		n := 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 1000 {
			b.Fatal(n)
		}
	}
}
