package dash

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// page is one open stream.
type page struct {
	out     chan []byte
	heatVer int    // the heatmap it has (-1: none yet)
	addr    string // the address it was opened from
}

// frame is one server-sent event.
func frame(name string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil { // the board's own types: cannot happen
		data = []byte(`{}`)
	}
	out := make([]byte, 0, len(name)+len(data)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// publish sends an event to every open page (b.mu held). A page that
// cannot keep up misses it; the next state sets it right.
func (b *Board) publish(name string, v any) {
	f := frame(name, v)
	for p := range b.pages {
		select {
		case p.out <- f:
		default:
		}
	}
}

// join opens a page's stream from addr (the client's address, without
// its port); why says what refused it ("" when it opened): the board is
// closed, or too many are open in all or from addr (pagesOpen).
func (b *Board) join(addr string) (*page, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, "the gateway is stopping"
	}
	if why := b.full(addr); why != "" {
		return nil, why
	}
	p := &page{out: make(chan []byte, subscribers), heatVer: -1, addr: addr}
	b.pages[p] = struct{}{}
	if !b.ticking {
		b.ticking = true
		b.stopTick = b.clock.AfterFunc(tick, b.tick)
	}
	return p, ""
}

// full says why no other page may open from addr, "" when one may
// (b.mu held).
func (b *Board) full(addr string) string {
	if b.o.Exposed == nil || !b.o.Exposed() {
		if len(b.pages) >= maxPages {
			return fmt.Sprintf("%d pages are open on this gateway, its limit; close one", maxPages)
		}
		return ""
	}
	if len(b.pages) >= maxPagesExposed {
		return fmt.Sprintf("%d pages are open on this gateway, its limit; close one", maxPagesExposed)
	}
	n := 0
	for p := range b.pages {
		if p.addr == addr {
			n++
		}
	}
	if n >= maxPagesPerAddress {
		return fmt.Sprintf("%d pages are open from your address, the limit for one address; close one", maxPagesPerAddress)
	}
	return ""
}

// leave closes a page's stream.
func (b *Board) leave(p *page) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.pages[p]; ok {
		delete(b.pages, p)
		close(p.out)
	}
}

// tick sends the state to the open pages, made once for all of them, and
// comes again while any is open.
func (b *Board) tick() {
	b.mu.Lock()
	n := len(b.pages)
	if n == 0 || b.closed {
		b.ticking = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	st := b.State(ctx)
	cancel()
	full := frame("state", st)
	st.Heat = nil
	lite := frame("state", st)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	// the heatmap goes to a page that does not have this one yet; a page
	// that misses it (its queue full) gets it at the next tick
	for p := range b.pages {
		f, heat := lite, p.heatVer != st.heatVer
		if heat {
			f = full
		}
		select {
		case p.out <- f:
			if heat {
				p.heatVer = st.heatVer
			}
		default:
		}
	}
	b.stopTick = b.clock.AfterFunc(tick, b.tick)
}

// has notes that p got the heatmap of version ver (its first state).
func (b *Board) has(p *page, ver int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p.heatVer = ver
}
