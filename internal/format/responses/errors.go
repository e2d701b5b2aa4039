package responses

import (
	"encoding/json"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/format/chat"
	"github.com/spillway/spillway/internal/wire"
)

// ErrorBody is the OpenAI API's error (chat's: every OpenAI route shares
// it).
func (Format) ErrorBody(class classify.Class, msg string) (int, []byte) {
	return chat.Format{}.ErrorBody(class, msg)
}

// StatusBody is the OpenAI API's refusal (chat's).
func (Format) StatusBody(status int, msg string) []byte { return chat.Format{}.StatusBody(status, msg) }

// BusyBody is the OpenAI API's spillway_busy (chat's).
func (Format) BusyBody(msg string) (int, []byte) { return chat.Format{}.BusyBody(msg) }

// StreamErrorFrame is the response.failed event that ends a broken
// stream: it continues the stream r says (its response's id, model,
// created_at, the next sequence_number), code server_is_overloaded for
// capacity, else server_error.
func (Format) StreamErrorFrame(class classify.Class, msg string, r wire.Responding) []byte {
	code := "server_error"
	if class == classify.Capacity {
		code = "server_is_overloaded"
	}
	return failed(r, code, msg)
}

// GiveUpFrame is a stream of its own: r names its response (an id of
// spillway's, the model asked for, the time), and it is response.created
// then response.failed (sequence numbers 0 and 1), a response's whole
// lifecycle as OpenAI streams one that fails before output (the OpenAI
// Node SDK reads no stream that does not open with response.created). Its
// code is invalid_prompt: Codex 0.169 prints its own fixed text for
// server_is_overloaded ("Selected model is at capacity. Please try a
// different model.": wrong advice, spillway tried them all) and
// reconnects on other codes; invalid_prompt it prints as the message
// says, once (measured against the real client). The code tells a client
// not to retry, which is right: spillway did.
func (Format) GiveUpFrame(_ classify.Class, msg string, r wire.Responding) []byte {
	r.Next = 0
	out := event("response.created", r, nil)
	r.Next = 1
	return append(out, failed(r, "invalid_prompt", msg)...)
}

// failed is the response.failed event that ends a Responses stream with
// error code and msg: it continues r's stream (its id, model and
// created_at, the next sequence_number) with a whole response object of
// OpenAI's schema: status failed, the output so far, the error, usage and
// incomplete_details.
func failed(r wire.Responding, code, msg string) []byte {
	if r.ID == "" { // a stream that never said its response's id (none does)
		r.ID = "resp_spillway"
	}
	return event("response.failed", r, &responseError{Code: code, Message: msg})
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// event is a lifecycle event of r's response (status in_progress for
// response.created, failed with e).
func event(name string, r wire.Responding, e *responseError) []byte {
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

// GivesUpInStream is true: Codex reconnects to an HTTP 5xx and sends the
// request again, so a streaming request spillway gives up on gets the event
// form, with a code Codex prints as spillway says it.
func (Format) GivesUpInStream() bool { return true }
