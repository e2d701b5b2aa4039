package behaviour_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// answerRows: the request is answered by the right model, whole, and a
// give-up says what happened: a request's size is what it costs (an
// inline image is not its base64), a context step goes only to a larger
// window, a whole answer must be whole JSON (or be the error it carries),
// and a chain that failed without a full model is walked once and not
// called full.
func answerRows() []row {
	window := func(sizes map[string]int) func(*config.Config) {
		return func(c *config.Config) {
			for name, n := range sizes {
				m := c.Models[name]
				m.Context = n
				c.Models[name] = m
			}
		}
	}
	malformed := func(*world) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(rw, "event: response.created\ndata: {\"type\":\"response.created\"\n\n")
		})
	}
	notFull := func(res result, w *world) error {
		if n := len(w.records()); n != 6 {
			return fmt.Errorf("%d attempts, want each model twice (one retry) in one walk", n)
		}
		for _, rec := range w.records() {
			if rec.Class != string(classify.ServerError) {
				return fmt.Errorf("record %+v", rec)
			}
		}
		if bytes.Contains(res.body, []byte("at capacity")) || !bytes.Contains(res.body, []byte("none was full")) {
			return fmt.Errorf("the give-up must not call the chain full:\n%s", clip(res.body))
		}
		return nil
	}
	return []row{
		{
			name: "an inline image counts as an image, not as its base64: the requested model answers",
			call: chat("gpt-6-astra", "", false).WithBody(imageChat("gpt-6-astra", 640, 640)),
			want: want{status: 200, model: "gpt-6-astra", route: "gpt-6-astra:ok", attempts: 1,
				check: func(t *testing.T, w *world, _ result) {
					rec := w.records()[0]
					if rec.ReqBytes < 1_200_000 || rec.EstInputTokens > 2000 || rec.EstInputTokens < 546 {
						t.Fatalf("a %d-byte request estimated at %d tokens; a 640×640 image is about 546", rec.ReqBytes, rec.EstInputTokens)
					}
					if st := w.sim.Snapshot().Models["gpt-6-astra"]; st.Served != 1 {
						t.Fatalf("gpt-6-astra served %d, want the request", st.Served)
					}
				}},
		},
		{
			name: "a request larger than the requested model's window starts at the first larger one; the skip is a refused hop",
			cfg:  window(map[string]int{"gpt-6-astra": 1000, "gpt-6.1-sol": 5000}),
			call: chat("gpt-6-astra", strings.Repeat("word ", 2400), false),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:context_length > gpt-6.1-sol:ok", logRoute: "gpt-6.1-sol:ok", attempts: 1,
				check: func(t *testing.T, w *world, _ result) {
					rec := w.records()[0]
					if rec.FallbackFrom != "gpt-6-astra" || rec.EstInputTokens < 3000 || rec.EstInputTokens > 3100 {
						t.Fatalf("record %+v: it fell back from gpt-6-astra, at about 3,030 tokens", rec)
					}
					if w.received("gpt-6-astra") != 0 {
						t.Fatal("gpt-6-astra was sent a request larger than its window")
					}
				}},
		},
		{
			name: "after a context_length answer only a strictly larger window is tried; a smaller one on the way is passed over",
			cfg: func(c *config.Config) {
				// the configuration thinks gpt-6-astra takes 300k; the
				// simulator's takes 272k, and says so
				window(map[string]int{"gpt-6-astra": 300000, "gpt-6-luna": 100000})(c)
				c.Chains["codex"] = []string{"gpt-6-astra", "gpt-6-luna", "gpt-6.1-terra"}
			},
			call: chat("gpt-6-astra", strings.Repeat("word ", 230000), false),
			want: want{status: 200, model: "gpt-6.1-terra", route: "gpt-6-astra:context_length > gpt-6-luna:context_length > gpt-6.1-terra:ok",
				logRoute: "gpt-6-astra:context_length > gpt-6.1-terra:ok", attempts: 2},
		},
		{
			name: "a 20 MB request larger than every window goes to the requested model, and its answer says why",
			call: chat("gpt-6-astra", strings.Repeat("word ", 4<<20), false),
			want: want{status: 400, route: "gpt-6-astra:context_length", attempts: 1, class: classify.ContextLength,
				check: func(t *testing.T, w *world, _ result) {
					if n := w.sim.Snapshot().Models["gpt-6-astra"].Rejected["context_length"]; n != 1 {
						t.Fatalf("gpt-6-astra refused %d requests for their size, want 1", n)
					}
					if rec := w.records()[0]; rec.EstInputTokens < 5_000_000 {
						t.Fatalf("estimated %d tokens", rec.EstInputTokens)
					}
				}},
		},
		{
			name:     "a whole answer cut off at 200 is a server_error, retried, never passed on as success",
			upstream: cutOnce(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"completion_tokens":1}}`, "application/json"),
			call:     chat("gpt-6-luna", "hi", false),
			want:     want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:server_error > gpt-6-luna:ok", text: "whole", check: errorSays(0, "is not complete JSON")},
		},
		{
			name:     "embeddings with no content type: a cut answer is a server_error too",
			upstream: cutOnce(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"text-embedding-3-small"}`, ""),
			call:     embeddings("text-embedding-3-small", "hi"),
			want: want{status: 200, model: "text-embedding-3-small", route: "text-embedding-3-small:server_error > text-embedding-3-small:ok",
				body: []string{`"embedding":[0.1,0.2]`}},
		},
		{
			name:     "a 200 whose JSON is an error object is that error: capacity, so the next model",
			upstream: errorAt200("gpt-6-astra", `{"error":{"message":"Our servers are currently overloaded. Please try again later.","type":"service_unavailable_error","param":null,"code":"server_is_overloaded"}}`),
			call:     chat("gpt-6-astra", "hi", false),
			want:     want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:capacity > gpt-6.1-sol:ok", text: sim.Answer("gpt-6.1-sol", "hi", 16)},
		},
		{
			name:     "every model sends a malformed first frame: one walk, no backoff, and the give-up does not say capacity (gateway: the event form, never a 5xx Codex resends)",
			only:     "gateway",
			upstream: malformed,
			call:     responses("gpt-6-astra", "hi", true),
			want: want{status: 200, body: []string{"event: response.failed", "spillway: server_error: every model of the chain failed (server_error)"},
				check: func(t *testing.T, w *world, res result) {
					if err := notFull(res, w); err != nil {
						t.Fatal(err)
					}
				}},
		},
		{
			name:     "every model sends a malformed first frame (library): one walk, and the give-up does not say capacity",
			only:     "library",
			upstream: malformed,
			call:     responses("gpt-6-astra", "hi", true),
			want: want{status: 502, class: classify.ServerError, body: []string{"spillway: server_error: every model of the chain failed (server_error)"},
				check: func(t *testing.T, w *world, res result) {
					if err := notFull(res, w); err != nil {
						t.Fatal(err)
					}
				}},
		},
		{
			name:   "every model answers 500: one walk, no backoff and no ladder, and the give-up says server_error",
			faults: []sim.Fault{{Model: "*", Kind: "server_error", Count: -1}},
			call:   chat("gpt-6-astra", "hi", false),
			want: want{status: 502, class: classify.ServerError, route: "gpt-6-astra:server_error > gpt-6-astra:server_error > gpt-6.1-sol:server_error > gpt-6.1-sol:server_error > gpt-6-luna:server_error > gpt-6-luna:server_error",
				body: []string{"every model of the chain failed (server_error), and none was full"}},
			exec: &execWant{models: "gpt-6-astra,gpt-6.1-sol,gpt-6-luna", exit: 1, ladder: []time.Duration{time.Second, 2 * time.Second},
				route:  "gpt-6-astra:server_error > gpt-6-astra:server_error > gpt-6.1-sol:server_error > gpt-6.1-sol:server_error > gpt-6-luna:server_error > gpt-6-luna:server_error",
				stderr: "every model of the chain failed (server_error), and none was full"},
		},
		{
			name: "a model rate-limited beside models that answer 500: the chain is backed off and walked again, not given up after one walk",
			cfg:  func(c *config.Config) { c.Retry.RateLimitRetries = 0 },
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "rate_limit", Count: -1, RetryAfter: -1},
				{Model: "gpt-6.1-sol", Kind: "server_error", Count: -1}, {Model: "gpt-6-luna", Kind: "server_error", Count: -1}},
			call: chat("gpt-6-astra", "hi", false),
			want: want{class: classify.ServerError, body: []string{"(rate_limit, server_error)"},
				check: func(t *testing.T, w *world, _ result) {
					if n := w.received("gpt-6-astra"); n < 2 {
						t.Fatalf("gpt-6-astra was asked %d times: the chain was not walked again", n)
					}
				}},
		},
		{
			name: "no model known to fit: the request goes to none smaller than the requested model's window",
			cfg: func(c *config.Config) {
				window(map[string]int{"gpt-6-astra": 500000, "gpt-6.1-sol": 100000, "gpt-6-luna": 100000})(c)
				c.Retry.Budget = config.Duration(time.Second)
			},
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1}},
			call:   chat("gpt-6-astra", strings.Repeat("word ", 480000), false),
			want: want{class: classify.Capacity, check: func(t *testing.T, w *world, _ result) {
				if w.received("gpt-6.1-sol")+w.received("gpt-6-luna") != 0 {
					t.Fatal("a model with a window smaller than the requested one's was sent the request")
				}
			}},
		},
		{
			name:   "a streaming Responses request given up on a rate limit gets the event form too",
			only:   "gateway",
			cfg:    func(c *config.Config) { c.Retry.RateLimitRetries, c.Retry.Budget = 0, config.Duration(1) },
			faults: []sim.Fault{{Model: "*", Kind: "rate_limit", Count: -1, RetryAfter: 30}},
			call:   responses("gpt-6-astra", "hi", true),
			want:   want{status: 200, body: []string{"event: response.failed", `"code":"invalid_prompt"`, "spillway: rate_limit"}},
		},
		{
			name: "a streaming Responses request the upstream failed in its stream for its size gets the upstream's own events, for Codex to compact",
			only: "gateway",
			upstream: func(*world) http.Handler {
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(rw, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
					fmt.Fprint(rw, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n")
				})
			},
			call: responses("gpt-6-luna", "hi", true),
			want: want{status: 200, body: []string{`"code":"context_length_exceeded"`}, notBody: []string{"invalid_prompt"}},
		},
		{
			name:   "a streaming Responses request refused by the upstream (auth) gets the upstream's own 4xx, for the client to act on",
			only:   "gateway",
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "auth", Count: -1}},
			call:   responses("gpt-6-astra", "hi", true),
			want:   want{status: 401, route: "gpt-6-astra:auth", class: classify.Auth},
		},
	}
}

// imageChat is a Chat Completions request for model with a question and
// one inline PNG of w × h pixels of noise (so that it does not compress:
// about 3·w·h bytes, and a third more as base64).
func imageChat(model string, w, h int) string {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rnd.UintN(256))
	}
	for x := range w {
		img.Set(x, 0, color.Black)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	body, _ := json.Marshal(map[string]any{"model": model, "stream": false, "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "what does this screenshot show?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())}},
	}}}})
	return string(body)
}

// embeddings is an OpenAI embeddings request.
func embeddings(model, input string) call {
	c := chat(model, "", false)
	c.Path = "/v1/embeddings"
	return c.WithBody(fmt.Sprintf(`{"model":%q,"input":%q}`, model, input))
}

// cutOnce is an upstream whose first whole answer is body cut in half (a
// 200 that ends early, with no error); then it answers body. contentType
// "" sends none at all.
func cutOnce(body, contentType string) func(*world) http.Handler {
	return func(*world) http.Handler {
		first := firstTime()
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			cut := first()
			if contentType == "" {
				rw.Header()["Content-Type"] = nil // no sniffing either
			} else {
				rw.Header().Set("Content-Type", contentType)
			}
			if cut {
				io.WriteString(rw, body[:len(body)/2])
				return
			}
			io.WriteString(rw, body)
		})
	}
}

// errorAt200 is the simulator, except that a request for model gets a 200
// whose JSON is errBody.
func errorAt200(model, errBody string) func(*world) http.Handler {
	return func(w *world) http.Handler {
		h := w.sim.Handler()
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var m struct{ Model string }
			_ = json.Unmarshal(b, &m)
			if m.Model == model {
				rw.Header().Set("Content-Type", "application/json")
				io.WriteString(rw, errBody)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			h.ServeHTTP(rw, r)
		})
	}
}
