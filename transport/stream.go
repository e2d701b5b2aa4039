package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/provider"
	"github.com/spillway/spillway/sse"
)

// held is what holding a stream found.
type held struct {
	output  bool   // output started: the caller gets bytes, then the live rest
	bytes   []byte // every byte read from the body so far
	verdict classify.Verdict
	frame   bool  // the verdict comes from the provider's error event
	err     error // the read error when the stream broke
}

// recorder keeps every byte read through it, so that what the SSE reader
// took (including what it buffered ahead) can be replayed exactly.
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
}

func (c *recorder) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.buf.Write(p[:n])
	return n, err
}

// hold reads a 2xx event stream up to its first real output, the way the
// gateway's relay does (gateway/stream.go): opening events are held; an
// error event, an early end or no output within gateway.first_token_timeout
// ends the attempt before the caller has seen a byte. cancel ends the
// attempt's request.
func (t *Transport) hold(ctx context.Context, cancel context.CancelFunc, resp *http.Response, ep endpoint, cand policy.Candidate) held {
	rec := &recorder{r: resp.Body}
	ch := make(chan held, 1)
	go func() {
		rd := sse.NewReader(rec)
		for {
			ev, err := rd.Next()
			if err != nil {
				why := "the upstream stream ended before its final event"
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				} else {
					why += ": " + err.Error()
				}
				ch <- held{verdict: classify.Verdict{Class: classify.Network, Message: why}, err: err}
				return
			}
			if ev.Comment { // a keep-alive before output: nothing to decide
				continue
			}
			switch provider.KindOf(ep.kind, ev) {
			case provider.Hold:
				continue
			case provider.Error:
				v := classify.Classify(classify.Input{Event: ev.Name, Body: ev.Data, Provider: classify.Provider(cand.Type)})
				if v.Class == classify.OK || v.Class == classify.Unknown {
					v.Class = classify.ServerError
				}
				ch <- held{verdict: v, frame: true}
				return
			}
			ch <- held{output: true} // output or the stream's end: commit
			return
		}
	}()
	var timeout <-chan time.Time
	if d := t.cfg.Gateway.FirstToken.D(); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		timeout = timer.C
	}
	var h held
	select {
	case h = <-ch:
	case <-timeout:
		cancel()
		resp.Body.Close()
		<-ch
		h = held{verdict: classify.Verdict{Class: classify.Timeout, Message: fmt.Sprintf("no output within %s (gateway.first_token_timeout)", t.cfg.Gateway.FirstToken.D())}}
	case <-ctx.Done():
		cancel()
		resp.Body.Close()
		<-ch
		h = held{verdict: classify.Err(ctx.Err()), err: ctx.Err()}
	}
	h.bytes = rec.buf.Bytes()
	return h
}
