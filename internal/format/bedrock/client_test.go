package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// Claude Code's Bedrock requests, as recorded, read as Messages requests:
// model and stream set (last), anthropic_version and anthropic_beta gone,
// the betas its anthropic_beta's, every other member as it was, in order.
func TestClientRequestRecorded(t *testing.T) {
	for _, tt := range []struct {
		file   string
		stream bool
		betas  []string
	}{
		{"claude-2.1.328-bedrock-first", true, []string{"interleaved-thinking-2025-05-14", "tool-search-tool-2025-10-19", "thinking-token-count-2026-05-13"}},
		{"claude-2.1.328-bedrock-tool-result", true, []string{"interleaved-thinking-2025-05-14", "tool-search-tool-2025-10-19", "thinking-token-count-2026-05-13"}},
		{"claude-2.1.328-bedrock-probe", false, nil},
	} {
		t.Run(tt.file, func(t *testing.T) {
			body := clienttest.RecordedBody(t, tt.file)
			out, betas, err := ClientRequest(body, "claude-sonnet-5-5", tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(betas, tt.betas) {
				t.Errorf("betas %q, want %q", betas, tt.betas)
			}
			var want []clienttest.Member
			for _, m := range clienttest.Members(t, body) {
				if m.Name != "anthropic_version" && m.Name != "anthropic_beta" {
					want = append(want, m)
				}
			}
			if len(want) < 4 {
				t.Fatalf("only %d members recorded", len(want))
			}
			want = append(want, clienttest.Member{Name: "model", Value: `"claude-sonnet-5-5"`}, clienttest.Member{Name: "stream", Value: strconv.FormatBool(tt.stream)})
			if got := clienttest.Members(t, out); !slices.Equal(got, want) {
				t.Errorf("members\n%v\nwant\n%v", names(got), names(want))
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Errorf("member %d: %s %.80s, want %s %.80s", i, got[i].Name, got[i].Value, want[i].Name, want[i].Value)
					}
				}
			}
		})
	}
}

func names(ms []clienttest.Member) []string {
	var n []string
	for _, m := range ms {
		n = append(n, m.Name)
	}
	return n
}

// A body's own model and stream are replaced; betas must be strings in an
// array; what is not a JSON object is refused with an error that says so.
func TestClientRequest(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		stream     bool
		want       string
		betas      []string
		err        string
	}{
		{"replaced", `{"model":"x","stream":true,"max_tokens":5}`, false, `{"max_tokens":5,"model":"m","stream":false}`, nil, ""},
		{"kept bytes", `{ "a" : 1.50e+1 , "b":"\u00e9" }`, true, `{"a":1.50e+1,"b":"\u00e9","model":"m","stream":true}`, nil, ""},
		{"null betas", `{"anthropic_beta":null,"anthropic_version":"bedrock-2023-05-31"}`, true, `{"model":"m","stream":true}`, nil, ""},
		{"empty betas", `{"anthropic_beta":[]}`, true, `{"model":"m","stream":true}`, nil, ""},
		{"escaped beta", `{"anthropic_beta":["a\u002db"]}`, true, `{"model":"m","stream":true}`, []string{"a-b"}, ""},
		{"last betas", `{"anthropic_beta":["a"],"anthropic_beta":["b"]}`, true, `{"model":"m","stream":true}`, []string{"b"}, ""},
		{"string betas", `{"anthropic_beta":"a,b"}`, true, "", nil, "anthropic_beta is not an array of strings (a string)"},
		{"number in betas", `{"anthropic_beta":["a",2]}`, true, "", nil, "its element 1 is a number"},
		{"array", `[1]`, true, "", nil, "not a JSON object"},
		{"empty", ``, true, "", nil, "it is empty"},
		{"cut", `{"max_tokens":`, true, "", nil, "ends in the middle"},
		{"trailing", `{} {}`, true, "", nil, "something follows"},
		{"bad", `{"a":tru}`, true, "", nil, "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, betas, err := ClientRequest([]byte(tt.body), "m", tt.stream)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || string(out) != tt.want || !slices.Equal(betas, tt.betas) {
				t.Errorf("%s %q %v, want %s %q", out, betas, err, tt.want, tt.betas)
			}
		})
	}
	if _, _, err := ClientRequest([]byte(`"x"`), "m", true); !errors.Is(err, wire.ErrNotObject) {
		t.Errorf("a string body: %v, want wire.ErrNotObject", err)
	}
}

// A CountTokens body is the InvokeModel body it carries, without stream;
// a Converse input or another shape is refused with an error that says so.
func TestClientCount(t *testing.T) {
	invoke := clienttest.RecordedBody(t, "claude-2.1.328-bedrock-first")
	whole, wantBetas, err := ClientRequest(invoke, "claude-sonnet-5-5", false)
	if err != nil {
		t.Fatal(err)
	}
	wantCount, _ := format.Reshape(whole, []string{"stream"})
	for _, tt := range []struct {
		name, body string
		want       string
		betas      []string
		err        string
	}{
		{"recorded", string(CountTokensBody(invoke)), string(wantCount), wantBetas, ""},
		{"stream dropped", string(CountTokensBody([]byte(`{"stream":true,"max_tokens":1}`))), `{"max_tokens":1,"model":"claude-sonnet-5-5"}`, nil, ""},
		{"converse", `{"input":{"converse":{"messages":[]}}}`, "", nil, "invokeModel inputs only"},
		{"no input", `{}`, "", nil, "has no input"},
		{"no body", `{"input":{"invokeModel":{}}}`, "", nil, "no input.invokeModel.body"},
		{"not base64", `{"input":{"invokeModel":{"body":"%%%"}}}`, "", nil, "CountTokens request body is"},
		{"not JSON", `{"input":`, "", nil, "CountTokens request body is"},
		{"body not an object", `{"input":{"invokeModel":{"body":"` + base64.StdEncoding.EncodeToString([]byte("[]")) + `"}}}`, "", nil, "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, betas, err := ClientCount([]byte(tt.body), "claude-sonnet-5-5")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || string(out) != tt.want || !slices.Equal(betas, tt.betas) {
				t.Errorf("%.200s %q %v\nwant %.200s %q", out, betas, err, tt.want, tt.betas)
			}
		})
	}
	if got := string(CountAnswer(1234)); got != `{"inputTokens":1234}` {
		t.Errorf("CountAnswer: %s", got)
	}
}

func TestErrorFor(t *testing.T) {
	for _, tt := range []struct {
		status int
		typ    string
		want   int
		name   string
	}{
		{529, "overloaded_error", 503, "ServiceUnavailableException"},
		{503, "spillway_busy", 503, "ServiceUnavailableException"},
		{429, "rate_limit_error", 429, "ThrottlingException"},
		{429, "billing_error", 429, "ThrottlingException"},
		{402, "billing_error", 429, "ThrottlingException"}, // by its type, whatever its status: as a stream's
		{400, "invalid_request_error", 400, "ValidationException"},
		{413, "request_too_large", 400, "ValidationException"},
		{401, "authentication_error", 403, "AccessDeniedException"},
		{403, "permission_error", 403, "AccessDeniedException"},
		{404, "not_found_error", 404, "ResourceNotFoundException"},
		{504, "timeout_error", 408, "ModelTimeoutException"},
		{502, "api_error", 500, "InternalServerException"},
		{429, "ThrottlingException", 429, "ThrottlingException"},
		{500, "ModelNotReadyException", 429, "ModelNotReadyException"},
		{504, "", 408, "ModelTimeoutException"},
		{408, "", 408, "ModelTimeoutException"},
		{418, "", 400, "ValidationException"},
		{502, "", 500, "InternalServerException"},
		{529, "", 503, "ServiceUnavailableException"},
		{200, "", 200, ""},
	} {
		if s, n := ErrorFor(tt.status, tt.typ); s != tt.want || n != tt.name {
			t.Errorf("ErrorFor(%d, %q) = %d %s, want %d %s", tt.status, tt.typ, s, n, tt.want, tt.name)
		}
	}
}

// StreamException's types are the stream's own, and what Reader makes of
// one comes back to it.
func TestStreamException(t *testing.T) {
	for typ, want := range map[string]string{
		"overloaded_error":            "serviceUnavailableException",
		"rate_limit_error":            "throttlingException",
		"invalid_request_error":       "validationException",
		"request_too_large":           "validationException",
		"timeout_error":               "modelTimeoutException",
		"api_error":                   "modelStreamErrorException",
		"":                            "internalServerException",
		"whatever":                    "internalServerException",
		"AccessDeniedException":       "internalServerException",
		"ServiceUnavailableException": "serviceUnavailableException",
	} {
		if got := StreamException(typ); got != want {
			t.Errorf("StreamException(%q) = %s, want %s", typ, got, want)
		}
	}
	for _, e := range streamExceptions {
		if got := StreamException(ErrorType(e)); got != e {
			t.Errorf("StreamException(ErrorType(%s)) = %s", e, got)
		}
	}
}

// frame is one decoded event-stream message: its message type, its event
// or exception type, and its payload (a chunk's event decoded).
type frame struct{ kind, typ, payload string }

// decodeFrames decodes b, an event stream, with aws-sdk-go-v2's Decoder:
// every message must be whole, with good CRCs.
func decodeFrames(t testing.TB, b []byte) []frame {
	t.Helper()
	d := eventstream.NewDecoder()
	r := bytes.NewReader(b)
	var fs []frame
	for r.Len() > 0 {
		m, err := d.Decode(r, nil)
		if err != nil {
			t.Fatalf("message %d: %v", len(fs), err)
		}
		f := frame{kind: header(m, ":message-type")}
		switch f.kind {
		case "event":
			f.typ = header(m, ":event-type")
			var p struct{ Bytes []byte }
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Fatalf("chunk %d: %v", len(fs), err)
			}
			f.payload = string(p.Bytes)
		case "exception":
			f.typ = header(m, ":exception-type")
			var p struct{ Message string }
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Fatalf("exception %d: %v", len(fs), err)
			}
			f.payload = p.Message
		default:
			t.Fatalf("message %d of type %q", len(fs), f.kind)
		}
		fs = append(fs, f)
	}
	return fs
}

// messagesSSE is testdata/frames/messages.sse: a Messages stream with a
// ping and an error event at its end.
func messagesSSE(t testing.TB) []byte {
	b, err := os.ReadFile("../../../testdata/frames/messages.sse")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantFrames are the frames of a Messages stream: a chunk of each event's
// data, no ping, an exception for an error event (which ends it).
func wantFrames(t testing.TB, sseText []byte) []frame {
	var fs []frame
	for _, ev := range strings.Split(strings.TrimSpace(string(sseText)), "\n\n") {
		var name, data string
		for line := range strings.SplitSeq(ev, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		switch name {
		case "ping", "":
			continue
		case "error":
			typ, msg := format.ErrorOf(500, []byte(data))
			return append(fs, frame{"exception", StreamException(typ), msg})
		}
		fs = append(fs, frame{"event", "chunk", data})
	}
	return fs
}

// streamThrough writes text through a new Answer (200, text/event-stream)
// in the writes splits says, and closes it: the recorder's answer.
func streamThrough(t testing.TB, text []byte, splits []int) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	a := NewAnswer(rec)
	a.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	a.Header().Set("Content-Length", "999")
	a.Header().Set("X-Spillway-Route", "a")
	a.WriteHeader(http.StatusOK)
	last := 0
	for _, s := range append(splits, len(text)) {
		if _, err := a.Write(text[last:s]); err != nil {
			t.Fatalf("write %d:%d: %v", last, s, err)
		}
		last = s
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	return rec
}

// A Messages stream goes as an event stream, whatever its writes: a chunk
// of each event, pings and comments dropped, the error event an
// exception. aws-sdk-go-v2's Decoder and this package's Reader both read
// it.
func TestAnswerStream(t *testing.T) {
	sim := messagesSSE(t)
	anthropic := []byte(": X-Spillway-Route: bedrock us-east-1\n\n" + sseText(answer) + "event: ping\ndata: {\"type\":\"ping\"}\n\n")
	crlf := []byte(strings.ReplaceAll(sseText(answer[:3]), "\n", "\r\n"))
	want := wantFrames(t, sim)
	if len(want) < 4 || want[len(want)-1].kind != "exception" || want[len(want)-1].typ != "serviceUnavailableException" {
		t.Fatalf("the corpus' frames: %v", want)
	}
	type run struct {
		name   string
		text   []byte
		splits []int
		want   []frame
	}
	runs := []run{
		{"whole", sim, nil, want},
		{"several per write", anthropic, []int{len(anthropic) / 3, 2 * len(anthropic) / 3}, wantFrames(t, anthropic)},
		{"CRLF", crlf, []int{5}, wantFrames(t, []byte(sseText(answer[:3])))},
	}
	var bytewise []int
	for i := 1; i < len(sim); i++ {
		runs = append(runs, run{"split at " + strconv.Itoa(i), sim, []int{i}, want})
		bytewise = append(bytewise, i)
	}
	runs = append(runs, run{"byte by byte", sim, bytewise, want})
	for _, tt := range runs {
		rec := streamThrough(t, tt.text, tt.splits)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != ContentType || rec.Header().Get("Content-Length") != "" {
			t.Fatalf("%s: %d %v", tt.name, rec.Code, rec.Header())
		}
		if rec.Header().Get("X-Spillway-Route") != "a" {
			t.Errorf("%s: the gateway's header dropped", tt.name)
		}
		if got := decodeFrames(t, rec.Body.Bytes()); !slices.Equal(got, tt.want) {
			t.Fatalf("%s: frames\n%v\nwant\n%v", tt.name, got, tt.want)
		}
		// this package's Reader reads the Messages events back as written
		r := NewReader(bytes.NewReader(rec.Body.Bytes()))
		text, _, err := readAll(r)
		r.Release()
		if err != nil {
			t.Fatalf("%s: Reader: %v", tt.name, err)
		}
		var wantText []string
		for _, f := range tt.want {
			if f.kind == "event" {
				wantText = append(wantText, f.payload)
			}
		}
		wantSSE := sseText(wantText)
		if f := tt.want[len(tt.want)-1]; f.kind == "exception" {
			wantSSE += `event: error` + "\n" + `data: {"type":"error","error":{"type":"` + ErrorType(f.typ) + `","message":"` + f.payload + `"}}` + "\n\n"
		}
		if text != wantSSE {
			t.Fatalf("%s: Reader read\n%s\nwant\n%s", tt.name, text, wantSSE)
		}
	}
}

// A Messages error event becomes the exception of its type, its message
// kept; nothing after it reaches the client.
func TestAnswerStreamError(t *testing.T) {
	for _, tt := range []struct{ typ, want string }{
		{"overloaded_error", "serviceUnavailableException"},
		{"rate_limit_error", "throttlingException"},
		{"invalid_request_error", "validationException"},
		{"api_error", "modelStreamErrorException"},
		{"timeout_error", "modelTimeoutException"},
		{"ThrottlingException", "throttlingException"},
		{"other", "internalServerException"},
	} {
		text := sseText(answer[:2]) + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"" + tt.typ + "\",\"message\":\"spillway: every model is full\"}}\n\n" + sseText(answer[2:3])
		got := decodeFrames(t, streamThrough(t, []byte(text), nil).Body.Bytes())
		want := []frame{{"event", "chunk", answer[0]}, {"event", "chunk", answer[1]}, {"exception", tt.want, "spillway: every model is full"}}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tt.typ, got, want)
		}
	}
}

// A stream cut inside an event ends with an exception that says so; one
// cut between events (comments and blank lines after the last) does not.
func TestAnswerStreamCut(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		cut        bool
	}{
		{"in data", sseText(answer[:1]) + "event: content_block_start\ndata: {\"ty", true},
		{"no blank line", sseText(answer[:1]) + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n", true},
		{"name only", sseText(answer[:1]) + "event: message_stop", true},
		{"comment after", sseText(answer[:1]) + ": keep-alive\n", false},
		{"blank lines after", sseText(answer[:1]) + "\n\n\n", false},
	} {
		got := decodeFrames(t, streamThrough(t, []byte(tt.text), nil).Body.Bytes())
		want := []frame{{"event", "chunk", answer[0]}}
		if tt.cut {
			want = append(want, frame{"exception", "internalServerException", "spillway: the answer's stream ended in the middle of an event"})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tt.name, got, want)
		}
	}
}

// An event past the bound ends the stream with an exception and an
// error from Write, never held whole; writes after it change nothing.
func TestAnswerStreamTooLarge(t *testing.T) {
	for _, split := range []int{1, 100, 5000} {
		rec := httptest.NewRecorder()
		a := NewAnswer(rec)
		a.maxEvent = 4096
		a.Header().Set("Content-Type", "text/event-stream")
		text := []byte(sseText(answer[:1]) + "event: content_block_delta\ndata: {\"text\":\"" + strings.Repeat("x", 10000) + "\"}\n\n" + sseText(answer[1:2]))
		var err error
		for i := 0; i < len(text) && err == nil; i += split {
			_, err = a.Write(text[i:min(i+split, len(text))])
			if len(a.pending) > a.maxEvent {
				t.Fatalf("held %d bytes", len(a.pending))
			}
		}
		if !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("split %d: %v, want ErrEventTooLarge", split, err)
		}
		if _, err := a.Write([]byte(sseText(answer[1:2]))); !errors.Is(err, ErrEventTooLarge) {
			t.Errorf("a write after: %v", err)
		}
		a.Close()
		got := decodeFrames(t, rec.Body.Bytes())
		want := []frame{{"event", "chunk", answer[0]}, {"exception", "internalServerException", "spillway: an event of the answer is larger than 4096 bytes; the stream ends here"}}
		if !slices.Equal(got, want) {
			t.Errorf("split %d: %v, want %v", split, got, want)
		}
	}
}

// Errors go in Bedrock's shape: the status and x-amzn-errortype of the
// Messages error, {"message": M}, the gateway's other headers kept.
func TestAnswerError(t *testing.T) {
	for _, tt := range []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		want      int
		errorType string
		message   string
	}{
		{"all full", 529, map[string]string{"Content-Type": "application/json", "Retry-After": "12", "X-Should-Retry": "false", "X-Spillway-Route": "bedrock:us-east-1 full"},
			`{"type":"error","error":{"type":"overloaded_error","message":"spillway: every deployment of claude-sonnet-5-5 is full"}}`,
			503, "ServiceUnavailableException", "spillway: every deployment of claude-sonnet-5-5 is full"},
		{"throttled", 429, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, 429, "ThrottlingException", "slow down"},
		{"bad request", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, 400, "ValidationException", "max_tokens: Field required"},
		{"text", 502, map[string]string{"Content-Type": "text/plain"}, "upstream\x00 said\n\n  no  ", 500, "InternalServerException", "upstream said no"},
		{"html", 503, map[string]string{"Content-Type": "text/html"}, "<html>" + strings.Repeat("busy ", 200) + "</html>", 503, "ServiceUnavailableException", "<html>" + strings.TrimSpace(strings.Repeat("busy ", 59)) + "…"},
		{"empty", 404, nil, "", 404, "ResourceNotFoundException", "Not Found"},
		{"secret", 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"bad key sk-ant-api03-abcdefghijklmnop"}}`, 403, "AccessDeniedException", "bad key sk-ant-[redacted]"},
		{"gzip", 500, map[string]string{"Content-Encoding": "gzip"}, "\x1f\x8b\x08garbage", 500, "InternalServerException", "Internal Server Error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			a := NewAnswer(rec)
			a.Header().Set("Content-Length", strconv.Itoa(len(tt.body)))
			for k, v := range tt.header {
				a.Header().Set(k, v)
			}
			a.WriteHeader(tt.status)
			// in two writes
			a.Write([]byte(tt.body[:len(tt.body)/2]))
			a.Write([]byte(tt.body[len(tt.body)/2:]))
			if rec.Body.Len() != 0 {
				t.Fatalf("written before Close: %q", rec.Body)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tt.want || rec.Header().Get("X-Amzn-Errortype") != tt.errorType {
				t.Errorf("%d %s, want %d %s", rec.Code, rec.Header().Get("X-Amzn-Errortype"), tt.want, tt.errorType)
			}
			var got struct{ Message string }
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Message != tt.message {
				t.Errorf("body %s (%v), want message %q", rec.Body, err, tt.message)
			}
			if rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) || rec.Header().Get("Content-Encoding") != "" {
				t.Errorf("headers %v", rec.Header())
			}
			for k, v := range tt.header {
				if k != "Content-Type" && k != "Content-Encoding" && rec.Header().Get(k) != v {
					t.Errorf("header %s %q, want %q", k, rec.Header().Get(k), v)
				}
			}
		})
	}
}

// An error body past the bound is cut: what is held stays bounded, and
// the client still gets Bedrock's shape.
func TestAnswerErrorBound(t *testing.T) {
	rec := httptest.NewRecorder()
	a := NewAnswer(rec)
	a.WriteHeader(500)
	chunk := bytes.Repeat([]byte("z"), 64<<10)
	for range 40 {
		if n, err := a.Write(chunk); n != len(chunk) || err != nil {
			t.Fatal(n, err)
		}
	}
	if a.held.Len() > format.MaxErrorBody {
		t.Fatalf("held %d bytes", a.held.Len())
	}
	a.Close()
	var got struct{ Message string }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 500 || len(got.Message) > 400 || !strings.HasPrefix(got.Message, "zzz") {
		t.Errorf("%d %.100s", rec.Code, rec.Body)
	}
}

// A whole answer (2xx, not an SSE stream) goes as it is: a Messages
// answer, and an event stream already in Bedrock's envelope (a Bedrock
// hop's answer relayed as it came).
func TestAnswerWhole(t *testing.T) {
	for _, tt := range []struct{ ct, body string }{
		{"application/json", `{"id":"msg_1","type":"message","content":[{"type":"text","text":"hi"}]}`},
		{ContentType, string(stream(t, answer))},
	} {
		rec := httptest.NewRecorder()
		a := NewAnswer(rec)
		a.Header().Set("Content-Type", tt.ct)
		a.Write([]byte(tt.body[:10])) // no WriteHeader: 200
		a.Write([]byte(tt.body[10:]))
		a.Close()
		if rec.Code != 200 || rec.Body.String() != tt.body || rec.Header().Get("Content-Type") != tt.ct || rec.Header().Get("X-Amzn-Errortype") != "" {
			t.Errorf("%s: %d %v %.100q", tt.ct, rec.Code, rec.Header(), rec.Body)
		}
	}
}

// flushRecorder counts flushes through http.ResponseController.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushRecorder) FlushError() error { f.flushes++; return nil }

// wrapped hides its writer's methods but Unwrap, as the gateway's own
// wrappers do.
type wrapped struct{ w http.ResponseWriter }

func (w wrapped) Header() http.Header         { return w.w.Header() }
func (w wrapped) Write(b []byte) (int, error) { return w.w.Write(b) }
func (w wrapped) WriteHeader(s int)           { w.w.WriteHeader(s) }
func (w wrapped) Unwrap() http.ResponseWriter { return w.w }

// Flush reaches the client's writer through http.ResponseController, with
// the Answer wrapped and wrapping; a held error goes out at a Flush.
func TestAnswerFlush(t *testing.T) {
	f := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	a := NewAnswer(wrapped{f})
	a.Header().Set("Content-Type", "text/event-stream")
	a.WriteHeader(200)
	a.Write([]byte(sseText(answer[:1])))
	rc := http.NewResponseController(wrapped{a})
	if err := rc.Flush(); err != nil || f.flushes != 1 {
		t.Fatalf("flush: %v, %d flushes", err, f.flushes)
	}
	if got := decodeFrames(t, f.Body.Bytes()); len(got) != 1 {
		t.Errorf("after a flush: %v", got)
	}

	e := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	a = NewAnswer(e)
	a.WriteHeader(529)
	a.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"full"}}`))
	if err := http.NewResponseController(a).Flush(); err != nil || e.flushes != 1 {
		t.Fatalf("flush: %v, %d flushes", err, e.flushes)
	}
	if e.Code != 503 || e.Body.String() != `{"message":"full"}` {
		t.Errorf("flushed error: %d %s", e.Code, e.Body)
	}
	a.Write([]byte("more"))
	a.Close()
	if e.Body.String() != `{"message":"full"}` {
		t.Errorf("after Close: %s", e.Body)
	}
	if rc := http.NewResponseController(NewAnswer(httptest.NewRecorder())); rc.Flush() != nil {
		t.Errorf("a recorder's flush failed")
	}
	var _ io.Writer = a
}
