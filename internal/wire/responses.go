package wire

import (
	"encoding/json"
)

// Responding is what a Responses stream told its client of its response:
// an event spillway writes into that stream (its failure) repeats the
// response's id, model and creation time and takes the next
// sequence_number, or the SDKs reject it (the OpenAI Node SDK: "Lifecycle
// response identity changed"; the Vercel AI SDK: a type-validation error
// without sequence_number). A relay keeps these few fields as the events
// pass, never the answer: Output, the output so far as a JSON array, is
// set only by a translated stream, which holds its answer anyway.
type Responding struct {
	ID, Model string
	CreatedAt int64
	Next      int64           // the next sequence_number
	Output    json.RawMessage // nil: [] (what OpenAI's own failures carry)
	Usage     json.RawMessage // nil: null (unknown until the final event)
}

// Note takes what one event of a Responses stream says of its response:
// fa is Look's judgement of it (its sequence_number), and a lifecycle
// event's response gives the id, model and creation time (read once, from
// the first that has an id: response.created).
func (r *Responding) Note(ev string, data []byte, fa Facts) {
	if fa.Seq >= 0 {
		r.Next = fa.Seq + 1
	} else {
		r.Next++ // an upstream that numbers nothing: the events count
	}
	if r.ID == "" && (ev == "response.created" || ev == "response.in_progress" || ev == "response.queued") {
		r.opened(data)
	}
}

// opened reads a lifecycle event's response: its id, model and created_at.
func (r *Responding) opened(d []byte) {
	w := NewWalker(d)
	for name := range w.Fields() {
		if string(name) != "response" {
			w.Skip()
			continue
		}
		for name := range w.Fields() {
			switch string(name) {
			case "id", "model":
				if w.Peek() != '"' {
					w.Skip()
					continue
				}
				v := string(w.Text())
				if string(name) == "id" {
					r.ID = v
				} else {
					r.Model = v
				}
			case "created_at":
				if n, ok := w.Int(); ok {
					r.CreatedAt = n
				}
			default:
				w.Skip()
			}
		}
	}
}
