package formats

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/translate/golden from what the translation gives")

// corpus is testdata/translate: requests of each client format (and the
// real agents' recorded requests), answers of each target format, and the
// golden translations of each direction, both ways.
const corpus = "../../../testdata/translate"

// deterministic makes tr's ids and times repeat: a golden stays put.
func deterministic(tr *format.Turn) {
	n := 0
	tr.NewID = func(prefix string) string { n++; return fmt.Sprintf("%s%024d", prefix, n) }
	tr.Now = func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
}

// golden compares got with the golden file name (rewriting it with
// -update); JSON is compared as JSON.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(corpus, "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".json") {
			var v any
			json.Unmarshal(got, &v)
			got, _ = json.MarshalIndent(v, "", " ")
			got = append(got, '\n')
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/format/formats -run TestCorpus -update)", err)
	}
	if strings.HasSuffix(name, ".json") {
		var g, w any
		json.Unmarshal(got, &g)
		json.Unmarshal(want, &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		got, want = gb, wb
	}
	if strings.HasSuffix(name, ".sse") { // event by event, each event's JSON as JSON
		got, want = normalSSE(got), normalSSE(want)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its golden file (go test ./internal/format/formats -run TestCorpus -update rewrites it; review the diff):\ngot:  %s\nwant: %s", name, clip(got), clip(want))
	}
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// TestCorpus: every direction, both ways. The request of each client
// format goes to each other vendor, and that vendor's answer (streamed and
// whole) comes back in the client's format; each is its golden file, and
// each also keeps the rules no golden may break: reasoning and signatures
// never cross, every call comes back under the client's own tool name.
func TestCorpus(t *testing.T) {
	clients := map[string]wire.Kind{"responses": wire.Responses, "chat": wire.Chat, "messages": wire.Messages, "gemini": wire.StreamGenerateContent}
	formats := map[string]wire.Format{"chat": wire.OpenAI, "messages": wire.Anthropic, "gemini": wire.Gemini}
	for cname, kind := range clients {
		req, err := os.ReadFile(filepath.Join(corpus, "requests", cname+".json"))
		if err != nil {
			t.Fatal(err)
		}
		for tname, f := range formats {
			if f == ep(kind).Format {
				continue
			}
			t.Run(cname+"-to-"+tname, func(t *testing.T) {
				tr, err := newTurn(ep(kind), req, f, all, "answering-model", "answering-model")
				if err != nil {
					t.Fatal(err)
				}
				deterministic(tr)
				golden(t, cname+"-to-"+tname+".request.json", tr.Body)
				for _, bad := range []string{"-openai-only", "-anthropic-only", "-gemini-only", "The user wants weather", "Planning the calls", "x-anthropic-billing-header"} {
					if bytes.Contains(tr.Body, []byte(bad)) {
						t.Errorf("%q crossed to another vendor", bad)
					}
				}
				stream, _ := os.ReadFile(filepath.Join(corpus, "answers", tname+".sse"))
				out := []byte(run(t, tr, string(stream)))
				golden(t, cname+"-to-"+tname+".stream.sse", out)
				whole, _ := os.ReadFile(filepath.Join(corpus, "answers", tname+".json"))
				ans, err := tr.Answer(whole)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, cname+"-to-"+tname+".whole.json", ans)
				for _, b := range [][]byte{out, ans} {
					for _, bad := range []string{"-only", "Two cities", "\"Weather.\"", "thinking"} {
						if bytes.Contains(b, []byte(bad)) {
							t.Errorf("another vendor's reasoning (%q) reached the client", bad)
						}
					}
				}
				if !bytes.Contains(out, []byte("get_weather")) || !bytes.Contains(out, []byte("Geneva")) || !bytes.Contains(ans, []byte("sunny")) {
					t.Errorf("the calls or the text were lost")
				}
			})
		}
	}
	// the real agents' recorded requests, to each other vendor
	for _, rec := range []string{"codex-0.169-first", "codex-0.169-tool-result", "claude-2.1.328-first", "claude-2.1.328-tool-result", "gemini-0.61-first", "gemini-0.61-tool-result"} {
		body := recording(t, rec)
		kind := map[byte]wire.Kind{'c': wire.Responses, 'g': wire.StreamGenerateContent}[rec[0]]
		if strings.HasPrefix(rec, "claude") {
			kind = wire.Messages
		}
		for tname, f := range formats {
			if f == ep(kind).Format {
				continue
			}
			t.Run(rec+"-to-"+tname, func(t *testing.T) {
				tr, err := newTurn(ep(kind), []byte(body), f, all, "answering-model", "answering-model")
				if err != nil {
					t.Fatal(err)
				}
				golden(t, rec+"-to-"+tname+".request.json", tr.Body)
			})
		}
	}
}

// normalSSE is a stream with each event's data re-encoded (keys in order).
func normalSSE(b []byte) []byte {
	rd := sse.NewReader(bytes.NewReader(b))
	var out []byte
	for {
		e, err := rd.Next()
		if err != nil {
			return out
		}
		var v any
		d := e.Data
		if json.Unmarshal(e.Data, &v) == nil {
			d, _ = json.Marshal(v)
		}
		out = fmt.Appendf(out, "%s|%s\n", e.Name, d)
	}
}
