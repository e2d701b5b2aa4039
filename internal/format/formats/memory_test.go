package formats

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"unsafe"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// answerer writes a target format's answer, piece by piece, into ev: each
// event's data is built in one reused buffer, so an answer of any size is
// made lazily. Texts and arguments are letters only (their JSON is
// themselves, quoted).
type answerer struct {
	to     wire.Format
	ev     func(name string, data []byte) error
	buf    []byte
	blocks int  // Messages: content blocks opened
	inText bool // Messages: the open block is a text
	calls  int
	k      *keeper // told what each event brings, before it goes (nil: none)
}

// brings tells a's keeper, if any, what the next event brings.
func (a *answerer) brings(f func(k *keeper)) {
	if a.k != nil {
		f(a.k)
	}
}

func (a *answerer) send(name string, parts ...string) error {
	a.buf = a.buf[:0]
	for _, p := range parts {
		a.buf = append(a.buf, p...)
	}
	return a.ev(name, a.buf)
}

// start is the answer's opening (Messages' message_start; none elsewhere).
func (a *answerer) start() error {
	if a.to == wire.Anthropic {
		return a.send("message_start", `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1,"output_tokens":1}}}`)
	}
	return nil
}

func (a *answerer) text(s string) error {
	switch a.to {
	case wire.Anthropic:
		if !a.inText {
			a.inText = true
			a.blocks++
			if err := a.send("content_block_start", `{"type":"content_block_start","index":`, fmt.Sprint(a.blocks-1), `,"content_block":{"type":"text","text":""}}`); err != nil {
				return err
			}
		}
		a.brings(func(k *keeper) { k.text(len(s)) })
		return a.send("content_block_delta", `{"type":"content_block_delta","index":`, fmt.Sprint(a.blocks-1), `,"delta":{"type":"text_delta","text":"`, s, `"}}`)
	}
	a.brings(func(k *keeper) { k.text(len(s)) })
	if a.to == wire.OpenAI {
		return a.send("", `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"`, s, `"}}]}`)
	}
	return a.send("", `{"candidates":[{"content":{"role":"model","parts":[{"text":"`, s, `"}]}}]}`)
}

// call is one tool call whose arguments come in pieces (Gemini's comes
// whole, its arguments {"a":"…"} of the pieces joined: 8 bytes more).
func (a *answerer) call(name string, pieces ...string) error {
	n := a.calls
	a.calls++
	a.brings(func(k *keeper) { k.call(name) })
	switch a.to {
	case wire.Anthropic:
		a.inText = false
		a.blocks++
		idx := fmt.Sprint(a.blocks - 1)
		if err := a.send("content_block_start", `{"type":"content_block_start","index":`, idx, `,"content_block":{"type":"tool_use","id":"toolu_`, fmt.Sprint(n), `","name":"`, name, `","input":{}}}`); err != nil {
			return err
		}
		for _, p := range pieces {
			a.brings(func(k *keeper) { k.args(len(p)) })
			if err := a.send("content_block_delta", `{"type":"content_block_delta","index":`, idx, `,"delta":{"type":"input_json_delta","partial_json":"`, p, `"}}`); err != nil {
				return err
			}
		}
		return nil
	case wire.OpenAI:
		if err := a.send("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":`, fmt.Sprint(n), `,"id":"call_`, fmt.Sprint(n), `","type":"function","function":{"name":"`, name, `","arguments":""}}]}}]}`); err != nil {
			return err
		}
		for _, p := range pieces {
			a.brings(func(k *keeper) { k.args(len(p)) })
			if err := a.send("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":`, fmt.Sprint(n), `,"function":{"arguments":"`, p, `"}}]}}]}`); err != nil {
				return err
			}
		}
		return nil
	}
	args := strings.Join(pieces, "")
	a.brings(func(k *keeper) { k.args(len(args) + len(`{"a":""}`)) })
	return a.send("", `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"`, name, `","args":{"a":"`, args, `"}}}]}}]}`)
}

func (a *answerer) end() error {
	a.brings((*keeper).end)
	switch a.to {
	case wire.Anthropic:
		if err := a.send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`); err != nil {
			return err
		}
		return a.send("message_stop", `{"type":"message_stop"}`)
	case wire.OpenAI:
		if err := a.send("", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`); err != nil {
			return err
		}
		return a.send("", "[DONE]")
	}
	return a.send("", `{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`)
}

// direction is a client's kind and a target format of another vendor.
type direction struct {
	client wire.Kind
	to     wire.Format
}

func (d direction) String() string { return fmt.Sprintf("%s-to-%s", d.client, d.to) }

// directions are every translated direction of a stream.
func directions() []direction {
	var out []direction
	for _, k := range []wire.Kind{wire.Responses, wire.Chat, wire.Messages, wire.StreamGenerateContent} {
		for _, f := range targets {
			if f != ep(k).Format {
				out = append(out, direction{k, f})
			}
		}
	}
	return out
}

// newTurn is a streamed request of d's client, translated for d's target.
func (d direction) turn(t testing.TB, maxHeld int64) *format.Turn {
	t.Helper()
	tr, err := newTurn(ep(d.client), []byte(`{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"input":"hi","contents":[{"parts":[{"text":"hi"}]}]}`), d.to, all, "m", "m")
	if err != nil {
		t.Fatal(err)
	}
	tr.MaxHeld = maxHeld
	return tr
}

// keeper is what a client's format has to keep of an answer to close its
// stream, as the answer goes: the oracle of Held.
type keeper struct {
	client wire.Kind
	need   int64 // texts and arguments a closing event repeats
	items  int64 // a Responses client's items (each kept, with ids and name)
	names  int64 // their names' bytes
	inText bool
}

func (k *keeper) text(n int) {
	if !k.inText {
		k.inText = true
		k.end() // a call before went out whole
		k.item(0)
	}
	if k.client == wire.Responses {
		k.need += int64(n)
	}
}

func (k *keeper) call(name string) {
	k.inText = false
	k.end()
	k.item(len(name))
}

func (k *keeper) item(name int) {
	if k.client == wire.Responses {
		k.items++
		k.names += int64(name)
	}
}

func (k *keeper) args(n int) {
	if k.client == wire.Responses || k.client == wire.StreamGenerateContent {
		k.need += int64(n)
	}
}

// end: the item in flight closed (a Gemini client's call went out whole).
func (k *keeper) end() {
	if k.client == wire.StreamGenerateContent {
		k.need = 0
	}
}

// most is the most Held may say: what must be kept, and for a Responses
// client each item's own size, two ids of at most 64 bytes and its name.
func (k *keeper) most() int64 { return k.need + k.items*(format.ItemSize+128) + k.names }

// check holds s's Held to k: never above the most, nor above max; for a
// Responses client never below the texts and arguments kept, for another
// exactly them.
func (k *keeper) check(s *format.Stream, maxHeld int64) error {
	h := s.Held()
	switch {
	case maxHeld > 0 && h > maxHeld:
		return fmt.Errorf("Held() = %d, above MaxHeld %d", h, maxHeld)
	case h > k.most():
		return fmt.Errorf("Held() = %d, above the %d bytes the client's format needs kept", h, k.most())
	case k.client == wire.Responses && h < k.need:
		return fmt.Errorf("Held() = %d, below the %d bytes of text and arguments kept", h, k.need)
	case k.client != wire.Responses && h != k.need:
		return fmt.Errorf("Held() = %d, want %d", h, k.need)
	}
	return nil
}

// TestStreamHeld: what each client's stream keeps of an answer of two
// texts and two calls, event by event: nothing for Chat and Messages
// (their closing events repeat nothing), the call in flight's arguments for
// Gemini (its calls go out whole), the whole answer for Responses (its
// output_item.done and response.completed repeat it all).
func TestStreamHeld(t *testing.T) {
	for _, d := range directions() {
		t.Run(d.String(), func(t *testing.T) {
			tr := d.turn(t, 0)
			s := tr.NewStream()
			k := &keeper{client: d.client}
			a := &answerer{to: d.to, k: k, ev: func(name string, data []byte) error {
				if _, err := s.Event(name, data); err != nil {
					return err
				}
				return k.check(s, 0)
			}}
			steps := []func() error{
				a.start,
				func() error { return a.text("hello") },
				func() error { return a.call("get_weather", "abc", "defgh") },
				func() error { return a.text("bye") },
				func() error { return a.call("f", strings.Repeat("x", 1000)) },
				a.end,
			}
			for i, step := range steps {
				if err := step(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if !s.Done() {
				t.Fatal("the client's stream did not end")
			}
			if d.client == wire.Responses && s.Held() < 1008 {
				t.Errorf("a Responses stream holds %d bytes at its end, less than its texts and arguments", s.Held())
			}
		})
	}
}

// TestStreamTooLarge: past MaxHeld, a stream that must keep what it is
// sent says ErrTooLarge, keeps nothing (Held 0) and says it again to every
// later event; it cannot be ended (End) and a Responses client's failure
// still names its response, with no output. A stream that keeps nothing
// takes any answer under the same bound.
func TestStreamTooLarge(t *testing.T) {
	const maxHeld = 4096
	for _, d := range directions() {
		t.Run(d.String(), func(t *testing.T) {
			tr := d.turn(t, maxHeld)
			s := tr.NewStream()
			var failed error
			a := &answerer{to: d.to, ev: func(name string, data []byte) error {
				if _, err := s.Event(name, data); err != nil {
					failed = err
				}
				if failed == nil && s.Held() > maxHeld {
					t.Fatalf("Held() = %d, above %d", s.Held(), maxHeld)
				}
				return nil
			}}
			a.start()
			a.text(strings.Repeat("t", 3000))
			a.call("f", strings.Repeat("a", 3000), strings.Repeat("b", 3000))
			a.end()
			if d.client == wire.Chat || d.client == wire.Messages {
				if failed != nil || !s.Done() || s.Held() != 0 {
					t.Fatalf("a stream that keeps nothing failed (%v), or did not end (%v), or holds %d", failed, s.Done(), s.Held())
				}
				return
			}
			if !errors.Is(failed, format.ErrTooLarge) || !strings.Contains(failed.Error(), "gateway.max_body_mb") {
				t.Fatalf("the stream's error is %v, not ErrTooLarge naming the limit", failed)
			}
			if s.Held() != 0 || s.Done() || s.End() != nil {
				t.Fatalf("after ErrTooLarge: Held %d, Done %v, End %q", s.Held(), s.Done(), s.End())
			}
			if _, err := s.Event("", []byte(`{}`)); !errors.Is(err, format.ErrTooLarge) {
				t.Fatalf("an event after ErrTooLarge: %v", err)
			}
			r, opening := s.Failing()
			if d.client == wire.Responses && (r.ID == "" || string(r.Output) != "[]" || r.Next == 0 || opening != nil) {
				t.Fatalf("Responses' failure after ErrTooLarge: %+v, opening %q", r, opening)
			}
		})
	}
}

// TestItemSize: format.ItemSize covers what a kept item is made of.
func TestItemSize(t *testing.T) {
	if n := unsafe.Sizeof(format.Item{}) + unsafe.Sizeof(format.ToolCall{}) + unsafe.Sizeof(&format.Item{}); n > format.ItemSize {
		t.Fatalf("an item, its call and its place in the list are %d bytes: format.ItemSize (%d) is too small", n, format.ItemSize)
	}
}

// heapBytes is the live heap after a collection.
func heapBytes() int64 {
	runtime.GC()
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(m)
	return int64(m[0].Value.Uint64())
}

// FuzzStreamMemory: any answer of texts and calls, in each target format,
// to each client, under any MaxHeld: Held never goes above MaxHeld nor
// above what the client's format needs kept (keeper); ErrTooLarge comes
// only when keeping what the format needs would go past MaxHeld, and then
// nothing is kept; no panic.
func FuzzStreamMemory(f *testing.F) {
	f.Add(uint8(0), uint16(0), []byte{0, 5, 1, 3, 2, 200, 2, 7, 0, 1, 3, 0})
	f.Add(uint8(1), uint16(300), []byte{0, 50, 1, 3, 2, 200, 2, 200, 2, 200, 0, 1})
	f.Add(uint8(6), uint16(900), []byte{1, 1, 2, 100, 2, 100, 1, 2, 2, 120, 0, 9})
	f.Add(uint8(7), uint16(2000), []byte{1, 1, 2, 100, 1, 40, 2, 250, 0, 9})
	f.Add(uint8(4), uint16(10), []byte{0, 255, 1, 0, 2, 255, 3, 0})
	dirs := directions()
	f.Fuzz(func(t *testing.T, dir uint8, maxHeld uint16, script []byte) {
		d := dirs[int(dir)%len(dirs)]
		limit := int64(maxHeld) * 4
		s := d.turn(t, limit).NewStream()
		k := &keeper{client: d.client}
		var over error
		a := &answerer{to: d.to, k: k, ev: func(name string, data []byte) error {
			if over != nil {
				return over
			}
			_, err := s.Event(name, data)
			switch {
			case errors.Is(err, format.ErrTooLarge):
				if k.most() <= limit || limit == 0 || s.Held() != 0 {
					t.Fatalf("ErrTooLarge with %d bytes to keep (at most) under MaxHeld %d, holding %d after", k.most(), limit, s.Held())
				}
				over = err
				return err
			case err != nil:
				t.Fatalf("the answer could not be translated: %v", err)
			}
			if err := k.check(s, limit); err != nil {
				t.Fatal(err)
			}
			return nil
		}}
		if a.start() != nil {
			return
		}
		for i := 0; i+1 < len(script); i += 2 {
			op, n := script[i]%4, int(script[i+1])*8
			letters := strings.Repeat(string(rune('a'+script[i+1]%26)), n)
			var err error
			switch op {
			case 0, 3:
				if n == 0 { // an empty text is no event
					continue
				}
				err = a.text(letters)
			case 1, 2: // a call, its arguments in the pieces that follow
				name := "f" + letters[:min(n, 64)]
				var pieces []string
				for i+3 < len(script) && script[i+2]%4 == 2 {
					i += 2
					pieces = append(pieces, strings.Repeat("x", int(script[i+1])*8))
				}
				err = a.call(name, pieces...)
			}
			if err != nil {
				return
			}
		}
		if a.end() == nil && !s.Done() {
			t.Fatal("the client's stream did not end")
		}
	})
}

// TestStreamMemory: 200 MiB of text and 40 MiB of tool arguments, made
// lazily, through each translated direction under a MaxHeld of 8 MiB:
// Held stays within it, and the heap within it and 16 MiB, event after
// event; a client whose format repeats what it was sent at its close
// (Responses, and Gemini's call) gets ErrTooLarge, any other its whole
// answer. Under the race detector (ten times slower a byte), 32 MiB of
// each, still more than the heap may hold, through one direction a client
// that covers each reader and writer.
func TestStreamMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("240 MiB through each direction")
	}
	const (
		maxHeld = 8 << 20
		piece   = 64 << 10
	)
	text, args := 200<<20, 40<<20
	dirs := directions()
	if raceOn {
		text, args = 32<<20, 32<<20
		dirs = []direction{{wire.Responses, wire.Anthropic}, {wire.Chat, wire.Gemini}, {wire.Messages, wire.OpenAI}, {wire.StreamGenerateContent, wire.OpenAI}}
	}
	chunk := strings.Repeat("w", piece)
	for _, d := range dirs {
		for _, what := range []string{"text", "args"} {
			t.Run(d.String()+"-"+what, func(t *testing.T) {
				s := d.turn(t, maxHeld).NewStream()
				var sent, checked, peak int64
				var over error
				a := &answerer{to: d.to, ev: func(name string, data []byte) error {
					sent += int64(len(data))
					if _, err := s.Event(name, data); err != nil {
						over = err
						return err
					}
					if s.Held() > maxHeld {
						t.Fatalf("Held() = %d, above %d", s.Held(), maxHeld)
					}
					if sent-checked >= 2<<20 {
						checked = sent
						h := heapBytes()
						if h > maxHeld+16<<20 {
							t.Fatalf("after %d MiB sent the heap holds %d MiB, above MaxHeld and 16 MiB", sent>>20, h>>20)
						}
						peak = max(peak, h)
					}
					return nil
				}}
				err := a.start()
				if what == "text" {
					for n := 0; n < text/piece && err == nil; n++ {
						err = a.text(chunk)
					}
				} else {
					calls, each := 1, args/piece // one call in pieces
					if d.to == wire.Gemini {
						calls, each = args>>20, 16 // Gemini's calls come whole: of 1 MiB each
					}
					pieces := make([]string, each)
					for i := range pieces {
						pieces[i] = chunk
					}
					for n := 0; n < calls && err == nil; n++ {
						err = a.call("f", pieces...)
					}
				}
				if err == nil {
					err = a.end()
				}
				keeps := d.client == wire.Responses || d.client == wire.StreamGenerateContent && what == "args" && d.to != wire.Gemini
				switch {
				case keeps && !errors.Is(over, format.ErrTooLarge):
					t.Fatalf("the stream kept it all (error %v, held %d)", over, s.Held())
				case !keeps && (err != nil || !s.Done()):
					t.Fatalf("the stream did not end well: %v", err)
				}
				if h := heapBytes(); h > maxHeld+16<<20 {
					t.Fatalf("at the end the heap holds %d MiB", h>>20)
				}
				t.Logf("%d MiB sent, heap at most %.1f MiB, ended %v (%v)", sent>>20, float64(peak)/(1<<20), s.Done(), over)
			})
		}
	}
}

// TestManyCalls: an answer of 20,000 small calls leaves nothing behind per
// call in a stream whose client's format repeats nothing of them (the
// readers keep the call in flight only, the stream no ended item); a
// Responses client's stream counts each call it keeps, and under a MaxHeld
// of 1 MiB says ErrTooLarge. Under the race detector, only the directions
// whose reader keeps a call's state (a Chat or Messages target).
func TestManyCalls(t *testing.T) {
	const calls = 20000
	for _, d := range directions() {
		if raceOn && d.to == wire.Gemini {
			continue
		}
		t.Run(d.String(), func(t *testing.T) {
			s := d.turn(t, 1<<20).NewStream()
			var over error
			a := &answerer{to: d.to, ev: func(name string, data []byte) error {
				_, err := s.Event(name, data)
				over = err
				return err
			}}
			if err := a.start(); err != nil {
				t.Fatal(err)
			}
			before := heapBytes()
			for i := 0; i < calls && over == nil; i++ {
				a.call("f")
			}
			grew := heapBytes() - before
			if d.client == wire.Responses {
				if !errors.Is(over, format.ErrTooLarge) {
					t.Fatalf("a Responses stream kept %d calls within 1 MiB (%v)", calls, over)
				}
				return
			}
			if over != nil || grew > 256<<10 {
				t.Fatalf("after %d calls the heap grew by %d KiB (%v)", calls, grew>>10, over)
			}
			runtime.KeepAlive(s)
		})
	}
}

// TestCallInFlight: the readers keep the call in flight only, and still
// tell an ended call's arguments, and a Chat call out of order, for errors
// (not a new call, not lost); a Messages call's arguments after a thinking
// block go on.
func TestCallInFlight(t *testing.T) {
	chatStart := func(i int) string {
		return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"c%d","function":{"name":"f","arguments":""}}]}}]}`, i, i)
	}
	chatArgs := func(i int, a string) string {
		return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%q}}]}}]}`, i, a)
	}
	block := func(i int, typ string) string {
		return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":%q,"id":"t%d","name":"f"}}`, i, typ, i)
	}
	delta := func(i int) string {
		return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":"{}"}}`, i)
	}
	for _, c := range []struct {
		name string
		d    direction
		evs  [][2]string // name, data
		err  string      // of the last event; "": none
	}{
		{"chat: an ended call's arguments", direction{wire.Messages, wire.OpenAI}, [][2]string{{"", chatStart(0)}, {"", chatStart(1)}, {"", chatArgs(0, "{}")}}, "index 0 after it ended"},
		{"chat: an ended call named again, nothing more", direction{wire.Messages, wire.OpenAI}, [][2]string{{"", chatStart(0)}, {"", chatStart(1)}, {"", chatArgs(0, "")}}, ""},
		{"chat: the call in flight's arguments", direction{wire.Messages, wire.OpenAI}, [][2]string{{"", chatStart(0)}, {"", chatStart(1)}, {"", chatArgs(1, "{}")}}, ""},
		{"chat: a call out of order", direction{wire.Messages, wire.OpenAI}, [][2]string{{"", chatStart(1)}, {"", chatStart(0)}}, "out of order"},
		{"messages: an ended block's arguments", direction{wire.Chat, wire.Anthropic}, [][2]string{{"content_block_start", block(0, "tool_use")}, {"content_block_start", block(1, "tool_use")}, {"content_block_delta", delta(0)}}, "not the tool_use in flight"},
		{"messages: arguments after a thinking block", direction{wire.Chat, wire.Anthropic}, [][2]string{{"content_block_start", block(0, "tool_use")}, {"content_block_start", block(1, "thinking")}, {"content_block_delta", delta(0)}}, ""},
		{"messages: a text block's arguments", direction{wire.Chat, wire.Anthropic}, [][2]string{{"content_block_start", block(0, "text")}, {"content_block_delta", delta(0)}}, "not the tool_use in flight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.d.turn(t, 0).NewStream()
			var out []byte
			var err error
			for _, e := range c.evs {
				var b []byte
				b, err = s.Event(e[0], []byte(e[1]))
				out = append(out, b...)
			}
			switch {
			case c.err == "" && err != nil, c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("the last event's error is %v, want %q", err, c.err)
			case c.err == "" && strings.Count(string(out), "tool_use") != 2 && c.d.client == wire.Messages:
				t.Fatalf("the calls did not both go out:\n%s", out)
			}
		})
	}
}

// TestLargeEventLeavesNothing: one large event's buffers are not kept for
// the rest of the stream.
func TestLargeEventLeavesNothing(t *testing.T) {
	for _, d := range []direction{{wire.Chat, wire.Anthropic}, {wire.Messages, wire.Gemini}} {
		t.Run(d.String(), func(t *testing.T) {
			s := d.turn(t, 0).NewStream()
			a := &answerer{to: d.to, ev: func(name string, data []byte) error {
				_, err := s.Event(name, data)
				return err
			}}
			if err := a.start(); err != nil {
				t.Fatal(err)
			}
			a.text("small")
			before := heapBytes()
			if err := a.text(strings.Repeat("w", 8<<20)); err != nil {
				t.Fatal(err)
			}
			a.buf = nil
			if err := a.text("small"); err != nil {
				t.Fatal(err)
			}
			if grew := heapBytes() - before; grew > 1<<20 {
				t.Fatalf("after an 8 MiB event the stream holds %d MiB more", grew>>20)
			}
			runtime.KeepAlive(s)
		})
	}
}
