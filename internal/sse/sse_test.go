package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, in string) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in))
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		// Data and Raw are the reader's until its next Next
		ev.Data, ev.Raw = bytes.Clone(ev.Data), bytes.Clone(ev.Raw)
		out = append(out, ev)
	}
}

func TestReader(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		names   []string
		data    []string
		wantErr error
	}{
		{"responses frames", "event: response.created\ndata: {\"a\":1}\n\nevent: response.completed\ndata: {}\n\n",
			[]string{"response.created", "response.completed"}, []string{`{"a":1}`, `{}`}, nil},
		{"chat chunks with done", "data: {\"x\":1}\n\ndata: [DONE]\n\n", []string{"", ""}, []string{`{"x":1}`, "[DONE]"}, nil},
		{"crlf", "event: error\r\ndata: {}\r\n\r\n", []string{"error"}, []string{"{}"}, nil},
		{"multi data lines", "data: a\ndata: b\n\n", []string{""}, []string{"a\nb"}, nil},
		{"keepalive comment", ": ping\n\ndata: x\n\n", []string{"", ""}, []string{"", "x"}, nil},
		{"no space after colon", "event:ping\ndata:1\n\n", []string{"ping"}, []string{"1"}, nil},
		{"the buffers reused across events", "data: a\ndata: b\ndata: c\n\ndata: d\n\nevent: x\ndata: e\ndata: f\n\nevent: x\ndata: g\n\n",
			[]string{"", "", "x", "x"}, []string{"a\nb\nc", "d", "e\nf", "g"}, nil},
		{"truncated", "event: response.created\ndata: {\"a\"", []string{}, []string{}, ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, err := readAll(t, c.in)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if len(evs) != len(c.names) {
				t.Fatalf("got %d events, want %d", len(evs), len(c.names))
			}
			for i, ev := range evs {
				if ev.Name != c.names[i] || string(ev.Data) != c.data[i] {
					t.Errorf("event %d = (%q,%q), want (%q,%q)", i, ev.Name, ev.Data, c.names[i], c.data[i])
				}
			}
		})
	}
}

func TestRawIsExactFrame(t *testing.T) {
	in := "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"
	evs, err := readAll(t, in)
	if err != nil {
		t.Fatal(err)
	}
	var joined string
	for _, ev := range evs {
		joined += string(ev.Raw)
	}
	if joined != in {
		t.Fatalf("raw frames %q != input %q", joined, in)
	}
}

func TestLargeFrame(t *testing.T) {
	big := strings.Repeat("x", 200<<10) // beyond bufio.Scanner's 64 KiB
	evs, err := readAll(t, "data: "+big+"\n\n")
	if err != nil || len(evs) != 1 || len(evs[0].Data) != len(big) {
		t.Fatalf("large frame: err=%v n=%d", err, len(evs))
	}
	r := NewReader(strings.NewReader("data: " + big + "\n\n"))
	r.SetMaxFrame(1 << 10)
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("want frame limit error, got %v", err)
	}
}

// An event past the frame limit is the upstream's (ErrTooLarge), and the
// reader never holds more than the limit for it: its buffer grows as the
// event does, to the limit and no further. A stream of small events takes
// no large buffer.
func TestOversizedEvent(t *testing.T) {
	const limit = 1 << 20
	for _, size := range []int{limit, 5 * limit} {
		r := NewReader(io.MultiReader(strings.NewReader("data: "), strings.NewReader(strings.Repeat("x", size)), strings.NewReader("\n\n")))
		r.SetMaxFrame(limit)
		_, err := r.Next()
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than 1 MiB") {
			t.Fatalf("%d bytes: want ErrTooLarge, got %v", size, err)
		}
		if cap(r.raw) > limit {
			t.Fatalf("%d bytes: the reader held %d bytes, past its limit of %d", size, cap(r.raw), limit)
		}
	}
	r := NewReader(strings.NewReader(strings.Repeat("data: {\"a\":1}\n\n", 100)))
	for range 100 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if cap(r.raw) > 4<<10 {
		t.Fatalf("small events took a buffer of %d bytes", cap(r.raw))
	}
}

// room is a Room of max bytes.
type room struct{ max, used int64 }

func (r *room) Take(n int64) bool {
	if r.used+n > r.max {
		return false
	}
	r.used += n
	return true
}

func (r *room) Give(n int64) { r.used -= n }

// A reader with a Room takes a large event's buffer from it: an event
// past what it has is too large, and what it took is given back once the
// buffer is let go.
func TestOversizedEventPastItsRoom(t *testing.T) {
	rm := &room{max: 1 << 20}
	big := "data: " + strings.Repeat("x", 700<<10) + "\n\n"
	r := NewReader(strings.NewReader(big + "data: 1\n\n" + "data: " + strings.Repeat("x", 3<<20) + "\n\n"))
	r.SetRoom(rm)
	if _, err := r.Next(); err != nil || rm.used == 0 {
		t.Fatalf("an event within the room: %v, %d taken", err, rm.used)
	}
	if _, err := r.Next(); err != nil || rm.used != 0 {
		t.Fatalf("the next small event: %v, %d still taken", err, rm.used)
	}
	if _, err := r.Next(); !errors.Is(err, ErrTooLarge) || rm.used > rm.max {
		t.Fatalf("an event past the room: %v, %d taken", err, rm.used)
	}
	r.Release()
	if rm.used != 0 {
		t.Fatalf("%d bytes still taken after Release", rm.used)
	}
}

func FuzzReader(f *testing.F) {
	f.Add("event: a\ndata: 1\n\n")
	f.Add("data: [DONE]\r\n\r\n")
	f.Add(": x\n\nevent:\n")
	f.Add(": a\n: b\ndata: c\n: d\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := NewReader(strings.NewReader(in))
		total := 0
		for i := 0; i < 10000; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			total += len(ev.Raw)
			if total > len(in) {
				t.Fatalf("raw bytes %d exceed input %d", total, len(in))
			}
			// the event read again on its own is the same event: what the
			// reader reuses from one event to the next does not leak
			if again, err := NewReader(bytes.NewReader(ev.Raw)).Next(); (err == nil || errors.Is(err, ErrTruncated)) &&
				(again.Name != ev.Name || !bytes.Equal(again.Data, ev.Data) || again.Comment != ev.Comment) {
				t.Fatalf("event %q read alone is %q %q, in the stream %q %q", ev.Raw, again.Name, again.Data, ev.Name, ev.Data)
			}
		}
	})
}

// A released reader reads nothing more, and the buffer it gave back
// serves the next reader with none of the old stream in it.
func TestRelease(t *testing.T) {
	r := NewReader(strings.NewReader("data: 1\n\ndata: 2\n\n"))
	if ev, err := r.Next(); err != nil || string(ev.Data) != "1" {
		t.Fatalf("%q %v", ev.Data, err)
	}
	r.Release()
	r.Release() // twice is harmless
	if _, err := r.Next(); !errors.Is(err, ErrReleased) {
		t.Fatalf("after Release: %v", err)
	}
	if r.Buffered() != 0 {
		t.Fatal("a released reader has bytes buffered")
	}
	for range 3 {
		next := NewReader(strings.NewReader("data: 3\n\n"))
		if ev, err := next.Next(); err != nil || string(ev.Data) != "3" {
			t.Fatalf("the next reader read %q %v", ev.Data, err)
		}
		if _, err := next.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("the next reader read on: %v", err)
		}
		next.Release()
	}
}

// An event whose data comes on several lines takes the buffer its data is
// joined in from the reader's Room as it takes its frame's: both are
// counted while the event is the last read, and given back once let go.
func TestJoinedDataTakesRoom(t *testing.T) {
	rm := &room{max: 4 << 20}
	line := "data: " + strings.Repeat("x", 10<<10) + "\n"
	r := NewReader(strings.NewReader(strings.Repeat(line, 40) + "\n" + "data: 1\n\n"))
	r.SetRoom(rm)
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(ev.Raw) + len(ev.Data) - 2*keepBuffer); rm.used < want {
		t.Fatalf("an event of %d bytes whose data is %d bytes joined took %d bytes of its room, want at least %d", len(ev.Raw), len(ev.Data), rm.used, want)
	}
	if _, err := r.Next(); err != nil || rm.used != 0 {
		t.Fatalf("the next small event: %v, %d still taken", err, rm.used)
	}
	// a room too small for the joined data: the event is too large
	r = NewReader(strings.NewReader(strings.Repeat(line, 40) + "\n"))
	r.SetRoom(&room{max: 500 << 10})
	if _, err := r.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an event whose joined data is past its room: %v", err)
	}
	r.Release()
}
