package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/sim"
)

// recorded is a real client's request from testdata/clients.
type recorded struct {
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func loadRecording(t *testing.T, name string) recorded {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "clients", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// send is the recorded request with body, to the rig's gateway, as the
// client sent it (its headers but its compression): the answer, read.
func (rec recorded) send(t *testing.T, r *rig, body []byte) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.url+rec.Path, strings.NewReader(string(body)))
	for k, v := range rec.Headers {
		if !strings.EqualFold(k, "accept-encoding") {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// ownKeys are the providers' own keys a cross-vendor step is sent with.
var ownKeys = map[string]string{"openai": "sk-own-openai-0123456789", "anthropic": "sk-ant-own-0123456789", "gemini": "AIza-own-0123456789"}

// spillTo makes every chain's overflow the one-model chain of target, and
// gives each provider a key of its own.
func spillTo(target string) func(*config.Config) {
	return func(c *config.Config) {
		for name, k := range ownKeys {
			p := c.Providers[name]
			p.APIKey = config.Secret{Value: k}
			c.Providers[name] = p
		}
		c.Chains["spill"] = []string{target}
		if c.ChainRules == nil {
			c.ChainRules = map[string]config.ChainRules{}
		}
		for _, ch := range []string{"codex", "claude", "gemini"} {
			c.ChainRules[ch] = config.ChainRules{Overflow: "spill"}
		}
	}
}

// events is the SSE stream's events, each checked to be JSON (or [DONE]).
func sseEvents(t *testing.T, body []byte) []sse.Event {
	t.Helper()
	rd := sse.NewReader(strings.NewReader(string(body)))
	var out []sse.Event
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		if ev.Comment {
			continue
		}
		if string(ev.Data) != "[DONE]" && !json.Valid(ev.Data) {
			t.Fatalf("event %q is not JSON: %s", ev.Name, ev.Data)
		}
		ev.Data = append([]byte(nil), ev.Data...)
		out = append(out, ev)
	}
}

// The real agents' recorded requests, every model of their own vendor
// full, are answered by another vendor's model through the chain's
// overflow: the shell call the script asks for comes back in the client's
// own shape (Codex's freeform exec as a custom_tool_call), the tool's
// result goes over and the answer quotes it; the provider gets its own key,
// never the client's.
func TestAgentsSpillAcrossVendors(t *testing.T) {
	cases := []struct {
		recording, full, target string
		want                    []string // in the client's stream
	}{
		{"codex-0.169-first", "gpt-", "claude-sonnet-5-5", []string{`"type":"custom_tool_call"`, `"name":"exec"`, `tools.exec_command`, `response.completed`}},
		{"codex-0.169-tool-result", "gpt-", "claude-sonnet-5-5", []string{`The command printed`, `spill-42`, `response.completed`}},
		{"codex-0.169-first", "gpt-", "gemini-3-flash", []string{`"type":"custom_tool_call"`, `tools.exec_command`}},
		{"claude-2.1.328-first", "claude-", "gpt-6.1-sol", []string{`"type":"tool_use"`, `"name":"Bash"`, `input_json_delta`, `"stop_reason":"tool_use"`, `message_stop`}},
		{"claude-2.1.328-tool-result", "claude-", "gpt-6.1-sol", []string{`The command printed`, `"stop_reason":"end_turn"`}},
		{"claude-2.1.328-first", "claude-", "gemini-3-flash", []string{`"name":"Bash"`, `"stop_reason":"tool_use"`}},
		{"gemini-0.61-first", "gemini-", "claude-sonnet-5-5", []string{`"functionCall"`, `"name":"run_shell_command"`, `"finishReason":"STOP"`}},
		{"gemini-0.61-tool-result", "gemini-", "claude-sonnet-5-5", []string{`The command printed`}},
		{"gemini-0.61-first", "gemini-", "gpt-6.1-sol", []string{`"name":"run_shell_command"`}},
	}
	for _, tc := range cases {
		t.Run(tc.recording+"→"+tc.target, func(t *testing.T) {
			r := newRig(t, nil, spillTo(tc.target))
			fullVendor(t, r, tc.full)
			if err := r.sim.AddScript(simtest.ShellScript()); err != nil {
				t.Fatal(err)
			}
			rec := loadRecording(t, tc.recording)
			resp, body := rec.send(t, r, rec.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("X-Spillway-Model"); got != tc.target {
				t.Errorf("X-Spillway-Model = %q, want %q", got, tc.target)
			}
			sseEvents(t, []byte(body))
			text := behaviour.Text([]byte(body))
			for _, w := range tc.want {
				if !strings.Contains(body, w) && !strings.Contains(text, w) {
					t.Errorf("the answer has no %s:\n%s", w, clipText(body))
				}
			}
			if strings.Contains(body, `"thinking"`) || strings.Contains(body, "signature") || strings.Contains(body, `"type":"reasoning"`) {
				t.Errorf("another vendor's reasoning reached the client:\n%s", clipText(body))
			}
			st := r.servedStats(t, tc.target, 1)
			if st == nil || st.Served != 1 {
				t.Fatalf("%s served %+v, want 1", tc.target, st)
			}
			targetVendor := map[string]string{"claude-sonnet-5-5": "anthropic", "gpt-6.1-sol": "openai", "gemini-3-flash": "gemini"}[tc.target]
			want := sim.Fingerprint(ownKeys[targetVendor], "")
			for fp := range st.Credentials {
				if fp != want {
					t.Errorf("%s got credentials %s, not its provider's own key (%s)", tc.target, fp, want)
				}
			}
			var translated bool
			for _, rec := range r.records() {
				if rec.Model == tc.target && rec.Class == "ok" {
					translated = rec.TranslatedFrom != ""
					if !strings.HasSuffix(rec.Route, tc.target+"["+targetVendor+"]:ok") {
						t.Errorf("route %q does not end at %s", rec.Route, tc.target)
					}
				}
			}
			if !translated {
				t.Errorf("the answer's record does not say it was translated: %+v", r.records())
			}
		})
	}
}

func clipText(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// A cross-vendor step the request cannot take is passed over, its reason
// in the route, and nothing reaches the other vendor: no key of the
// target's own (the caller's never goes there), a request only OpenAI can
// serve, embeddings.
func TestCrossVendorStepsPassedOver(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*config.Config)
		c    call
		hop  string
	}{
		{"no key of its own", func(c *config.Config) {
			spillTo("claude-sonnet-5-5")(c)
			p := c.Providers["anthropic"]
			p.APIKey = config.Secret{}
			c.Providers["anthropic"] = p
		}, chat("gpt-6.1-sol", "hi", false), "claude-sonnet-5-5[anthropic]:no_key"},
		{"a stored response to continue", spillTo("claude-sonnet-5-5"),
			responses("gpt-6.1-sol", "hi", false).WithBody(`{"model":"gpt-6.1-sol","input":"hi","previous_response_id":"resp_1"}`), "claude-sonnet-5-5[anthropic]:untranslatable"},
		{"a hosted tool", spillTo("claude-sonnet-5-5"),
			responses("gpt-6.1-sol", "hi", false).WithBody(`{"model":"gpt-6.1-sol","input":"hi","tools":[{"type":"web_search"}]}`), "claude-sonnet-5-5[anthropic]:untranslatable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil, func(c *config.Config) {
				tc.mut(c)
				c.Retry.Budget = 0
			})
			fullVendor(t, r, "gpt-")
			resp, body := r.do(t, tc.c)
			if resp.StatusCode == 200 {
				t.Fatalf("answered: %s", body)
			}
			route := resp.Header.Get("X-Spillway-Route")
			if !strings.Contains(route, tc.hop) {
				t.Fatalf("route %q lacks %s", route, tc.hop)
			}
			if st := r.sim.Snapshot().Models["claude-sonnet-5-5"]; st != nil && st.Received > 0 {
				t.Fatalf("the other vendor got the request: %+v", st)
			}
		})
	}
}

// Another vendor's errors reach the client in its own format: a refusal
// no retry fixes as the client's error body (status, shape), a break
// after output as the client's own error event.
func TestCrossVendorErrorsInTheClientsWords(t *testing.T) {
	t.Run("a context too long for every model left", func(t *testing.T) {
		r := newRig(t, nil, spillTo("claude-sonnet-5-5"))
		fullVendor(t, r, "gpt-")
		r.fault(t, sim.Fault{Model: "claude-sonnet-5-5", Kind: "context_length", Count: -1})
		resp, body := r.do(t, chat("gpt-6.1-sol", "hi", false))
		var e struct {
			Error struct{ Message, Type, Code string } `json:"error"`
		}
		if resp.StatusCode != 400 || json.Unmarshal(body, &e) != nil || e.Error.Code != "context_length_exceeded" || !strings.Contains(e.Error.Message, "claude-sonnet-5-5") || strings.Contains(string(body), `"type":"error"`) {
			t.Fatalf("status %d: %s (want OpenAI's own context_length_exceeded, which Codex compacts on, with Anthropic's message)", resp.StatusCode, body)
		}
	})
	t.Run("a request the other vendor refuses is passed over", func(t *testing.T) {
		r := newRig(t, nil, func(c *config.Config) {
			spillTo("claude-sonnet-5-5")(c)
			c.Retry.Budget = 0
		})
		fullVendor(t, r, "gpt-")
		r.fault(t, sim.Fault{Model: "claude-sonnet-5-5", Kind: "bad_request", Count: -1, Message: "messages.0: something the model refuses"})
		resp, body := r.do(t, chat("gpt-6.1-sol", "hi", false))
		if route := resp.Header.Get("X-Spillway-Route"); resp.StatusCode != 503 || !strings.Contains(route, "claude-sonnet-5-5[anthropic]:untranslatable") {
			t.Fatalf("status %d route %q: %s (the translation's refusal is not the client's bad request)", resp.StatusCode, route, body)
		}
	})
	t.Run("an overload after output", func(t *testing.T) {
		r := newRig(t, nil, spillTo("claude-sonnet-5-5"))
		fullVendor(t, r, "gpt-")
		r.fault(t, sim.Fault{Model: "claude-sonnet-5-5", Kind: "midstream", Count: -1})
		resp, body := r.do(t, responses("gpt-6.1-sol", "hi", true))
		evs := sseEvents(t, body)
		last := evs[len(evs)-1]
		if resp.StatusCode != 200 || last.Name != "response.failed" || !strings.Contains(string(last.Data), "server_is_overloaded") {
			t.Fatalf("the stream ends %q %s, want Responses' own response.failed:\n%s", last.Name, last.Data, body)
		}
		for _, e := range evs {
			if e.Name == "error" || e.Name == "message_stop" {
				t.Fatalf("Anthropic's own event reached a Responses client: %s", body)
			}
		}
	})
}

// A Chat provider that ends its stream at its finish_reason, without
// [DONE], answering a Messages client: the answer is whole (the client's
// own final events), inside a hold window or after it, and nothing hangs.
func TestTranslatedStreamWithoutItsFinalEvent(t *testing.T) {
	chunks := []string{
		`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"content":"Hello"}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"content":" there"}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	for name, hold := range map[string]config.Hold{"no hold window": {}, "a window the answer ends in": {Tokens: 1000, Duration: config.Duration(10 * time.Second)},
		"a window that ends first (events then come through its pump)": {Tokens: 1, Duration: config.Duration(10 * time.Second)}} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, nil, func(c *config.Config) {
				spillTo("gpt-6.1-sol")(c)
				p := c.Providers["openai"]
				p.BaseURL = up.URL + "/v1"
				c.Providers["openai"] = p
				m := c.Models["gpt-6.1-sol"]
				m.Hold = hold
				c.Models["gpt-6.1-sol"] = m
			})
			fullVendor(t, r, "claude-")
			resp, body := r.do(t, messages("claude-sonnet-5-5", "hi", true))
			evs := sseEvents(t, body)
			if resp.StatusCode != 200 || len(evs) == 0 || evs[len(evs)-1].Name != "message_stop" || behaviour.Text(body) != "Hello there" || !strings.Contains(string(body), `"stop_reason":"end_turn"`) {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
		})
	}
}

// After another vendor answered a tool call, the conversation's next turn
// may go back to its own vendor: Claude Code's history then holds a tool
// call with no thinking block before it, which Messages refuses with
// thinking on; a Gemini model turn's call has no thought signature. The
// gateway sends such a request fit for its own vendor (only where a chain
// crosses vendors), and the strict simulator takes it.
func TestBackToTheOwnVendorAfterATranslatedTurn(t *testing.T) {
	rec := loadRecording(t, "claude-2.1.328-tool-result")
	var body map[string]any
	json.Unmarshal(rec.Body, &body)
	for _, m := range body["messages"].([]any) {
		msg := m.(map[string]any)
		if blocks, ok := msg["content"].([]any); ok && msg["role"] == "assistant" && len(blocks) > 0 && blocks[0].(map[string]any)["type"] == "thinking" {
			msg["content"] = blocks[1:] // as another vendor's turn comes back: no thinking block
		}
	}
	raw, _ := json.Marshal(body)
	send := func(r *rig) (*http.Response, string) { return rec.send(t, r, raw) }
	r := newRig(t, nil, spillTo("gpt-6.1-sol"))
	if resp, b := send(r); resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Model") != "claude-opus-5-5" {
		t.Fatalf("status %d model %q: %s", resp.StatusCode, resp.Header.Get("X-Spillway-Model"), clipText(b))
	}
	// without a cross-vendor chain the request goes as it came (and this
	// one, never seen then, is refused as the provider refuses it)
	plain := newRig(t, nil, nil)
	if resp, b := send(plain); resp.StatusCode != 400 || !strings.Contains(b, "thinking") {
		t.Fatalf("without a cross-vendor chain: status %d: %s", resp.StatusCode, clipText(b))
	}

	g := `{"contents":[{"role":"user","parts":[{"text":"run it"}]},{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"a"}}}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object"}}]}]}`
	fit, ok := translateNative(g)
	if !ok || !strings.Contains(fit, `"thoughtSignature":"skip_thought_signature_validator"`) {
		t.Fatalf("a Gemini model turn's call without a signature: %v %s", ok, fit)
	}
}

func translateNative(body string) (string, bool) {
	out, ok := formats.Native(wire.GeminiEndpoints[1], []byte(body))
	return string(out), ok
}

// A Gemini stream asked for as a JSON array (no alt=sse) is not translated
// (a translation writes SSE): the step is passed over, saying so.
func TestAGeminiArrayStreamIsNotTranslated(t *testing.T) {
	r := newRig(t, nil, func(c *config.Config) {
		spillTo("claude-sonnet-5-5")(c)
		c.Retry.Budget = 0
	})
	fullVendor(t, r, "gemini-")
	c := behaviour.Gemini("gemini-3-flash", "hi", true)
	c.Path = strings.TrimSuffix(c.Path, "?alt=sse")
	resp, body := r.do(t, c)
	if route := resp.Header.Get("X-Spillway-Route"); resp.StatusCode == 200 || !strings.Contains(route, "claude-sonnet-5-5[anthropic]:untranslatable") || !strings.Contains(string(body), "alt=sse") {
		t.Fatalf("status %d route %q: %s", resp.StatusCode, route, body)
	}
}
