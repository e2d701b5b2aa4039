package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzEvents reads any bytes as an event stream: no panic, no more taken
// of the room than it has and all of it given back, and every event it
// yields valid JSON whose text is an SSE event of it.
func FuzzEvents(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.eventstream"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(prelude(16, 0))
	f.Add(append(prelude(20, 4), 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		room := &budget{left: 256 << 10}
		// a small frame limit: a prelude's claim past it is refused
		r := Framing{MaxFrame: 64 << 10}.Events(bytes.NewReader(b), room)
		for n := 0; ; n++ {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) || err != nil {
				break
			}
			if n > len(b)/16 {
				t.Fatalf("%d events from %d bytes", n, len(b))
			}
			if !json.Valid(ev.Data) {
				t.Fatalf("an event that is not JSON: %q", ev.Data)
			}
			want := "data: " + string(ev.Data) + "\n\n"
			if ev.Name != "" {
				want = "event: " + ev.Name + "\n" + want
			}
			if string(ev.Raw) != want {
				t.Fatalf("an event's text %q, for %q %q", ev.Raw, ev.Name, ev.Data)
			}
			if len(ev.Raw) > len(b)+nameRoom {
				t.Fatalf("an event of %d bytes from a stream of %d", len(ev.Raw), len(b))
			}
		}
		if room.left < 0 {
			t.Fatalf("the room went %d bytes past its end", -room.left)
		}
		r.Release()
		if room.taken != 0 {
			t.Fatalf("%d bytes of the room kept after Release", room.taken)
		}
	})
}
