package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spillway/spillway/config"
)

// signInUpstream points both sign-in providers at a server that counts
// what reaches it.
func signInUpstream(t *testing.T, reached *atomic.Int64) func(*config.Config) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(up.Close)
	return func(c *config.Config) {
		for _, name := range []string{config.ChatGPT, config.CodeAssist} {
			p := c.Providers[name]
			p.BaseURL = up.URL
			if name == config.ChatGPT {
				p.BaseURL += "/backend-api/codex"
			}
			c.Providers[name] = p
		}
	}
}

// rawRequest sends a request line as written (no client cleans the path)
// and reads the answer.
func rawRequest(t *testing.T, gatewayURL, method, target string, body []byte) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(gatewayURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer plan-token-0123456789\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", method, target, len(body))
	conn.Write(body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %q: %v", method, target, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// A sign-in's pass-through path with a backslash, a semicolon or NUL, raw
// or percent-encoded (either case of the hex, or encoded twice), is
// refused with 400 in the route's own error shape, and never sent.
func TestSignInPathsThatMeanSomethingElseAreRefused(t *testing.T) {
	var reached atomic.Int64
	r := newRig(t, nil, signInUpstream(t, &reached))
	for _, tc := range []struct {
		target string
		gemini bool // Code Assist's route answers in Gemini's shape
	}{
		{"/backend-api/codex/models;jsessionid=1", false},
		{`/backend-api/codex/wham\usage`, false},
		{"/backend-api/codex/wham%5cusage", false},
		{"/backend-api/codex/wham%5Cusage", false},
		{"/backend-api/codex/models%3bx", false},
		{"/backend-api/codex/models%3Bx", false},
		{"/backend-api/codex/models%00.json", false},
		{"/backend-api/codex/wham%255cusage", false},
		{"/v1internal:loadCodeAssist;x", true},
		{"/v1internal:loadCodeAssist%3B", true},
		{`/v1internal:countTokens\x`, true},
		{"/v1internal:countTokens%5c..", true},
		{"/v1internal:onboardUser%00", true},
	} {
		resp, body := rawRequest(t, r.url, http.MethodPost, tc.target, []byte(`{}`))
		var shape struct {
			Error struct {
				Code    any    `json:"code"`
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &shape) != nil || shape.Error.Message == "" {
			t.Fatalf("%s: %d %s, want 400 in the route's shape", tc.target, resp.StatusCode, body)
		}
		if gemini := shape.Error.Status == "INVALID_ARGUMENT"; gemini != tc.gemini {
			t.Fatalf("%s: %s is not the route's shape (Gemini's: %v)", tc.target, body, tc.gemini)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("%d refused requests reached the sign-in's host", n)
	}
	// what is fine still goes
	if resp, body := rawRequest(t, r.url, http.MethodGet, "/backend-api/codex/models?client_version=0.169.0", nil); resp.StatusCode != 200 || reached.Load() != 1 {
		t.Fatalf("a plain path: %d %s, reached %d", resp.StatusCode, body, reached.Load())
	}
	// NUL raw in the request line: net/http refuses it before any route
	if resp, _ := rawRequest(t, r.url, http.MethodGet, "/backend-api/codex/a\x00b", nil); resp.StatusCode != http.StatusBadRequest || reached.Load() != 1 {
		t.Fatalf("a raw NUL: %d, reached %d", resp.StatusCode, reached.Load())
	}
}

// countTokens over gateway.max_body_mb answers 413, like every other
// route: Gemini's (under /v1beta/ and /v1/) and Code Assist's, with a
// length stated or not, and nothing is sent.
func TestCountTokensOverTheBodyLimitIs413(t *testing.T) {
	var reached atomic.Int64
	mut := signInUpstream(t, &reached)
	r := newRig(t, nil, func(c *config.Config) { mut(c); c.Gateway.MaxBodyMB = 1 })
	big := append(append([]byte(`{"contents":[{"role":"user","parts":[{"text":"`), bytes.Repeat([]byte("a"), 1<<20)...), `"}]}]}`...)
	for _, path := range []string{"/v1beta/models/gemini-3-flash:countTokens", "/v1/models/gemini-3-flash:countTokens", "/v1internal:countTokens"} {
		for _, chunked := range []bool{false, true} {
			var rd io.Reader = bytes.NewReader(big)
			if chunked {
				rd = io.MultiReader(rd) // no length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, r.url+path, rd)
			req.Header.Set("X-Goog-Api-Key", "AIza-gemini-test-0123")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "gateway.max_body_mb") || !strings.Contains(string(body), `"error"`) {
				t.Fatalf("%s (chunked %v): %d %s", path, chunked, resp.StatusCode, body)
			}
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("%d bodies over the limit reached the sign-in's host", n)
	}
	if st := r.sim.Snapshot().Models["gemini-3-flash"]; st != nil && st.Received > 0 {
		t.Fatalf("a body over the limit reached the provider")
	}
}
