package wire

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestURLCarriesTheModelWhereTheFormatWantsIt(t *testing.T) {
	if got := EndpointOf(Chat).URL("http://up/v1/", "gpt-6-luna"); got != "http://up/v1/chat/completions" {
		t.Fatal(got)
	}
	if got := EndpointOf(Messages).URL("http://up", "claude-opus-5-5"); got != "http://up/v1/messages" {
		t.Fatal(got)
	}
	if got := EndpointOf(StreamGenerateContent).URL("http://up/", "gemini-3-flash"); got != "http://up/v1beta/models/gemini-3-flash:streamGenerateContent" {
		t.Fatal(got)
	}
}

func TestParseBody(t *testing.T) {
	raw := []byte(`{"model":"gpt-6-astra","MODEL":"x","stream":true,"messages":[{"role":"user","content":"hi"}],"n":1}`)
	b, err := ParseBody(EndpointOf(Chat), raw)
	if err != nil || b.Model != "gpt-6-astra" || !b.Stream {
		t.Fatalf("%+v %v", b, err)
	}
	same, _ := b.For(EndpointOf(Chat), "gpt-6-astra")
	if string(same) != string(raw) {
		t.Fatal("the caller's bytes must go out untouched for the model they named")
	}
	other, err := b.For(EndpointOf(Chat), "gpt-6-luna")
	var m map[string]any
	if err != nil || json.Unmarshal(other, &m) != nil || m["model"] != "gpt-6-luna" || m["MODEL"] != "x" || m["n"] != float64(1) {
		t.Fatalf("%s %v", other, err)
	}
	if b.Fields()["model"] == nil || string(b.Fields()["model"]) != `"gpt-6-astra"` {
		t.Fatal("For changed the parsed body")
	}
	// the model in the path: the body goes as it is, and a streaming
	// endpoint streams without a "stream" field
	g, err := ParseBody(EndpointOf(StreamGenerateContent), []byte(`{"contents":[]}`))
	if err != nil || g.Model != "" || !g.Stream {
		t.Fatalf("%+v %v", g, err)
	}
	if out, _ := g.For(EndpointOf(StreamGenerateContent), "gemini-3-flash"); string(out) != `{"contents":[]}` {
		t.Fatal(string(out))
	}
	for _, bad := range []string{`{"model":`, `[1,2]`, `null`, `"x"`} {
		if _, err := ParseBody(EndpointOf(Chat), []byte(bad)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestKeys(t *testing.T) {
	if KeyHash(http.Header{"Authorization": {"Bearer a"}}) == KeyHash(http.Header{"Authorization": {"Bearer b"}}) ||
		strings.Contains(KeyHash(http.Header{"Authorization": {"Bearer sk-secret"}}), "secret") {
		t.Fatal("key hash")
	}
	// a Gemini key in the query is the caller's key as much as one in the header
	q := func(k string) string {
		r, _ := http.NewRequest(http.MethodPost, "http://x/v1beta/models/m:generateContent?key="+k, nil)
		return CallerKey(r)
	}
	hdr, _ := http.NewRequest(http.MethodPost, "http://x/v1beta/models/m:generateContent", nil)
	hdr.Header.Set("X-Goog-Api-Key", "AIza-a")
	if q("AIza-a") == q("AIza-b") || q("AIza-a") != CallerKey(hdr) {
		t.Fatal("a query key is not the caller's key")
	}
}

func TestAnswerText(t *testing.T) {
	cases := map[string]string{
		`{"choices":[{"message":{"content":"chat"}}]}`:                              "chat",
		`{"content":[{"type":"text","text":"mes"},{"type":"text","text":"sages"}]}`: "messages",
		`{"output_text":"resp"}`:                                                    "resp",
		`{"output":[{"content":[{"type":"output_text","text":"out"}]}]}`:            "out",
		`{"candidates":[{"content":{"parts":[{"text":"gem"},{"text":"ini"}]}}]}`:    "gemini",
		`not json`: "not json",
	}
	for body, want := range cases {
		if got := AnswerText([]byte(body)); got != want {
			t.Errorf("AnswerText(%s) = %q, want %q", body, got, want)
		}
	}
}

// FuzzParseBody: ParseBody's one pass reads a body as decoding it into a
// map of its exact keys did: the same bodies refused, the same "model"
// and "stream" (the last of a name that comes twice), and a "model" that
// is not a string (nor null) refused.
func FuzzParseBody(f *testing.F) {
	f.Add(`{"model":"gpt-6-astra","MODEL":"x","stream":true,"messages":[]}`)
	f.Add(`{"model":"a","model":"b","stream":"yes"}`)
	f.Add(`{"model":null,"stream":false}`)
	f.Add(`{"model":5}`)
	f.Add(`[1]`)
	f.Add(`{"model":"a"} x`)
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := ParseBody(EndpointOf(Chat), []byte(raw))
		var m map[string]json.RawMessage
		oerr := json.Unmarshal([]byte(raw), &m)
		if oerr != nil || m == nil {
			if err == nil {
				t.Fatalf("%q: read, the decoder refused it (%v)", raw, oerr)
			}
			return
		}
		var model string
		if mv, ok := m["model"]; ok && json.Unmarshal(mv, &model) != nil && string(mv) != "null" {
			// a model that is not a string is refused, saying so
			if err == nil || !strings.Contains(err.Error(), `"model" is`) {
				t.Fatalf("%q: model %s: %v, want it refused as not a string", raw, mv, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v, the decoder read it", raw, err)
		}
		stream := false
		if st, ok := m["stream"]; ok {
			_ = json.Unmarshal(st, &stream)
		}
		if got.Model != model || got.Stream != stream {
			t.Fatalf("%q: model %q stream %v, the decoder %q %v", raw, got.Model, got.Stream, model, stream)
		}
	})
}
