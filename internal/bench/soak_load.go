package bench

// The soak's load: conversations of each kind through the gateway, how
// each answer is judged, and the samples of the gateway's resources.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/internal/sse"
)

// soakLoad is the load generator and its tally.
type soakLoad struct {
	base   string
	client *http.Client
	wg     sync.WaitGroup
	open   atomic.Int64

	upstream *http.Server  // the simulator's
	giveBack time.Duration // the gateway's --give-back-after

	mu  sync.Mutex
	rep *SoakReport
}

// sample pauses the load until the gateway has nothing in flight (at most
// wait) and has given its memory back, then reads its live heap, RSS,
// goroutines and open files.
func (l *soakLoad) sample(ctx context.Context, g *soakGateway, start time.Time, wait time.Duration) SoakSample {
	given := g.metric(ctx, "spillway_memory_given_back_total")
	quiet := false
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		if l.open.Load() == 0 && g.metric(ctx, "spillway_inflight_requests") == 0 {
			quiet = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// idle connections, the client's to the gateway and the gateway's to
	// the simulator, hold goroutines and files in the gateway: closed for
	// a quiet sample (SetKeepAlivesEnabled(false) closes the server's idle
	// ones), keep-alive back on after it. Only a quiet one: with a request
	// open, its next attempt may take an idle connection as the simulator
	// closes it, and a POST is not retried by the transport; that attempt
	// would be recorded and never received (a busy sample is not judged)
	if quiet {
		l.client.CloseIdleConnections()
		l.upstream.SetKeepAlivesEnabled(false)
		time.Sleep(200 * time.Millisecond)
	}
	m, _ := g.metrics(ctx)
	for deadline := time.Now().Add(l.giveBack + 2*time.Second); quiet; time.Sleep(50 * time.Millisecond) {
		if m["spillway_memory_given_back_total"] > given {
			break
		}
		if !time.Now().Before(deadline) {
			quiet = false // the collector has not run at rest: the heap is not judged
			break
		}
		m, _ = g.metrics(ctx)
	}
	l.upstream.SetKeepAlivesEnabled(true)
	s := SoakSample{AtS: time.Since(start).Seconds(), RSSMB: m["process_resident_memory_bytes"] / (1 << 20), HeapMB: m["go_gc_heap_live_bytes"] / (1 << 20),
		Goroutines: int(m["go_goroutines"]), OpenFDs: int(m["process_open_fds"]), Quiet: quiet}
	return s
}

// start sends one request of kind (a tool conversation: two) in the
// background and tallies its outcome.
func (l *soakLoad) start(ctx context.Context, kind string) {
	l.wg.Add(1)
	l.open.Add(1)
	go func() {
		defer l.wg.Done()
		defer l.open.Add(-1)
		out, why, tool := l.converse(ctx, kind)
		l.mu.Lock()
		defer l.mu.Unlock()
		k := l.rep.Kinds[kind]
		k.Sent++
		l.rep.Requests++
		switch out {
		case answered:
			k.Answered++
			l.rep.Answered++
		case gaveUp:
			k.GaveUp++
			l.rep.GaveUp++
		default:
			k.Broken++
			l.rep.Broken++
			if len(l.rep.Examples) < 5 {
				l.rep.Examples = append(l.rep.Examples, kind+": "+why)
			}
		}
		if tool {
			l.rep.ToolTurns++
		}
		l.rep.Kinds[kind] = k
	}()
}

type soakOutcome int

const (
	broken soakOutcome = iota
	answered
	gaveUp
)

// converse sends kind's request; a Messages request answered with the
// tool call the script asks for sends the tool's result back, and its
// answer is the outcome.
func (l *soakLoad) converse(ctx context.Context, kind string) (soakOutcome, string, bool) {
	stream := strings.HasSuffix(kind, "-stream")
	switch {
	case strings.HasPrefix(kind, "chat"):
		body := fmt.Sprintf(`{"model":"gpt-6-astra","stream":%t,"messages":[{"role":"user","content":"soak: say something"}]}`, stream)
		out, why, _ := l.send(ctx, "/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + benchKey}, "chat", stream)
		return out, why, false
	case strings.HasPrefix(kind, "responses"):
		body := `{"model":"gpt-6-astra","stream":true,"input":"soak: say something"}`
		out, why, _ := l.send(ctx, "/v1/responses", body, map[string]string{"Authorization": "Bearer " + benchKey}, "responses", true)
		return out, why, false
	case strings.HasPrefix(kind, "gemini"):
		path := "/v1beta/models/gemini-3-pro:generateContent"
		if stream {
			path = "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse"
		}
		out, why, _ := l.send(ctx, path, `{"contents":[{"role":"user","parts":[{"text":"soak: say something"}]}]}`, map[string]string{"x-goog-api-key": benchKey}, "gemini", stream)
		return out, why, false
	}
	h := map[string]string{"x-api-key": benchKey, "anthropic-version": "2023-06-01"}
	first := fmt.Sprintf(`{"model":"claude-opus-5-5","max_tokens":256,"stream":%t,"tools":[%s],"messages":[{"role":"user","content":"soak: look a word up"}]}`, stream, soakTool)
	out, why, call := l.send(ctx, "/v1/messages", first, h, "messages", stream)
	if out != answered || call == nil {
		return out, why, false
	}
	use, _ := json.Marshal(map[string]any{"type": "tool_use", "id": call.id, "name": call.name, "input": map[string]any{"q": "spill"}})
	second := fmt.Sprintf(`{"model":"claude-opus-5-5","max_tokens":256,"stream":%t,"tools":[%s],"messages":[{"role":"user","content":"soak: look a word up"},{"role":"assistant","content":[%s]},{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"a word"}]}]}`,
		stream, soakTool, use, call.id)
	out, why, _ = l.send(ctx, "/v1/messages", second, h, "messages", stream)
	return out, why, out == answered
}

// toolUse is a Messages tool call found in an answer.
type toolUse struct{ id, name string }

// send posts body and judges what came back in format's terms.
func (l *soakLoad) send(ctx context.Context, path, body string, header map[string]string, format string, stream bool) (soakOutcome, string, *toolUse) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.base+path, strings.NewReader(body))
	if err != nil {
		return broken, err.Error(), nil
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return broken, err.Error(), nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && len(e.Error) > 2 {
			return gaveUp, "", nil
		}
		return broken, fmt.Sprintf("HTTP %d without the format's error: %.200s", resp.StatusCode, b), nil
	}
	if !stream {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if err != nil {
			return broken, "whole answer cut: " + err.Error(), nil
		}
		return judgeWhole(format, b)
	}
	return judgeStream(format, resp.Body)
}

// judgeWhole reads a whole answer: an answer holds the format's content.
func judgeWhole(format string, b []byte) (soakOutcome, string, *toolUse) {
	var v struct {
		Choices    []json.RawMessage                 `json:"choices"`
		Content    []struct{ Type, ID, Name string } `json:"content"`
		Candidates []json.RawMessage                 `json:"candidates"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return broken, fmt.Sprintf("whole answer is not JSON (%v): %.200s", err, b), nil
	}
	switch {
	case format == "chat" && len(v.Choices) > 0, format == "gemini" && len(v.Candidates) > 0:
		return answered, "", nil
	case format == "messages" && len(v.Content) > 0:
		for _, c := range v.Content {
			if c.Type == "tool_use" {
				return answered, "", &toolUse{c.ID, c.Name}
			}
		}
		return answered, "", nil
	}
	return broken, fmt.Sprintf("whole answer without content: %.200s", b), nil
}

// judgeStream reads a stream to its end: an answer ends with the format's
// last event (Chat's [DONE], Responses' response.completed, Messages'
// message_stop, Gemini's finishReason); a clean error is the format's
// error event; anything else (a stream that stops, a frame that is not
// JSON) is broken.
func judgeStream(format string, r io.Reader) (soakOutcome, string, *toolUse) {
	rd := sse.NewReader(r)
	var call *toolUse
	finished := false
	for {
		ev, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return broken, "stream: " + err.Error(), nil
		}
		data := bytes.TrimSpace(ev.Data)
		if ev.Comment || len(data) == 0 {
			continue
		}
		if format == "chat" && string(data) == "[DONE]" {
			finished = true
			continue
		}
		var v struct {
			Type  string          `json:"type"`
			Error json.RawMessage `json:"error"`
			Block struct {
				Type, ID, Name string
			} `json:"content_block"`
			Candidates []struct {
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return broken, fmt.Sprintf("a frame that is not JSON: %.200s", data), nil
		}
		switch {
		case len(v.Error) > 2 || v.Type == "error" || v.Type == "response.failed" || ev.Name == "error":
			return gaveUp, "", nil
		case v.Type == "content_block_start" && v.Block.Type == "tool_use":
			call = &toolUse{v.Block.ID, v.Block.Name}
		case v.Type == "message_stop", v.Type == "response.completed":
			finished = true
		case len(v.Candidates) > 0 && v.Candidates[0].FinishReason != "":
			finished = true
		}
	}
	if !finished {
		return broken, "the stream ended without its last event or an error", nil
	}
	return answered, "", call
}
