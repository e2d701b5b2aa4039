package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/spillway/spillway/internal/clienttest"
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

// FuzzAnswer writes any bytes, in writes of any sizes, through an Answer
// as a Messages stream: no panic, never more held than its bound, and
// what the client gets always decodes as whole event-stream messages
// (aws-sdk-go-v2's Decoder, CRCs checked): chunks, then at most one
// exception, last. As an error's body (failing), they always make a
// Bedrock error: an exception's name, {"message": M} with M short.
func FuzzAnswer(f *testing.F) {
	sim, err := os.ReadFile("../../../testdata/frames/messages.sse")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sim, []byte{1, 2, 3, 250}, false)
	f.Add([]byte(sseText(answer)), []byte{17}, false)
	f.Add([]byte(": comment\r\n\r\nevent: ping\ndata: x\n\ndata: a\ndata: b\n\nevent: error\ndata: {}\n\n"), []byte{0}, false)
	f.Add([]byte("event: message_start\ndata: {\"type\""), []byte{5, 5}, false)
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"full"}}`), []byte{3}, true)
	f.Fuzz(func(t *testing.T, b []byte, cuts []byte, failing bool) {
		rec := httptest.NewRecorder()
		a := NewAnswer(rec)
		a.maxEvent = 512
		a.Header().Set("Content-Type", "text/event-stream")
		if failing {
			a.WriteHeader(529)
		} else {
			a.WriteHeader(200)
		}
		for i := 0; len(b) > 0; i++ {
			n := len(b)
			if len(cuts) > 0 && cuts[i%len(cuts)] > 0 {
				n = min(n, int(cuts[i%len(cuts)]))
			}
			if _, err := a.Write(b[:n]); err != nil && !errors.Is(err, ErrEventTooLarge) {
				t.Fatal(err)
			}
			if len(a.pending) > a.maxEvent {
				t.Fatalf("held %d bytes", len(a.pending))
			}
			b = b[n:]
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if failing {
			var e struct{ Message string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || exceptions[rec.Header().Get("X-Amzn-Errortype")] != rec.Code || len(e.Message) > 8<<10+len("…") {
				t.Fatalf("%d %v %q (%v)", rec.Code, rec.Header(), rec.Body, err)
			}
			return
		}
		fs := decodeFrames(t, rec.Body.Bytes())
		for i, fr := range fs {
			if fr.kind == "exception" && i != len(fs)-1 {
				t.Fatalf("an exception before the end: %v", fs)
			}
			if fr.kind == "exception" && !slices.Contains(streamExceptions, fr.typ) {
				t.Fatalf("an exception of type %q", fr.typ)
			}
		}
	})
}

// FuzzClientRequest reads any body as a Bedrock client's: no panic; a body
// it takes is a JSON object whose last members are model and stream, with
// no anthropic_version or anthropic_beta, and betas that are the body's.
func FuzzClientRequest(f *testing.F) {
	for _, name := range []string{"claude-2.1.328-bedrock-first", "claude-2.1.328-bedrock-probe"} {
		f.Add(clienttest.RecordedBody(f, name))
	}
	f.Add([]byte(`{"anthropic_beta":["a",1],"model":"x"}`))
	f.Add([]byte(`{"anthropic_beta":null,"stream":true,"a":{"b":[1,2]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, betas, err := ClientRequest(body, "m\"1", true)
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s: not JSON: %v", out, err)
		}
		if !bytes.HasSuffix(out, []byte(`"model":"m\"1","stream":true}`)) {
			t.Fatalf("%s: model and stream are not last", out)
		}
		if _, ok := m["anthropic_version"]; ok {
			t.Fatalf("%s: anthropic_version kept", out)
		}
		if _, ok := m["anthropic_beta"]; ok {
			t.Fatalf("%s: anthropic_beta kept", out)
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(body, &in) == nil && utf8.Valid(body) && !bytes.Contains(body, []byte(`\u`)) && bytes.Count(body, []byte(`"anthropic_beta"`)) == 1 {
			var want []string
			if raw, ok := in["anthropic_beta"]; ok {
				if err := json.Unmarshal(raw, &want); err != nil {
					t.Fatalf("betas %q taken from %s", betas, raw)
				}
			}
			if !slices.Equal(betas, want) {
				t.Fatalf("betas %q, want %q", betas, want)
			}
		}
	})
}
