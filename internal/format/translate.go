// Package format is the providers' wire formats: the Format interface each
// format's folder implements (internal/format/responses, chat, messages,
// gemini; internal/format/formats finds them), the neutral form they all
// read into and write from (Request, and the answer's Events), and the one
// translation engine that carries a request across vendors: a client's
// request in one format is sent to a model of another, and the answer,
// whole or streamed event by event, comes back in the client's own format
// (Turn, Stream). It is the one translation layer of the relay, for the
// gateway and the library alike.
//
// Every direction goes through the neutral form: a client's request is read
// into it by its format (Requests.ReadRequest) and written by the target's
// (Requests.WriteRequest); the target's answer is read into events by its
// format (Answers.NewReader) and written by the client's (Answers.Writer).
// So each format has a reader and a writer, not a translation per pair, and
// the engine names no format.
//
// Rules every direction keeps (docs/gateway.md, "Spilling across vendors",
// lists them):
//   - reasoning never leaves its vendor: thinking blocks and their
//     signatures, Responses' reasoning items and Gemini's thought parts and
//     signatures in a client's history are dropped on the way to another
//     vendor, and another vendor's reasoning never reaches the client (only
//     its token count);
//   - tool names the target refuses go through a reversible mapping, call
//     ids are made valid for the target and mapped back one to one, and
//     calls come back in the form the client declared the tool in (Codex's
//     freeform tools as custom_tool_call);
//   - what cannot be carried (a stateful Responses request, hosted tools,
//     audio, several candidates) is not sent: Check says why, and the step
//     is skipped with its reason in the route.
package format

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spillway/spillway/internal/wire"
)

// Takes is what the target model takes (config.Model's tools, images and
// reasoning).
type Takes struct {
	Tools, Images, Reasoning bool
}

// Turn is one request translated for a model of another format: what is
// sent, and what its answer needs to come back in the client's format.
type Turn struct {
	Client wire.Endpoint // what the client called
	Target wire.Endpoint // where the translated request goes
	Body   []byte        // the translated request
	Stream bool
	// Model is the name the client is told answered (the candidate's)
	Model string

	// Now is the clock an answer's creation time comes from (the
	// engine's); NewID makes the ids spillway gives what it writes (an
	// answer's, a call's): random unless a test sets it
	Now   func() time.Time
	NewID func(prefix string) string

	// MaxHeld bounds what a stream of the answer keeps for its closing
	// events (Stream.Held), 0: no bound. An event that would take it past
	// is ErrTooLarge: the relay ends the client's stream with its format's
	// error event. A whole answer (Answer) is not bounded by it.
	MaxHeld int64

	// Req is the request in the neutral form, as it goes to the target
	Req *Request

	client, target Format
	takes          Takes
	tools          map[string]Tool   // the target's tool names: the client's tools
	ids            map[string]string // the target's call ids in the history: the client's
}

// ErrCannot wraps why a request cannot be translated (Check's answer).
var ErrCannot = errors.New("cannot be translated")

// Check reads body, a request to client, and says why it cannot go to a
// model of format to that takes what t says: nil when it can.
func Check(reg Registry, client wire.Endpoint, body []byte, to wire.Format, t Takes) error {
	return Parse(reg, client, body).Check(to, t)
}

// Parsed is a client's request read once (on first use), for every
// cross-vendor step of it: a request that spills across vendors is read
// into the neutral form once, whatever the steps it is checked for and
// sent to. Safe for concurrent use (a hedge).
type Parsed struct {
	reg    Registry
	client wire.Endpoint
	body   []byte
	once   sync.Once
	req    *Request
	err    error
}

// Parse is body, a request to client, to be read when a step needs it,
// in the formats reg finds.
func Parse(reg Registry, client wire.Endpoint, body []byte) *Parsed {
	return &Parsed{reg: reg, client: client, body: body}
}

func (p *Parsed) read() (*Request, error) {
	p.once.Do(func() { p.req, p.err = parse(p.reg, p.client, p.body) })
	return p.req, p.err
}

// Check says why the request cannot go to a model of format to that takes
// what t says: nil when it can.
func (p *Parsed) Check(to wire.Format, t Takes) error {
	r, err := p.read()
	if err != nil {
		return err
	}
	_, err = fits(p.reg, p.client, r, to, t)
	return err
}

// New is the request translated for model (upstream at its provider) of
// format to.
func (p *Parsed) New(to wire.Format, t Takes, model, upstream string) (*Turn, error) {
	r, err := p.read()
	if err != nil {
		return nil, err
	}
	if r, err = fits(p.reg, p.client, r, to, t); err != nil {
		return nil, err
	}
	return newTurn(p.reg, p.client, r, to, t, model, upstream)
}

// reachable says why no request to client goes to format to.
func reachable(reg Registry, client wire.Endpoint, to wire.Format) error {
	if client.Format == to {
		return fmt.Errorf("%w: the model speaks the client's own format", ErrCannot)
	}
	if _, _, ok := target(reg, to, client, false); !ok {
		return fmt.Errorf("%w: %s requests are never translated", ErrCannot, client.Kind)
	}
	return nil
}

// parse reads body, a request to client, into the neutral form.
func parse(reg Registry, client wire.Endpoint, body []byte) (*Request, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: the body is not a JSON object", ErrCannot)
	}
	f, ok := reg.Of(client.Kind)
	if !ok {
		return nil, fmt.Errorf("%w: %s requests are never translated", ErrCannot, client.Kind)
	}
	r, err := f.ReadRequest(m, client)
	if err == nil {
		err = r.Placed()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannot, err)
	}
	return r, nil
}

// fits is r as it goes to a model of format to that takes what t says (a
// copy, when it must change), or why it cannot.
func fits(reg Registry, client wire.Endpoint, r *Request, to wire.Format, t Takes) (*Request, error) {
	if err := reachable(reg, client, to); err != nil {
		return nil, err
	}
	switch {
	case len(r.Tools) > 0 && !t.Tools:
		return nil, fmt.Errorf("%w: the request has tools and the model takes none (tools: false)", ErrCannot)
	case r.HasImages() && !t.Images:
		return nil, fmt.Errorf("%w: the request has images and the model takes none (images: false)", ErrCannot)
	}
	if !t.Reasoning && (r.Effort != "" || r.Budget != 0) {
		c := *r
		c.Effort, c.Budget = "", 0
		r = &c
	}
	return r, nil
}

// target is the endpoint a request to client goes to in format f, and its
// format (reg.Target: Chat Completions for OpenAI, Messages for Anthropic,
// Gemini's generate methods, streamed when the client streams). A request
// of a kind no format folder holds (embeddings) or one sent by a sign-in's
// route (client.Via) has none; nor has countTokens.
func target(reg Registry, f wire.Format, client wire.Endpoint, stream bool) (wire.Endpoint, Format, bool) {
	if _, ok := reg.Of(client.Kind); !ok || client.Via != "" {
		return wire.Endpoint{}, nil, false
	}
	return reg.Target(f, stream)
}

// New translates body, a request to client, for model (its name at the
// provider: upstream) of format to.
func New(reg Registry, client wire.Endpoint, body []byte, to wire.Format, t Takes, model, upstream string) (*Turn, error) {
	return Parse(reg, client, body).New(to, t, model, upstream)
}

func newTurn(reg Registry, client wire.Endpoint, r *Request, to wire.Format, takes Takes, model, upstream string) (*Turn, error) {
	ep, tf, _ := target(reg, to, client, r.Stream)
	cf, _ := reg.Of(client.Kind)
	tr := &Turn{Client: client, Target: ep, Stream: r.Stream, Model: model, Req: r, client: cf, target: tf,
		Now: time.Now, NewID: NewID, takes: takes, tools: map[string]Tool{}, ids: map[string]string{}}
	for _, tl := range r.Tools {
		tr.tools[TargetName(tl)] = tl
	}
	var err error
	if tr.Body, err = json.Marshal(tf.WriteRequest(tr, upstream)); err != nil {
		return nil, err
	}
	return tr, nil
}

// Takes is what the target model takes.
func (t *Turn) Takes() Takes { return t.takes }

// CallIDs are the target's call ids in the history, each the client's it
// stands for.
func (t *Turn) CallIDs() map[string]string { return t.ids }
