package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/format"
	. "github.com/spillway/spillway/internal/wire"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spillway/spillway/internal/sse"
)

// The rules as they were before Look, by encoding/json: the oracle Look is
// checked against. They decode each chunk whole (Look walks it once).

func oracleValid(ev sse.Event) bool {
	for i := 0; i < len(ev.Name); i++ {
		if ev.Name[i] < 0x20 || ev.Name[i] == 0x7f {
			return false
		}
	}
	d := bytes.TrimSpace(ev.Data)
	return len(d) == 0 || string(d) == "[DONE]" || json.Valid(d)
}

func oracleChatFrame(ev sse.Event) Frame {
	d := bytes.TrimSpace(ev.Data)
	if string(d) == "[DONE]" {
		return Terminal
	}
	var chunk struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Delta struct {
				Content   *string         `json:"content"`
				ToolCalls json.RawMessage `json:"tool_calls"`
				Refusal   *string         `json:"refusal"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(d, &chunk) != nil {
		return Output
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		return Error
	}
	for _, c := range chunk.Choices {
		if (c.Delta.Content != nil && *c.Delta.Content != "") || len(c.Delta.ToolCalls) > 0 || c.Delta.Refusal != nil || c.FinishReason != nil {
			return Output
		}
	}
	if len(chunk.Choices) == 0 && len(chunk.Usage) > 0 {
		return Output
	}
	return Hold
}

func oracleGeminiFrame(ev sse.Event) Frame {
	var chunk struct {
		Error      json.RawMessage `json:"error"`
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         *string         `json:"text"`
					FunctionCall json.RawMessage `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if json.Unmarshal(bytes.TrimSpace(ev.Data), &chunk) != nil {
		return Output
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		return Error
	}
	out := Hold
	for _, c := range chunk.Candidates {
		if c.FinishReason != "" {
			return Terminal
		}
		for _, p := range c.Content.Parts {
			if p.Text != nil && *p.Text != "" || len(p.FunctionCall) > 0 {
				out = Output
			}
		}
	}
	return out
}

func oracleChatDelta(d []byte) bool {
	text := (bytes.Contains(d, []byte(`"content":"`)) || bytes.Contains(d, []byte(`"content": "`))) &&
		!bytes.Contains(d, []byte(`"content":""`)) && !bytes.Contains(d, []byte(`"content": ""`))
	return bytes.Contains(d, []byte(`"delta"`)) && (text || bytes.Contains(d, []byte(`"tool_calls":[`)))
}

func oracleChatFinished(d []byte) bool {
	return bytes.Contains(d, []byte(`"finish_reason":"`)) || bytes.Contains(d, []byte(`"finish_reason": "`))
}

func oracleFrame(k Kind, ev sse.Event) Frame {
	switch k {
	case Chat:
		return oracleChatFrame(ev)
	case StreamGenerateContent:
		return oracleGeminiFrame(ev)
	}
	return FrameOf(k, ev)
}

// frameCorpus reads testdata/frames/NAME.sse: realistic events of each protocol.
func frameCorpus(t testing.TB, name string) []sse.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "frames", name+".sse"))
	if err != nil {
		t.Fatal(err)
	}
	var evs []sse.Event
	r := sse.NewReader(bytes.NewReader(b))
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		ev.Data, ev.Raw = bytes.Clone(ev.Data), bytes.Clone(ev.Raw)
		evs = append(evs, ev)
	}
}

func TestLookAgreesWithTheDecodingRules(t *testing.T) {
	for _, c := range []struct {
		file string
		kind Kind
	}{{"chat", Chat}, {"gemini", StreamGenerateContent}, {"responses", Responses}, {"messages", Messages}} {
		evs := frameCorpus(t, c.file)
		if len(evs) < 4 {
			t.Fatalf("%s: %d events", c.file, len(evs))
		}
		for _, ev := range evs {
			f := Look(c.kind, ev)
			if !f.Valid || f.Valid != oracleValid(ev) {
				t.Errorf("%s %s: valid %v, want true", c.file, ev.Data, f.Valid)
			}
			if want := oracleFrame(c.kind, ev); f.Frame != want {
				t.Errorf("%s %s: frame %v, want %v", c.file, ev.Data, f.Frame, want)
			}
			if c.kind == Chat {
				if want := oracleChatDelta(ev.Data); f.Delta != want {
					t.Errorf("%s %s: delta %v, want %v", c.file, ev.Data, f.Delta, want)
				}
				if want := oracleChatFinished(ev.Data); f.Finished != want {
					t.Errorf("%s %s: finished %v, want %v", c.file, ev.Data, f.Finished, want)
				}
				if want := bytes.Contains(ev.Data, []byte(`"usage"`)); f.Usage != want {
					t.Errorf("%s %s: usage %v, want %v", c.file, ev.Data, f.Usage, want)
				}
			}
			if c.kind == Chat && f.Usage && format.OutputTokens(ev.Data) == 0 && !bytes.Contains(ev.Data, []byte(`"usage":null`)) {
				t.Errorf("%s %s: usage without tokens", c.file, ev.Data)
			}
		}
	}
}

// A [DONE] some servers send after any protocol's final event is passed
// on, as it always was.
func TestLookPassesDoneInEveryProtocol(t *testing.T) {
	for _, k := range []Kind{Chat, StreamGenerateContent, Responses, Messages} {
		if f := Look(k, sse.Event{Data: []byte("[DONE]")}); !f.Valid {
			t.Errorf("%s: [DONE] is not valid", k)
		}
	}
}

func TestLookRefusesWhatIsNotJSON(t *testing.T) {
	for _, k := range []Kind{Chat, StreamGenerateContent, Responses, Messages} {
		for _, d := range []string{`{"choices":[{"delta":{"content":"unterminated`, `}{`, `{"a":1} {"b":2}`, `{"a":1}x`, `{"a":}`, `[1,]`, `{'a':1}`} {
			if f := Look(k, sse.Event{Name: "x", Data: []byte(d)}); f.Valid {
				t.Errorf("%s %q: valid", k, d)
			}
		}
		if f := Look(k, sse.Event{Name: "bad\x00name", Data: []byte(`{}`)}); f.Valid {
			t.Errorf("%s: a name with a control character is valid", k)
		}
	}
}

// FuzzLook: Look's check is json.Valid's exactly; its frame is the
// decoding rules' for every chunk without duplicate names (where
// encoding/json's "last one wins" over a half-merged struct is not a rule
// anyone sends to).
func FuzzLook(f *testing.F) {
	for _, name := range []string{"chat", "gemini"} {
		for _, ev := range frameCorpus(f, name) {
			f.Add(name, string(ev.Data))
		}
	}
	f.Add("chat", `{"choices":[{"delta":{"content":5}}]}`)
	f.Add("chat", `{"Choices":[{"Delta":{"Content":"x"}}]}`)
	f.Add("chat", `[{"choices":[]}]`)
	f.Add("gemini", `{"candidates":[{"finishReason":7}]}`)
	f.Add("gemini", "[DONE]")
	f.Add("chat", " [DONE] ")
	f.Fuzz(func(t *testing.T, kind, data string) {
		k := Chat
		if kind == "gemini" {
			k = StreamGenerateContent
		}
		ev := sse.Event{Data: []byte(data)}
		got := Look(k, ev)
		if want := oracleValid(ev); got.Valid != want {
			t.Fatalf("%q: valid %v, json.Valid %v", data, got.Valid, want)
		}
		if !got.Valid || duplicateNames(ev.Data) {
			return
		}
		if want := oracleFrame(k, ev); got.Frame != want {
			t.Fatalf("%s %q: frame %v, the decoding rules %v", k, data, got.Frame, want)
		}
	})
}

// duplicateNames reports an object in d with two names alike (as
// encoding/json matches names: without regard to case).
func duplicateNames(d []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(bytes.ToLower(d)), jsontext.AllowInvalidUTF8(true))
	for {
		_, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			return strings.Contains(err.Error(), "duplicate")
		}
	}
}

// BenchmarkLookChat is the relay's cost per Chat chunk (BENCHMARKS.md).
func BenchmarkLookChat(b *testing.B) {
	ev := sse.Event{Data: []byte(`{"id":"chatcmpl-000000010001","object":"chat.completion.chunk","created":1767225600,"model":"gpt-6-luna","choices":[{"index":0,"delta":{"content":" spill"},"finish_reason":null}]}`)}
	b.ReportAllocs()
	for b.Loop() {
		Look(Chat, ev)
	}
}

// BenchmarkLookResponses is the relay's cost per Responses event: a text
// delta, the most frequent.
func BenchmarkLookResponses(b *testing.B) {
	ev := sse.Event{Name: "response.output_text.delta", Data: []byte(`{"type":"response.output_text.delta","sequence_number":12,"item_id":"msg_00000000000000000000000a","output_index":0,"content_index":0,"delta":" spill","logprobs":[]}`)}
	b.ReportAllocs()
	for b.Loop() {
		Look(Responses, ev)
	}
}

// The Walker's nesting limit is encoding/json's, and it skips deep values
// without recursion.
func TestWalkerDepthIsEncodingJSONs(t *testing.T) {
	for _, depth := range []int{1, 100, 9999, 10000, 10001, 20000} {
		for _, open := range []string{"[", `{"a":`} {
			closer := "]"
			if open != "[" {
				closer = "}"
			}
			d := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth))
			if got, want := ValidJSON(d), json.Valid(d); got != want {
				t.Errorf("%s × %d: valid %v, json.Valid %v", open, depth, got, want)
			}
			chat := []byte(`{"choices":[{"delta":{"x":` + string(d) + `}}]}`)
			if got, want := Look(Chat, sse.Event{Data: chat}).Valid, json.Valid(chat); got != want {
				t.Errorf("a chunk with %s × %d inside: valid %v, json.Valid %v", open, depth, got, want)
			}
		}
	}
}
