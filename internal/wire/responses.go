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
	w := newWalker(d)
	for name := range w.fields() {
		if string(name) != "response" {
			w.skip()
			continue
		}
		for name := range w.fields() {
			switch string(name) {
			case "id", "model":
				if w.peek() != '"' {
					w.skip()
					continue
				}
				v := string(w.text())
				if string(name) == "id" {
					r.ID = v
				} else {
					r.Model = v
				}
			case "created_at":
				if n, ok := w.int(); ok {
					r.CreatedAt = n
				}
			default:
				w.skip()
			}
		}
	}
}

// int reads the next value as a non-negative integer of up to 18 digits
// (a sequence number, a time); ok is false for any other value, skipped.
func (w *walker) int() (n int64, ok bool) {
	if w.peek() != '0' {
		w.skip()
		return 0, false
	}
	start := w.i
	w.num()
	d := w.d[start:w.i]
	if w.err != nil || len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// responsesLook checks a Responses event's data is JSON and finds its
// top-level sequence_number (-1 for none), in one walk.
func responsesLook(d []byte) (valid bool, seq int64) {
	w := newWalker(d)
	seq = -1
	if w.peek() != '{' {
		w.skip()
		return w.err == nil && w.end(), seq
	}
	for name := range w.fields() {
		if string(name) == "sequence_number" {
			if n, ok := w.int(); ok {
				seq = n
			}
			continue
		}
		w.skip()
	}
	return w.err == nil && w.end(), seq
}

// responsesFailed is the response.failed event that ends a Responses
// stream with error code and msg: it continues r's stream (its id, model
// and created_at, the next sequence_number) with a whole response object
// of OpenAI's schema: status failed, the output so far, the error, usage
// and incomplete_details.
func responsesFailed(r Responding, code, msg string) []byte {
	if r.ID == "" { // a stream that never said its response's id (none does)
		r.ID = "resp_spillway"
	}
	return responsesEvent("response.failed", r, &responseError{Code: code, Message: msg})
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// responsesEvent is a lifecycle event of r's response (status in_progress
// for response.created, failed with e).
func responsesEvent(name string, r Responding, e *responseError) []byte {
	type response struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		CreatedAt         int64           `json:"created_at"`
		Status            string          `json:"status"`
		Model             string          `json:"model"`
		Output            json.RawMessage `json:"output"`
		Error             *responseError  `json:"error"`
		IncompleteDetails any             `json:"incomplete_details"`
		Usage             json.RawMessage `json:"usage"`
	}
	status := "in_progress"
	if e != nil {
		status = "failed"
	}
	output := r.Output
	if output == nil {
		output = json.RawMessage("[]")
	}
	b, _ := json.Marshal(struct {
		Type     string   `json:"type"`
		Seq      int64    `json:"sequence_number"`
		Response response `json:"response"`
	}{name, r.Next, response{ID: r.ID, Object: "response", CreatedAt: r.CreatedAt, Status: status, Model: r.Model, Output: output, Error: e, Usage: r.Usage}})
	return append(append([]byte("event: "+name+"\ndata: "), b...), "\n\n"...)
}
