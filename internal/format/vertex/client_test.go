package vertex

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// Claude Code's Vertex AI requests, as recorded, read as Messages
// requests: model and stream set (last), anthropic_version gone, every
// other member as it was, in order.
func TestClientRequestRecorded(t *testing.T) {
	for _, file := range []string{"claude-2.1.328-vertex-first", "claude-2.1.328-vertex-tool-result"} {
		t.Run(file, func(t *testing.T) {
			body := clienttest.RecordedBody(t, file)
			out, err := ClientRequest(body, "claude-sonnet-5-5", true)
			if err != nil {
				t.Fatal(err)
			}
			var want []clienttest.Member
			sawVersion := false
			for _, m := range clienttest.Members(t, body) {
				switch m.Name {
				case "anthropic_version":
					sawVersion = m.Value == `"vertex-2023-10-16"`
				case "stream", "model":
				default:
					want = append(want, m)
				}
			}
			if !sawVersion || len(want) < 4 {
				t.Fatalf("the recording: version %v, %d members", sawVersion, len(want))
			}
			want = append(want, clienttest.Member{Name: "model", Value: `"claude-sonnet-5-5"`}, clienttest.Member{Name: "stream", Value: "true"})
			if got := clienttest.Members(t, out); !slices.Equal(got, want) {
				t.Errorf("members %v, want %v", got, want)
			}
		})
	}
}

func TestClientRequest(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		stream     bool
		want, err  string
	}{
		{"replaced", `{"model":"x","stream":false,"max_tokens":5,"anthropic_version":"vertex-2023-10-16"}`, true, `{"max_tokens":5,"model":"m","stream":true}`, ""},
		{"rawPredict", `{"max_tokens":5}`, false, `{"max_tokens":5,"model":"m","stream":false}`, ""},
		{"kept bytes", `{ "a" : 1.50e+1 , "b":"\u00e9" }`, true, `{"a":1.50e+1,"b":"\u00e9","model":"m","stream":true}`, ""},
		{"array", `[]`, true, "", "not a JSON object"},
		{"cut", `{"a":`, true, "", "ends in the middle"},
	} {
		out, err := ClientRequest([]byte(tt.body), "m", tt.stream)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, wire.ErrNotObject) {
				t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || string(out) != tt.want {
			t.Errorf("%s: %s %v, want %s", tt.name, out, err, tt.want)
		}
	}
}

func TestClientCount(t *testing.T) {
	out, err := ClientCount([]byte(`{"anthropic_version":"vertex-2023-10-16","model":"claude-sonnet-5-5@20260101","messages":[{"role":"user","content":"hi"}]}`), "claude-sonnet-5-5")
	if want := `{"messages":[{"role":"user","content":"hi"}],"model":"claude-sonnet-5-5"}`; err != nil || string(out) != want {
		t.Errorf("%s %v, want %s", out, err, want)
	}
	if _, err := ClientCount([]byte(`"x"`), "m"); !errors.Is(err, wire.ErrNotObject) {
		t.Errorf("a string: %v", err)
	}
}

func TestErrorFor(t *testing.T) {
	for _, tt := range []struct {
		status int
		typ    string
		want   int
		name   string
	}{
		{529, "overloaded_error", 429, "RESOURCE_EXHAUSTED"},
		{429, "rate_limit_error", 429, "RESOURCE_EXHAUSTED"},
		{402, "billing_error", 429, "RESOURCE_EXHAUSTED"},
		{400, "invalid_request_error", 400, "INVALID_ARGUMENT"},
		{413, "request_too_large", 400, "INVALID_ARGUMENT"},
		{401, "authentication_error", 401, "UNAUTHENTICATED"},
		{403, "permission_error", 403, "PERMISSION_DENIED"},
		{404, "not_found_error", 404, "NOT_FOUND"},
		{504, "timeout_error", 504, "DEADLINE_EXCEEDED"},
		{502, "api_error", 500, "INTERNAL"},
		{429, "billing_error", 429, "RESOURCE_EXHAUSTED"},
		{503, "spillway_busy", 503, "UNAVAILABLE"},
		{529, "", 429, "RESOURCE_EXHAUSTED"},
		{408, "", 504, "DEADLINE_EXCEEDED"},
		{409, "", 409, "ABORTED"},
		{418, "", 400, "INVALID_ARGUMENT"},
		{502, "", 500, "INTERNAL"},
		{201, "", 201, ""},
	} {
		if s, n := ErrorFor(tt.status, tt.typ); s != tt.want || n != tt.name {
			t.Errorf("ErrorFor(%d, %q) = %d %s, want %d %s", tt.status, tt.typ, s, n, tt.want, tt.name)
		}
	}
}

// A stream and a whole answer go byte for byte, headers and all.
func TestAnswerPasses(t *testing.T) {
	text, err := os.ReadFile("../../../testdata/frames/messages.sse")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, ct string
		body     []byte
	}{
		{"stream", "text/event-stream", text},
		{"whole", "application/json", []byte(`{"id":"msg_1","type":"message","content":[]}`)},
	} {
		rec := httptest.NewRecorder()
		a := NewAnswer(rec)
		a.Header().Set("Content-Type", tt.ct)
		a.Header().Set("X-Spillway-Route", "r")
		a.WriteHeader(200)
		for i := 0; i < len(tt.body); i += 7 {
			if _, err := a.Write(tt.body[i:min(i+7, len(tt.body))]); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), tt.body) || rec.Header().Get("Content-Type") != tt.ct || rec.Header().Get("X-Spillway-Route") != "r" {
			t.Errorf("%s: %d %v %q", tt.name, rec.Code, rec.Header(), rec.Body)
		}
	}
}

// Errors go in Google's shape, the gateway's other headers kept; the
// all-full 529 is 429 RESOURCE_EXHAUSTED.
func TestAnswerError(t *testing.T) {
	for _, tt := range []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    int
		gstatus string
		message string
	}{
		{"all full", 529, map[string]string{"Content-Type": "application/json", "Retry-After": "12", "X-Should-Retry": "false", "X-Spillway-Route": "vertex full"},
			`{"type":"error","error":{"type":"overloaded_error","message":"spillway: every deployment of claude-sonnet-5-5 is full"}}`,
			429, "RESOURCE_EXHAUSTED", "spillway: every deployment of claude-sonnet-5-5 is full"},
		{"bad request", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, 400, "INVALID_ARGUMENT", "max_tokens: Field required"},
		{"text", 502, map[string]string{"Content-Type": "text/plain"}, "bad\tgateway\n", 500, "INTERNAL", "bad gateway"},
		{"empty", 404, nil, "", 404, "NOT_FOUND", "Not Found"},
		{"gzip", 503, map[string]string{"Content-Encoding": "gzip"}, "\x1f\x8b", 503, "UNAVAILABLE", "Service Unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			a := NewAnswer(rec)
			a.Header().Set("Content-Length", strconv.Itoa(len(tt.body)))
			for k, v := range tt.header {
				a.Header().Set(k, v)
			}
			a.WriteHeader(tt.status)
			a.Write([]byte(tt.body[:len(tt.body)/2]))
			a.Write([]byte(tt.body[len(tt.body)/2:]))
			if rec.Body.Len() != 0 {
				t.Fatalf("written before Close: %q", rec.Body)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Error struct {
					Code    int
					Message string
					Status  string
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != tt.want || got.Error.Code != tt.want || got.Error.Status != tt.gstatus || got.Error.Message != tt.message {
				t.Errorf("%d %s (%v), want %d %s %q", rec.Code, rec.Body, err, tt.want, tt.gstatus, tt.message)
			}
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") || rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) || rec.Header().Get("Content-Encoding") != "" {
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

// An error body past the bound is cut; a Flush sends the held error, and
// reaches the client's writer through http.ResponseController.
func TestAnswerBoundAndFlush(t *testing.T) {
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
	if err := http.NewResponseController(a).Flush(); err != nil || !rec.Flushed {
		t.Fatalf("flush: %v %v", err, rec.Flushed)
	}
	n := rec.Body.Len()
	if rec.Code != 500 || n == 0 || n > 600 {
		t.Errorf("%d %d bytes", rec.Code, n)
	}
	a.Write([]byte("more"))
	a.Close()
	if rec.Body.Len() != n {
		t.Errorf("written after the error: %q", rec.Body)
	}
}
