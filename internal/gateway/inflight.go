package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
)

// busyWait is how long a request waits for room under
// gateway.max_inflight_mb before it is refused.
const busyWait = time.Second

// inflight counts the bytes the gateway holds at once (request bodies,
// and what answers hold: whole answers, the text a continuation carries,
// a translated stream's state, output held back) against
// gateway.max_inflight_mb: without a bound, a few clients sending large
// bodies, or upstreams sending large answers, take the machine's memory.
// A request's body is taken before it is read, waiting up to busyWait for
// room; what an answer holds is taken as it grows, without waiting (past
// the room the request loses what needs it: budget), so that new requests
// wait while it is held. A request gives back all it took when it ends. No spooling to disk: a body is read once
// and sent to each model it goes to.
type inflight struct {
	mu   sync.Mutex
	used int64
	room chan struct{} // closed, and made anew, when bytes are given back
}

// errBusy is a request refused for want of room.
var errBusy = errors.New("spillway: the gateway holds as many request and answer bytes as it may (gateway.max_inflight_mb); retry in a second")

// take holds n bytes within limit, waiting on clock up to busyWait (or
// until ctx ends) for room; false when there was none.
func (f *inflight) take(ctx context.Context, clock policy.Clock, n, limit int64) bool {
	var deadline <-chan struct{}
	for {
		f.mu.Lock()
		if f.used+n <= limit || f.used == 0 { // a lone request larger than the limit is config check's to refuse
			f.used += n
			f.mu.Unlock()
			return true
		}
		if f.room == nil {
			f.room = make(chan struct{})
		}
		room := f.room
		f.mu.Unlock()
		if deadline == nil {
			d := make(chan struct{})
			stop := clock.AfterFunc(busyWait, func() { close(d) })
			defer stop()
			deadline = d
		}
		select {
		case <-room:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// tryTake holds n bytes within limit at once; false, holding nothing,
// when there is no room (what an answer holds never waits for room).
func (f *inflight) tryTake(n, limit int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used+n > limit {
		return false
	}
	f.used += n
	return true
}

// give gives n bytes back, and wakes the requests waiting for room.
func (f *inflight) give(n int64) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	f.used -= min(n, f.used) // never below nothing: a give past what is held is a bug's, not more room
	if f.room != nil {
		close(f.room)
		f.room = nil
	}
	f.mu.Unlock()
}

// held is what one request holds: its body, and what its answers hold
// (budget); all of it is given back when the request ends.
type held struct {
	n       atomic.Int64
	answers *budget // what its answers hold (within n)
	// inFlight: hold counted the request in flight (quiet), giveHeld
	// counts it out
	inFlight bool
}

// budget is what one request may hold of its answers (send.Budget): the
// text a continuation carries, a translated stream's state, the output
// held back, a whole answer; at most gateway.max_body_mb for the request,
// and within gateway.max_inflight_mb with every other request's bodies
// and answers. It never waits for room: past it the request loses what
// needs the memory.
type budget struct {
	f           *inflight
	h           *held
	limit, most int64 // the gateway's room, the request's
	mu          sync.Mutex
	used        int64
	ended       bool // the request gave back all it held (end): nothing more is taken or given
}

func (b *budget) Take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || b.used+n > b.most || !b.f.tryTake(n, b.limit) {
		return false
	}
	b.used += n
	b.h.n.Add(n)
	return true
}

// Give gives back n bytes taken, never more than the budget holds, and
// nothing once the request ended (its end gave back all it held).
func (b *budget) Give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	n = min(n, b.used)
	b.used -= n
	b.h.n.Add(-n)
	b.f.give(n)
}

// end closes the budget as its request ends: the request gives back all
// it holds (held.n) once, after what was given back before.
func (b *budget) end() {
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
}

// hold is r's body taken from the gateway's room (its length, or as it
// is read when it has none; by the limits of st, the state r was pinned
// to), and what r holds; ok false when there was no room (the answer is
// written: 503 spillway_busy). From here to giveHeld
// the request is in flight for the give-back after a quiet spell (quiet),
// its wait for room included: every route that holds a body counts so.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, ep wire.Endpoint, st *gwState) (*http.Request, *held, bool) {
	s.quiet.begin()
	limit := int64(st.cfg.Gateway.MaxInflightMB) << 20
	h := &held{inFlight: true}
	h.answers = &budget{f: &s.bytes, h: h, limit: limit, most: st.maxBody()}
	if n := r.ContentLength; n > 0 {
		n = min(n, st.maxBody()+1) // what MaxBytesReader lets in
		if !s.bytes.take(r.Context(), st.engine.Clock(), n, limit) {
			busy(w, ep)
			return r, h, false
		}
		h.n.Add(n)
		return r, h, true
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &takingBody{ReadCloser: r.Body, s: s, ctx: r.Context(), h: h, limit: limit}
	}
	return r, h, true
}

// giveHeld gives back all a request held as it ends, once: its budget
// ends first, so that nothing it gives after is given twice.
func (s *Server) giveHeld(h *held) {
	if h.inFlight {
		defer s.quiet.end()
	}
	h.answers.end()
	s.bytes.give(h.n.Load())
}

// busy answers a request refused for want of room: 503 in the provider's
// shape, code spillway_busy (never server_is_overloaded, which Codex
// shows as the model at capacity), Retry-After: 1.
func busy(w http.ResponseWriter, ep wire.Endpoint) {
	status, body := formats.WireOf(ep).BusyBody(errBusy.Error())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(int(busyWait/time.Second)))
	w.WriteHeader(status)
	w.Write(body)
}

// takingBody takes a body of unknown length from the room as it is read.
type takingBody struct {
	io.ReadCloser
	s     *Server
	ctx   context.Context
	h     *held
	limit int64
}

func (b *takingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		if !b.s.bytes.take(b.ctx, b.s.eng().Clock(), int64(n), b.limit) {
			return 0, errBusy
		}
		b.h.n.Add(int64(n))
	}
	return n, err
}

// planTransport notes the plan headers each answer carries. (What an
// answer holds is counted where it is kept: the request's budget.)
type planTransport struct {
	rt    http.RoundTripper
	plans *planLimits
}

// AuthorizesClouds passes the senders' question on: whether the transport
// under it authorizes requests marked for a cloud (cloud.Transport does).
func (t planTransport) AuthorizesClouds() bool {
	s, ok := t.rt.(interface{ AuthorizesClouds() bool })
	return ok && s.AuthorizesClouds()
}

func (t planTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil && t.plans != nil {
		t.plans.observe(req.URL.Host, resp.Header)
	}
	return resp, err
}

// clockOf is the clock the engine of the moment has (a reload may bring
// another): what the cloud transport judges cached credentials by.
type clockOf func() policy.Clock

// Now is the engine's clock's time.
func (c clockOf) Now() time.Time { return c().Now() }
