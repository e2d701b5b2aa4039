package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/sim"
)

// Gemini through the gateway: the model in the path, the key as Gemini
// sends it (x-goog-api-key or ?key=), gemini-3-pro full: a whole answer and
// an SSE stream both come from gemini-3-flash, and the routes say so.
func TestGeminiThroughGateway(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"Reply with pong"}]}]}`
	for _, c := range []struct {
		name, path string
		header     http.Header
		stream     bool
	}{
		{"generateContent, key in the header", "/v1beta/models/gemini-3-pro:generateContent", http.Header{"X-Goog-Api-Key": {"AIza-gemini-test-0123"}}, false},
		{"streamGenerateContent, key in the query", "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse&key=AIza-gemini-test-0123", http.Header{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, nil)
			r.fault(t, sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
			req, _ := http.NewRequest(http.MethodPost, r.url+c.path, strings.NewReader(body))
			req.Header = c.header
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), sim.Tokens(sim.Answer("gemini-3-flash", "Reply with pong", 16))[0]) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			route, want := resp.Header.Get("X-Spillway-Route"), "gemini-3-pro:capacity > gemini-3-flash:ok"
			if c.stream {
				// Gemini's SDK fails on SSE comments: no last word, the
				// final route is the event log's
				if route != "gemini-3-pro:capacity > gemini-3-flash:streaming" || strings.Contains(string(b), ": X-Spillway") {
					t.Fatalf("route %q\n%s", route, b)
				}
			} else if route != want {
				t.Fatalf("route %q", route)
			}
			if got := strings.Join(routeOf(r), " > "); got != want {
				t.Fatalf("event log route %q", got)
			}
			r.mu.Lock()
			logs := r.logs.String()
			r.mu.Unlock()
			if strings.Contains(logs, "AIza-gemini-test") {
				t.Fatal("the key reached the log")
			}
		})
	}
	t.Run("models and countTokens", func(t *testing.T) {
		r := newRig(t, nil, nil)
		resp, err := http.Get(r.url + "/v1beta/models")
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Models []struct{ Name string } `json:"models"`
		}
		json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list.Models) == 0 || list.Models[0].Name != "models/gemini-3-flash" {
			t.Fatalf("models %+v", list)
		}
		resp, err = http.Post(r.url+"/v1beta/models/gemini-3-pro:countTokens", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"totalTokens":`) {
			t.Fatalf("countTokens: %d %s", resp.StatusCode, b)
		}
	})
}
