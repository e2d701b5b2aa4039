package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/gateway"
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
		// another vendor's model: the Gemini key and body go nowhere
		for _, prefix := range []string{"/v1beta", "/v1"} {
			req, _ := http.NewRequest(http.MethodPost, r.url+prefix+"/models/gpt-6-luna:countTokens", strings.NewReader(body))
			req.Header.Set("x-goog-api-key", "AIza-gemini-test-0123456789")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			want := `{"error":{"code":400,"message":"spillway: model \"gpt-6-luna\" is openai's, not Gemini's: countTokens counts a Gemini model's tokens; nothing was sent upstream","status":"INVALID_ARGUMENT"}}`
			if resp.StatusCode != 400 || strings.TrimSpace(string(b)) != want {
				t.Fatalf("%s countTokens of an OpenAI model: %d %s\nwant 400 %s", prefix, resp.StatusCode, b, want)
			}
		}
		if st := r.sim.Snapshot().Models["gpt-6-luna"]; st != nil && st.Received > 0 {
			t.Fatalf("gpt-6-luna's provider got %d requests", st.Received)
		}
	})
}

// recordingTransport answers every upstream request with a Gemini answer
// and keeps the URL it was sent to.
type recordingTransport struct {
	mu   sync.Mutex
	urls []*url.URL
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.urls = append(rt.urls, req.URL)
	rt.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`))}, nil
}

// FuzzGeminiPath: whatever a client puts in the model segment of a Gemini
// path, the gateway either refuses it (400, nothing sent) or sends it to
// the provider's host at /v1beta/models/<escaped model>:<method>, with no
// query or fragment of the client's making.
func FuzzGeminiPath(f *testing.F) {
	for _, seg := range []string{"gemini-3-pro", "..%2F..%2Fanything%23", "x%3Fkey%3Dy", "a%2Fb", "%2e%2e", "gemini-3-pro%00", "g:h", "%23", "-x", strings.Repeat("a", 130)} {
		f.Add(seg, "generateContent")
	}
	f.Add("gemini-3-pro", "streamGenerateContent")
	f.Add("gemini-3-pro", "countTokens")
	f.Fuzz(func(t *testing.T, seg, method string) {
		cfg := config.Default()
		p := cfg.Providers["gemini"]
		p.BaseURL = "https://gemini.example/base"
		cfg.Providers["gemini"] = p
		rt := &recordingTransport{}
		gw, err := gateway.New(gateway.Options{Config: cfg, Transport: rt})
		if err != nil {
			t.Fatal(err)
		}
		defer gw.Close()
		target := "/v1beta/models/" + seg + ":" + method
		if _, err := url.ParseRequestURI(target); err != nil || strings.ContainsAny(target, " \t\r\n") {
			return // not a request line a client could send
		}
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8787"+target, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
		if err != nil {
			return
		}
		req.Header.Set("X-Goog-Api-Key", "AIza-fuzz-0123456789")
		rec := httptest.NewRecorder()
		gw.Handler().ServeHTTP(rec, req)
		rt.mu.Lock()
		defer rt.mu.Unlock()
		for _, u := range rt.urls {
			model, m, ok := strings.Cut(strings.TrimPrefix(u.EscapedPath(), "/base/v1beta/models/"), ":")
			if u.Host != "gemini.example" || !strings.HasPrefix(u.EscapedPath(), "/base/v1beta/models/") || !ok || m != method ||
				u.Fragment != "" || u.RawFragment != "" || strings.Contains(model, "/") || u.RawQuery != "" && u.RawQuery != req.URL.RawQuery {
				t.Fatalf("%s was sent to %s", target, u)
			}
			if dec, _ := url.PathUnescape(model); config.CheckPathModel(dec) != nil {
				t.Fatalf("%s: the model %q went upstream", target, dec)
			}
		}
	})
}
