package sim

import (
	"net/http"
	"strings"
)

// content is what an answer carries, whole or streamed: text, or tool
// calls. A stream is its opening, its pieces (the text's tokens, the calls'
// argument deltas) and its close.
type content interface {
	open(sw *stream) error
	count() int
	piece(sw *stream, i int) error
	close(sw *stream, u usage) error
	whole(w http.ResponseWriter, u usage)
}

// textContent is a text answer in the call's protocol.
type textContent struct {
	c    *call
	text string
	toks []string
}

func (t *textContent) open(sw *stream) error { return t.c.proto.open(sw, t.c) }
func (t *textContent) count() int            { return len(t.toks) }
func (t *textContent) piece(sw *stream, i int) error {
	return t.c.proto.token(sw, t.c, i, t.toks[i])
}
func (t *textContent) close(sw *stream, u usage) error {
	return t.c.proto.close(sw, t.c, t.text, u)
}
func (t *textContent) whole(w http.ResponseWriter, u usage) { t.c.proto.complete(w, t.c, t.text, u) }

// callWriter is a protocol's way of writing tool calls.
type callWriter interface {
	// callPieces are the deltas a call's arguments stream in.
	callPieces(tc toolCall) []string
	callOpen(sw *stream, c *call, calls []toolCall) error
	// callPiece writes piece k of call j: the call's start before its
	// first piece, its end after its last.
	callPiece(sw *stream, c *call, calls []toolCall, j int, piece string, first, last bool) error
	callClose(sw *stream, c *call, calls []toolCall, u usage) error
	callWhole(w http.ResponseWriter, c *call, calls []toolCall, u usage)
}

// callContent is an answer of tool calls.
type callContent struct {
	c     *call
	w     callWriter
	calls []toolCall
	steps []callStep
}

type callStep struct {
	j           int
	piece       string
	first, last bool
}

func newCallContent(c *call, calls []toolCall) *callContent {
	w := c.proto.(callWriter) // every protocol that answers with text writes calls too
	cc := &callContent{c: c, w: w, calls: calls}
	for j, tc := range calls {
		ps := w.callPieces(tc)
		if len(ps) == 0 {
			ps = []string{""}
		}
		for k, p := range ps {
			cc.steps = append(cc.steps, callStep{j: j, piece: p, first: k == 0, last: k == len(ps)-1})
		}
	}
	return cc
}

// tokens is what the calls count as output: a token per four bytes.
func (cc *callContent) tokens() int {
	n := 0
	for _, tc := range cc.calls {
		n += (len(tc.name) + len(tc.args) + 3) / 4
	}
	return max(n, 1)
}

// text is the calls' arguments, for a fault that cuts the answer.
func (cc *callContent) text() string {
	parts := make([]string, len(cc.calls))
	for i, tc := range cc.calls {
		parts[i] = tc.args
	}
	return strings.Join(parts, " ")
}

func (cc *callContent) open(sw *stream) error { return cc.w.callOpen(sw, cc.c, cc.calls) }
func (cc *callContent) count() int            { return len(cc.steps) }
func (cc *callContent) piece(sw *stream, i int) error {
	st := cc.steps[i]
	return cc.w.callPiece(sw, cc.c, cc.calls, st.j, st.piece, st.first, st.last)
}
func (cc *callContent) close(sw *stream, u usage) error {
	return cc.w.callClose(sw, cc.c, cc.calls, u)
}
func (cc *callContent) whole(w http.ResponseWriter, u usage) {
	if ga, ok := cc.c.proto.(geminiArray); ok {
		ga.callArray(w, cc.c, cc.calls, u)
		return
	}
	cc.w.callWhole(w, cc.c, cc.calls, u)
}
