package formats

import (
	"encoding/json"
	. "github.com/spillway/spillway/internal/wire"
	"testing"

	"github.com/spillway/spillway/internal/sse"
)

// Look finds a Responses event's top-level sequence_number in the walk
// that checks it, and nothing else that looks like one.
func TestLookFindsTheSequenceNumber(t *testing.T) {
	for _, c := range []struct {
		data  string
		valid bool
		seq   int64
	}{
		{`{"type":"response.output_text.delta","sequence_number":12,"delta":"x"}`, true, 12},
		{`{"sequence_number":0}`, true, 0},
		{`{"type":"x","item":{"sequence_number":5}}`, true, -1},
		{`{"sequence_number":-1}`, true, -1},
		{`{"sequence_number":1.5}`, true, -1},
		{`{"sequence_number":"3"}`, true, -1},
		{`{"sequence_number":1234567890123456789}`, true, -1},
		{`{"sequence_number":3,"sequence_number":4}`, true, 4},
		{`{"sequence_number":3`, false, 3},
		{`[1]`, true, -1},
		{``, true, -1},
	} {
		f := Look(Responses, sse.Event{Name: "response.output_text.delta", Data: []byte(c.data)})
		if f.Valid != c.valid || f.Valid && f.Seq != c.seq {
			t.Errorf("%s: valid %v seq %d, want %v %d", c.data, f.Valid, f.Seq, c.valid, c.seq)
		}
		if f.Valid != (len(c.data) == 0 || json.Valid([]byte(c.data))) {
			t.Errorf("%s: valid %v, encoding/json says otherwise", c.data, f.Valid)
		}
	}
}

// A Responses stream's failure repeats what its events said of it.
func TestRespondingNotesTheStream(t *testing.T) {
	var r Responding
	for _, ev := range []sse.Event{
		{Name: "response.created", Data: []byte(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1796040000,"model":"gpt-6-luna","output":[],"tools":[{"model":"not this"}]}}`)},
		{Name: "response.in_progress", Data: []byte(`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_other","model":"other"}}`)},
		{Name: "response.output_text.delta", Data: []byte(`{"type":"response.output_text.delta","sequence_number":7,"delta":"x"}`)},
	} {
		r.Note(ev.Name, ev.Data, Look(Responses, ev))
	}
	want := Responding{ID: "resp_1", Model: "gpt-6-luna", CreatedAt: 1796040000, Next: 8}
	if r.ID != want.ID || r.Model != want.Model || r.CreatedAt != want.CreatedAt || r.Next != want.Next {
		t.Fatalf("%+v, want %+v", r, want)
	}
	got := string(streamErrorFrame(Endpoint{Kind: Responses}, "capacity", "spillway: full", r))
	const frame = "event: response.failed\ndata: " + `{"type":"response.failed","sequence_number":8,"response":{"id":"resp_1","object":"response","created_at":1796040000,"status":"failed","model":"gpt-6-luna","output":[],"error":{"code":"server_is_overloaded","message":"spillway: full"},"incomplete_details":null,"usage":null}}` + "\n\n"
	if got != frame {
		t.Fatalf("%q\nwant %q", got, frame)
	}
	// an upstream that numbers nothing: the events count
	var n Responding
	for range 3 {
		n.Note("response.output_text.delta", []byte(`{"delta":"x"}`), Look(Responses, sse.Event{Name: "response.output_text.delta", Data: []byte(`{"delta":"x"}`)}))
	}
	if n.Next != 3 {
		t.Fatalf("next %d, want 3", n.Next)
	}
}
