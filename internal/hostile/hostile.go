// Package hostile is an upstream that answers as an attacker would: one
// answer far larger than a gateway holds (text, tool arguments, one event
// that never ends), made as it is sent and never held, cut before its
// end. The hostile-upstream tests and scripts/hostile-rss run it.
package hostile

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// Upstream answers requests whose path starts with Path with Gen's answer
// of Size bytes, cut before its end, and every other request with a full
// model's answer (capacity, in the path's format), so that a chain walks
// to it. It counts the requests by path.
type Upstream struct {
	Path string
	Gen  Gen
	Size int
	// Sample, when set, is called every 2 MiB sent (a test's heap check)
	Sample func()

	mu   sync.Mutex
	hits map[string]int
}

// Gen writes a hostile answer with w.
type Gen func(w *Writer)

// Gens are the answers by name: a Messages text, a Messages tool call's
// arguments, a Chat tool call's arguments, and a Messages answer whose
// one text event never ends.
var Gens = map[string]Gen{"messages-text": MessagesText, "messages-tool": MessagesTool, "chat-tool": ChatTool, "messages-oversized": MessagesOversized}

func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	if u.hits == nil {
		u.hits = map[string]int{}
	}
	u.hits[r.URL.Path]++
	u.mu.Unlock()
	if !strings.HasPrefix(r.URL.Path, u.Path) {
		full(w, r.URL.Path)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	u.Gen(&Writer{w: w, rc: http.NewResponseController(w), sample: u.Sample, size: u.Size})
	// the handler returns without the answer's end: the stream is cut
}

// Count is the requests whose path starts with prefix.
func (u *Upstream) Count(prefix string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for p, c := range u.hits {
		if strings.HasPrefix(p, prefix) {
			n += c
		}
	}
	return n
}

// full answers that the model is at capacity, in the path's format.
func full(w http.ResponseWriter, path string) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	case strings.HasPrefix(path, "/v1beta/"):
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
	default:
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The server is overloaded","type":"server_error","code":"server_is_overloaded"}}`)
	}
}

// Writer writes a hostile answer: events made as they are sent, Sample
// called every 2 MiB.
type Writer struct {
	w      io.Writer
	rc     *http.ResponseController
	sample func()
	size   int
	sent   int
	next   int
}

// put writes parts (false once the gateway hung up).
func (s *Writer) put(parts ...string) bool {
	for _, p := range parts {
		if _, err := io.WriteString(s.w, p); err != nil {
			return false
		}
		s.sent += len(p)
	}
	if s.sent >= s.next {
		s.next = s.sent + 2<<20
		if s.rc.Flush() != nil {
			return false
		}
		if s.sample != nil {
			s.sample()
		}
	}
	return true
}

// repeat writes open, then the event that carries a piece of 32 KiB of
// a's, again and again until the answer's size went: nothing is held.
func (s *Writer) repeat(open string, event func(piece string) string) {
	if !s.put(open) {
		return
	}
	ev := event(strings.Repeat("a", 32<<10))
	for s.sent < s.size {
		if !s.put(ev) {
			return
		}
	}
	s.rc.Flush()
}

const msgStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"

const textStart = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"

// MessagesText is a Messages answer of text.
func MessagesText(s *Writer) {
	s.repeat(msgStart+textStart, func(p string) string {
		return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + p + "\"}}\n\n"
	})
}

// MessagesTool is a Messages tool call whose arguments never end.
func MessagesTool(s *Writer) {
	s.repeat(msgStart+"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Bash\",\"input\":{}}}\n\n"+
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"cmd\\\":\\\"\"}}\n\n",
		func(p string) string {
			return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" + p + "\"}}\n\n"
		})
}

// ChatTool is a Chat Completions tool call whose arguments never end.
func ChatTool(s *Writer) {
	s.repeat("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"Bash\",\"arguments\":\"{\\\"cmd\\\":\\\"\"}}]}}]}\n\n",
		func(p string) string {
			return "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"" + p + "\"}}]}}]}\n\n"
		})
}

// MessagesOversized opens a Messages answer, then sends one text event
// that never ends.
func MessagesOversized(s *Writer) {
	s.repeat(msgStart+textStart+"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
		func(p string) string { return p })
}
