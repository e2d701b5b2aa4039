package formats

import (
	"testing"

	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

// The request path of bench overhead --translated: a small Chat request
// to a Messages model, and the opening of its answer up to the first text
// (what its time to first byte pays for).
func BenchmarkRequest(b *testing.B) {
	body := []byte(`{"model":"bench-claude","stream":true,"messages":[{"role":"user","content":"say hi"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		p := Parse(ep(wire.Chat), body)
		if err := p.Check(wire.Anthropic, all); err != nil {
			b.Fatal(err)
		}
		if _, err := p.New(wire.Anthropic, all, "bench-claude", "claude-haiku-5-5"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamOpening(b *testing.B) {
	stream := ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`) +
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"[claude-haiku-5-5]"}}`)
	evs := copied(stream)
	tr, err := newTurn(ep(wire.Chat), []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`), wire.Anthropic, all, "m", "m")
	if err != nil {
		b.Fatal(err)
	}
	translateAll(b, tr, evs)
}

// An answer's steady state, for each client format: a Messages stream of
// 200 text deltas and a call of 200 argument deltas, translated (what
// every piece of a long answer costs, and what the translation keeps of
// it for its closing events).
func BenchmarkStreamDeltas(b *testing.B) {
	var stream strings.Builder
	stream.WriteString(ev("message_start", `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"output_tokens":1}}}`))
	stream.WriteString(ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
	for range 200 {
		stream.WriteString(ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a few words of the answer "}}`))
	}
	stream.WriteString(ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}`))
	for range 200 {
		stream.WriteString(ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"some arguments "}}`))
	}
	stream.WriteString(ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":400}}`) + ev("message_stop", `{"type":"message_stop"}`))
	evs := copied(stream.String())
	for _, k := range []wire.Kind{wire.Chat, wire.Responses, wire.StreamGenerateContent} {
		b.Run(string(k), func(b *testing.B) {
			tr, err := newTurn(ep(k), []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"input":"hi","contents":[{"parts":[{"text":"hi"}]}]}`), wire.Anthropic, all, "m", "m")
			if err != nil {
				b.Fatal(err)
			}
			translateAll(b, tr, evs)
		})
	}
}

// copied are stream's events, each its own copy.
func copied(stream string) []sse.Event {
	var evs []sse.Event
	rd := sse.NewReader(strings.NewReader(stream))
	for {
		e, err := rd.Next()
		if err != nil {
			return evs
		}
		e.Data = append([]byte(nil), e.Data...)
		evs = append(evs, e)
	}
}

// translateAll runs evs through a new stream of tr, b.N times.
func translateAll(b *testing.B, tr *format.Turn, evs []sse.Event) {
	b.ReportAllocs()
	for b.Loop() {
		s := tr.NewStream()
		for _, e := range evs {
			if _, err := s.Event(e.Name, e.Data); err != nil {
				b.Fatal(err)
			}
		}
	}
}
