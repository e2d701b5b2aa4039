package format

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spillway/spillway/internal/jsonw"
	"github.com/spillway/spillway/internal/wire"
)

// Stream turns the target's answer, event by event, into the client's: the
// gateway's relay and the library's body write what it gives. One
// goroutine uses it.
type Stream struct {
	t  *Turn
	rd EventReader
	w  Writer

	ID      string // the answer's id, as the client sees it
	Created int64
	opened  bool // the client's opening went out
	// items are the answer's items so far, kept only where a closing
	// event repeats them all (Responses' response.completed and failure)
	// or for a whole answer; for another client only the item in flight
	// is kept (cur), and of it only what its own closing event repeats
	Items   []*Item
	cur     *Item  // the item in flight (Messages' block, Responses' item)
	calls   int    // the answer's calls so far
	held    int64  // the bytes kept for the closing events (Held)
	over    bool   // keeping more would have gone past Turn.MaxHeld: the stream cannot be closed
	Stop    string // the stop reason, in no vendor's words
	Usage   Usage
	done    bool   // the client's final event went out
	Buf     []byte // what the writer wrote for the client, for this event
	Whole   bool   // no events: a whole answer is being read
	Seq     int    // Responses' sequence_number
	Blocks  int    // Messages: content blocks opened
	Outputs int    // Responses: output items opened
	q       []byte // a text's JSON, reused
	modelQ  []byte // the model's name as JSON, made once
}

// Turn is the translation the stream belongs to.
func (s *Stream) Turn() *Turn { return s.t }

// ModelJSON is the answering model's name as a JSON string.
func (s *Stream) ModelJSON() []byte {
	if s.modelQ == nil {
		s.modelQ = jsonw.String(nil, s.t.Model, true)
	}
	return s.modelQ
}

// Item is one piece of the answer: a text, or a call.
type Item struct {
	Text  strings.Builder
	Call  *ToolCall
	Num   int    // a call's number in the answer, from 0
	Index int    // its Messages block index, its Responses output index
	ID    string // its Responses item id
	Open  bool
}

// ItemSize is what a kept item costs beyond its text, arguments, ids and
// name: an item and its call as allocated, and its place in the list
// (TestItemSize holds it to the structs' sizes).
const ItemSize = 256

// size is what keeping it costs, for Held.
func (it *Item) size() int {
	n := ItemSize + len(it.ID)
	if c := it.Call; c != nil {
		n += len(c.ID) + len(c.Name)
	}
	return n
}

// ErrTooLarge is the error of an event whose text or arguments the stream
// would have to keep past Turn.MaxHeld to close the client's stream: the
// stream ends with the client's error event instead (Event keeps nothing
// more, and keeps nothing from then on).
var ErrTooLarge = errors.New("the answer is larger than its translation may hold to close it in the client's format (gateway.max_body_mb, within the gateway's memory budget gateway.max_inflight_mb)")

// Held is the bytes the stream keeps now for its closing events: the texts
// and arguments a closing event repeats (Responses' output_item.done and
// response.completed, Gemini's whole functionCall), and for a Responses
// client every item of the answer. A Chat or Messages client's stream
// keeps none: what went out as deltas is not repeated.
func (s *Stream) Held() int64 { return s.held }

// keepsAll: every item is kept to the end, whole (a Responses client's
// closing events list them all; a whole answer is made of them).
func (s *Stream) keepsAll() bool { return s.Whole || s.w.Keeps() == KeepAll }

// keepsArgs: a call's arguments are kept until it closes (Gemini's calls
// go out whole), or to the end.
func (s *Stream) keepsArgs() bool {
	return s.keepsAll() || s.w.Keeps() == KeepArgs
}

// keep counts n more bytes kept, or, when they would take the stream past
// Turn.MaxHeld, drops all it kept and says so (ErrTooLarge): the stream can
// no longer be closed in the client's format.
func (s *Stream) keep(n int) error {
	if m := s.t.MaxHeld; m > 0 && !s.Whole && s.held+int64(n) > m {
		s.over = true
		s.Items, s.cur, s.held = nil, nil, 0
		return s.tooLarge()
	}
	s.held += int64(n)
	return nil
}

func (s *Stream) tooLarge() error {
	return fmt.Errorf("%w: it would keep more than %d bytes", ErrTooLarge, s.t.MaxHeld)
}

// NewStream is the converter of t's streamed answer.
func (t *Turn) NewStream() *Stream {
	return &Stream{t: t, rd: t.target.NewReader(), w: t.client.Writer(), Created: t.Now().Unix()}
}

// maxReuse is the most a buffer an event was written in is kept for the
// next: one large event does not leave its size held for the rest of the
// stream.
const maxReuse = 256 << 10

// reuse is b emptied for the next event, or nil when it grew past maxReuse.
func reuse(b []byte) []byte {
	if cap(b) > maxReuse {
		return nil
	}
	return b[:0]
}

// Event is the client's frames for one event of the target's stream (its
// name, for formats that name events, and its data): none, one or several,
// valid until the next call (the relay writes or copies them before it
// reads on). An event out of order (arguments for a call already closed)
// is an error: what the client would get is broken.
func (s *Stream) Event(name string, data []byte) ([]byte, error) {
	s.Buf, s.q = reuse(s.Buf), reuse(s.q)
	if s.over {
		return nil, s.tooLarge()
	}
	evs, err := s.rd.Event(name, data)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if err := s.take(ev); err != nil {
			return nil, err
		}
	}
	return s.Buf, nil
}

// End is what the client still needs when the target's stream ended
// without its final event but after its stop reason (a Chat provider that
// sends no [DONE]): the client's final events; nil otherwise.
func (s *Stream) End() []byte {
	if s.done || s.Stop == "" || s.over {
		return nil
	}
	s.Buf = s.Buf[:0]
	_ = s.take(Event{Kind: EvEnd})
	return append([]byte(nil), s.Buf...)
}

// Done reports that the client's final event went out.
func (s *Stream) Done() bool { return s.done }

// Failing is what the client's stream was told of its answer, for the
// failure event that ends it, in a format whose failure repeats it
// (Failer: Responses' response.failed): its id, model, creation time and
// the next sequence number (taken: the failure is the stream's last
// event), the output so far (an item cut off is incomplete, with what it
// had; none once the stream dropped what it kept: ErrTooLarge) and the
// usage reported so far. A stream that sent nothing yet opens first:
// opening is its opening events, to go before the failure. For another
// client format it is the zero Responding and no opening.
func (s *Stream) Failing() (r wire.Responding, opening []byte) {
	f, ok := s.w.(Failer)
	if !ok {
		return wire.Responding{}, nil
	}
	if !s.opened {
		s.Buf = s.Buf[:0]
		s.open()
		opening = append([]byte(nil), s.Buf...)
	}
	return f.Failing(s), opening
}

func (s *Stream) take(ev Event) error {
	if s.done {
		return nil
	}
	if !s.opened && ev.Kind != EvError {
		s.open()
	}
	switch ev.Kind {
	case EvStart:
	case EvText:
		if ev.Text == "" {
			return nil
		}
		if s.cur == nil || s.cur.Call != nil {
			s.closeItem()
			if err := s.startItem(&Item{}); err != nil {
				return err
			}
		}
		if s.keepsAll() {
			if err := s.keep(len(ev.Text)); err != nil {
				return err
			}
			s.cur.Text.WriteString(ev.Text)
		}
		s.textDelta(ev.Text)
	case EvCallStart:
		s.closeItem()
		id := s.t.ClientID(ev.ID)
		if id == "" {
			id = s.t.NewID("call_")
		}
		c := &ToolCall{ID: id, Name: ev.Name, Tool: s.t.ToolOf(ev.Name)}
		return s.startItem(&Item{Call: c})
	case EvCallArgs:
		it := s.cur // only the item in flight is open
		if it == nil || it.Call == nil || it.Num != ev.Call {
			return fmt.Errorf("the model sent arguments for call %d after it ended", ev.Call)
		}
		if s.keepsArgs() {
			if err := s.keep(len(ev.Text)); err != nil {
				return err
			}
			it.Call.Args.WriteString(ev.Text)
		}
		if !s.Whole {
			s.w.Args(s, it, ev.Text)
		}
	case EvUsage:
		s.Usage = ev.Usage
	case EvFinish:
		s.closeItem()
		s.Stop = ev.Stop
	case EvEnd:
		s.closeItem()
		if s.Stop == "" {
			s.Stop = StopEnd
		}
		s.w.Final(s)
		s.done = true
	case EvError:
		// the relay writes the client's error event, in the client's
		// words for the class the classifier gives it
	}
	return nil
}

// startItem opens it, the item in flight; keeping it (a Responses client)
// past Turn.MaxHeld is ErrTooLarge.
func (s *Stream) startItem(it *Item) error {
	if n, ok := s.w.(Identifier); ok {
		it.ID = n.ItemID(s, it)
	}
	if s.keepsAll() {
		if err := s.keep(it.size()); err != nil {
			return err
		}
		s.Items = append(s.Items, it)
	}
	if it.Call != nil {
		it.Num = s.calls
		s.calls++
	}
	it.Open = true
	s.cur = it
	s.w.Start(s, it)
	return nil
}

// CustomInput is a freeform tool's input from the arguments the target's
// model gave its one-string function: their "input" (the text as it came
// when it is not such an object).
func CustomInput(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) == nil {
		if s, ok := m["input"].(string); ok {
			return s
		}
	}
	return args
}

// CallArgs is a call's arguments as the client gets them: the JSON text the
// model gave ({} for none).
func CallArgs(c *ToolCall) string {
	if a := strings.TrimSpace(c.Args.String()); a != "" {
		return a
	}
	return "{}"
}

// textDelta writes a piece of text: the most frequent event of all.
func (s *Stream) textDelta(text string) {
	if s.Whole {
		return
	}
	s.q = jsonw.String(s.q[:0], text, true)
	s.w.Text(s, s.cur, s.q)
}

// closeItem ends the item in flight.
func (s *Stream) closeItem() {
	it := s.cur
	if it == nil || !it.Open {
		return
	}
	it.Open = false
	s.cur = nil
	s.w.Close(s, it)
	if !s.keepsAll() && it.Call != nil { // a Gemini call's arguments went out whole
		s.held -= int64(it.Call.Args.Len())
	}
}

// open sends the client's opening events.
func (s *Stream) open() {
	s.opened = true
	s.w.Open(s)
}

// SSE adds one named event.
func (s *Stream) SSE(name string, v map[string]any) {
	if s.Whole {
		return
	}
	b, _ := json.Marshal(v)
	s.Buf = fmt.Appendf(s.Buf, "event: %s\ndata: %s\n\n", name, b)
}

// Data adds one unnamed event.
func (s *Stream) Data(v map[string]any) {
	if s.Whole {
		return
	}
	b, _ := json.Marshal(v)
	s.Buf = fmt.Appendf(s.Buf, "data: %s\n\n", b)
}

// Answer is the client's whole answer for the target's whole answer body.
func (t *Turn) Answer(body []byte) ([]byte, error) {
	s := t.NewStream()
	s.Whole = true
	evs, err := s.rd.Whole(body)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if err := s.take(ev); err != nil {
			return nil, err
		}
	}
	return json.Marshal(s.w.Whole(s))
}
