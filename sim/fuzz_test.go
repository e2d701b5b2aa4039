package sim_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spillway/spillway/sim"
)

// FuzzHandlers sends arbitrary bodies to every endpoint: the simulator must
// answer like a provider (a status it documents), never crash.
func FuzzHandlers(f *testing.F) {
	srv, err := sim.New(sim.Options{TokenRate: 0})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	paths := []string{"/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/messages?beta=true",
		"/v1beta/models/gemini-3-pro:generateContent", "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse",
		"/v1beta/models/x", "/_sim/faults"}
	f.Add(uint8(0), `{"model":"gpt-6-luna","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	f.Add(uint8(1), `{"model":"gpt-6-luna","input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`)
	f.Add(uint8(2), `{"model":"gpt-6-luna","input":[null,1,"x"],"dimensions":1e99}`)
	f.Add(uint8(3), `{"model":"claude-haiku-5-5","messages":[{"role":"user","content":[null,{"text":[]}]}],"stream":"yes"}`)
	f.Add(uint8(4), `{"contents":[{"parts":"x"}]}`)
	f.Add(uint8(7), `{"fault":"capacity","count":-5}`)
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		path := paths[int(which)%len(paths)]
		if path == "/_sim/faults" && strings.Contains(body, "stall") {
			return // a stall waits for the client by design
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("x-api-key", "k")
		req.Header.Set("x-goog-api-key", "k")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 201, 400, 401, 404, 413, 429, 500, 503, 529:
		default:
			t.Fatalf("%s %q: status %d", path, body, rec.Code)
		}
		srv.ClearFaults("")
	})
}

func TestFuzzSeedsAnswerSensibly(t *testing.T) {
	srv, _ := sim.New(sim.Options{TokenRate: 0})
	req := httptest.NewRequest("POST", "/v1beta/models/nocolon", strings.NewReader("{}"))
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "generateContent") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}
