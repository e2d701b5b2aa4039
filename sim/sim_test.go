package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/sim"
)

// newSim starts a simulator on loopback. scn nil means calm.
func newSim(t *testing.T, scn *sim.Scenario, clock sim.Clock) (*sim.Server, string) {
	t.Helper()
	srv, err := sim.New(sim.Options{Scenario: scn, Clock: clock, Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return srv, hs.URL
}

type reqSpec struct {
	name, path, body string
	header           map[string]string
}

func post(t *testing.T, base string, r reqSpec) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+r.path, strings.NewReader(r.body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

var (
	oaKey  = map[string]string{"Authorization": "Bearer sk-test-0123456789"}
	antKey = map[string]string{"x-api-key": "sk-ant-test-0123456789", "anthropic-version": "2023-06-01"}
	gemKey = map[string]string{"x-goog-api-key": "AIza-test"}
)

// requests returns one request per endpoint and mode for a model of each provider.
func requests(oaModel, antModel, gemModel, prompt string) []reqSpec {
	return []reqSpec{
		{"chat", "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, oaModel, prompt), oaKey},
		{"chat stream", "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":%q}]}]}`, oaModel, prompt), oaKey},
		{"responses", "/v1/responses", fmt.Sprintf(`{"model":%q,"input":%q}`, oaModel, prompt), oaKey},
		{"responses stream", "/v1/responses", fmt.Sprintf(`{"model":%q,"stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}]}`, oaModel, prompt), oaKey},
		{"messages", "/v1/messages?beta=true", fmt.Sprintf(`{"model":%q,"max_tokens":64,"messages":[{"role":"user","content":%q}]}`, antModel, prompt), antKey},
		{"messages stream", "/v1/messages?beta=true", fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":%q}]}]}`, antModel, prompt), antKey},
		{"gemini", "/v1beta/models/" + gemModel + ":generateContent", fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"text":%q}]}]}`, prompt), gemKey},
		{"gemini stream", "/v1beta/models/" + gemModel + ":streamGenerateContent?alt=sse", fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"text":%q}]}]}`, prompt), gemKey},
	}
}

// answerText reassembles the answer text and usage from any endpoint's body.
func answerText(t *testing.T, name string, body []byte) (text string, out int, completed bool) {
	t.Helper()
	if !sse.LooksLikeSSE(body) {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: bad json: %v\n%s", name, err, body)
		}
		switch {
		case m["choices"] != nil:
			c := m["choices"].([]any)[0].(map[string]any)
			return c["message"].(map[string]any)["content"].(string), num(m["usage"], "completion_tokens"), true
		case m["object"] == "response":
			return m["output_text"].(string), num(m["usage"], "output_tokens"), m["status"] == "completed"
		case m["type"] == "message":
			return m["content"].([]any)[0].(map[string]any)["text"].(string), num(m["usage"], "output_tokens"), m["stop_reason"] == "end_turn"
		case m["candidates"] != nil:
			p := m["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0]
			return p.(map[string]any)["text"].(string), num(m["usageMetadata"], "candidatesTokenCount"), true
		}
		t.Fatalf("%s: unknown body %s", name, body)
	}
	r := sse.NewReader(bytes.NewReader(body))
	var b strings.Builder
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if string(ev.Data) == "[DONE]" {
			completed = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("%s: bad frame %q", name, ev.Data)
		}
		switch {
		case ev.Name == "response.output_text.delta":
			b.WriteString(m["delta"].(string))
		case ev.Name == "response.completed":
			out = num(m["response"].(map[string]any)["usage"], "output_tokens")
			completed = true
		case ev.Name == "content_block_delta":
			b.WriteString(m["delta"].(map[string]any)["text"].(string))
		case ev.Name == "message_delta":
			out = num(m["usage"], "output_tokens")
		case ev.Name == "message_stop":
			completed = true
		case m["choices"] != nil:
			if ch := m["choices"].([]any); len(ch) > 0 {
				if c, ok := ch[0].(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
					b.WriteString(c)
				}
			} else {
				out = num(m["usage"], "completion_tokens")
			}
		case m["candidates"] != nil:
			c := m["candidates"].([]any)[0].(map[string]any)
			b.WriteString(c["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string))
			if c["finishReason"] == "STOP" {
				completed = true
				out = num(m["usageMetadata"], "candidatesTokenCount")
			}
		}
	}
	return b.String(), out, completed
}

func num(m any, k string) int {
	mm, _ := m.(map[string]any)
	f, _ := mm[k].(float64)
	return int(f)
}

func TestEndpointsAnswerDeterministically(t *testing.T) {
	_, base := newSim(t, nil, nil)
	prompt := "Reply with the word pong"
	for _, r := range requests("gpt-6.1-sol", "claude-opus-5-5", "gemini-3-pro", prompt) {
		t.Run(r.name, func(t *testing.T) {
			resp, body := post(t, base, r)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			model := map[bool]string{true: "claude-opus-5-5"}[strings.HasPrefix(r.name, "messages")]
			switch {
			case strings.HasPrefix(r.name, "gemini"):
				model = "gemini-3-pro"
			case model == "":
				model = "gpt-6.1-sol"
			}
			want := sim.Answer(model, prompt, 16)
			text, out, completed := answerText(t, r.name, body)
			if text != want {
				t.Errorf("text = %q\nwant   %q", text, want)
			}
			if out != len(sim.Tokens(want)) {
				t.Errorf("output tokens = %d, want %d", out, len(sim.Tokens(want)))
			}
			if !completed {
				t.Errorf("no completion marker:\n%s", body)
			}
			if v := classify.HTTP(resp.StatusCode, resp.Header, body); v.Class != classify.OK {
				t.Errorf("the classifier does not see success: %+v", v)
			}
		})
	}
}

func TestModelsAndEmbeddings(t *testing.T) {
	_, base := newSim(t, nil, nil)
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	ids := fmt.Sprint(list.Data)
	if !strings.Contains(ids, "gpt-6-astra") || strings.Contains(ids, "claude") {
		t.Fatalf("openai models = %s", ids)
	}
	resp, body := post(t, base, reqSpec{"emb", "/v1/embeddings", `{"model":"gpt-6-luna","input":["a","b"],"dimensions":4}`, oaKey})
	var emb struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	json.Unmarshal(body, &emb)
	if resp.StatusCode != 200 || len(emb.Data) != 2 || len(emb.Data[0].Embedding) != 4 {
		t.Fatalf("embeddings: %d %s", resp.StatusCode, body)
	}
}

// TestErrorsClassify checks that every failure the simulator produces, in
// every wire format, is the provider's real shape: spillway's classifier,
// built from the providers' documented errors, must read it right.
func TestErrorsClassify(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	for _, kind := range []string{"capacity", "rate_limit", "quota", "auth", "server_error"} {
		for _, r := range requests("gpt-6-astra", "claude-opus-5-5", "gemini-3-pro", "hi") {
			t.Run(kind+"/"+r.name, func(t *testing.T) {
				srv.ClearFaults("")
				for _, m := range []string{"gpt-6-astra", "claude-opus-5-5", "gemini-3-pro"} {
					if err := srv.AddFault(sim.Fault{Model: m, Kind: kind, Count: 1, RetryAfter: 2}); err != nil {
						t.Fatal(err)
					}
				}
				resp, body := post(t, base, r)
				v := classify.HTTP(resp.StatusCode, resp.Header, body)
				if string(v.Class) != kind {
					t.Fatalf("status %d body %s\nclassified %s, want %s", resp.StatusCode, body, v.Class, kind)
				}
				if kind == "capacity" && r.name == "responses stream" && resp.StatusCode != 200 {
					t.Errorf("Responses stream capacity should be response.failed inside a 200 stream, got %d", resp.StatusCode)
				}
				if (kind == "rate_limit" || kind == "capacity") && v.Wait != 2*time.Second && resp.StatusCode != 200 {
					t.Errorf("wait = %v, want the retry_after 2s", v.Wait)
				}
			})
		}
	}
	srv.ClearFaults("")
	bad := []struct {
		name  string
		r     reqSpec
		class classify.Class
		code  int
	}{
		{"unknown model", reqSpec{"x", "/v1/responses", `{"model":"gpt-9","input":"x"}`, oaKey}, classify.ModelNotFound, 404},
		{"claude model on openai path", reqSpec{"x", "/v1/chat/completions", `{"model":"claude-opus-5-5","messages":[]}`, oaKey}, classify.ModelNotFound, 404},
		{"anthropic unknown model", reqSpec{"x", "/v1/messages", `{"model":"claude-9","max_tokens":1,"messages":[]}`, antKey}, classify.ModelNotFound, 404},
		{"gemini unknown model", reqSpec{"x", "/v1beta/models/gemini-9:generateContent", `{"contents":[]}`, gemKey}, classify.ModelNotFound, 404},
		{"malformed json openai", reqSpec{"x", "/v1/chat/completions", `{"model":`, oaKey}, classify.BadRequest, 400},
		{"malformed json anthropic", reqSpec{"x", "/v1/messages", `nope`, antKey}, classify.BadRequest, 400},
		{"malformed json gemini", reqSpec{"x", "/v1beta/models/gemini-3-pro:generateContent", `[`, gemKey}, classify.BadRequest, 400},
		{"no key", reqSpec{"x", "/v1/chat/completions", `{"model":"gpt-6-luna","messages":[]}`, nil}, classify.Auth, 401},
		{"context too long", reqSpec{"x", "/v1/messages", `{"model":"claude-haiku-5-5","max_tokens":1,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 170000) + `"}]}`, antKey}, classify.ContextLength, 400},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, base, c.r)
			v := classify.HTTP(resp.StatusCode, resp.Header, body)
			if resp.StatusCode != c.code || v.Class != c.class {
				t.Fatalf("status %d class %s, want %d %s\n%s", resp.StatusCode, v.Class, c.code, c.class, clip(body))
			}
		})
	}
}

func clip(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

func TestBodyLimit(t *testing.T) {
	srv, err := sim.New(sim.Options{MaxBody: 1 << 10, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, r := range requests("gpt-6-luna", "claude-haiku-5-5", "gemini-3-flash", strings.Repeat("x", 4<<10)) {
		resp, body := post(t, hs.URL, r)
		if resp.StatusCode != 413 {
			t.Errorf("%s: status %d, want 413: %s", r.name, resp.StatusCode, clip(body))
		}
	}
}

func TestKeysInScenario(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	scn.Keys = map[string]sim.Key{"sk-broke": {State: "quota"}, "sk-wrong": {State: "invalid"}}
	_, base := newSim(t, scn, nil)
	for key, want := range map[string]classify.Class{"sk-broke": classify.Quota, "sk-wrong": classify.Auth, "sk-fine": classify.OK} {
		for _, r := range requests("gpt-6-luna", "claude-haiku-5-5", "gemini-3-flash", "x") {
			r.header = map[string]string{"Authorization": "Bearer " + key, "x-api-key": key, "x-goog-api-key": key}
			resp, body := post(t, base, r)
			if v := classify.HTTP(resp.StatusCode, resp.Header, body); v.Class != want {
				t.Errorf("key %s %s: class %s, want %s (%d %s)", key, r.name, v.Class, want, resp.StatusCode, clip(body))
			}
		}
	}
}

// quietScenario has one small pool with no background load.
func quietScenario(pool int, load float64) *sim.Scenario {
	scn, _ := sim.Builtin("calm")
	scn.Noise = 0
	scn.Models = map[string]sim.Pool{"gpt-6-astra": {Size: pool, PeakLoad: load, QuietLoad: load}}
	return scn
}

func TestPoolRejectsUnderConcurrency(t *testing.T) {
	scn := quietScenario(2, 0)
	srv, base := newSim(t, scn, nil)
	// hold two requests open with a slow stream, then try three more
	if err := srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "slow", Count: 2, DelayMS: 40}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 5)
	body := `{"model":"gpt-6-astra","stream":true,"messages":[{"role":"user","content":"hold"}]}`
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := post(t, base, reqSpec{"slow", "/v1/chat/completions", body, oaKey})
			codes <- resp.StatusCode
		}()
	}
	if _, err := srv.WaitStats(t.Context(), func(st sim.Stats) bool { m := st.Models["gpt-6-astra"]; return m != nil && m.Inflight == 2 }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		resp, b := post(t, base, reqSpec{"extra", "/v1/chat/completions", body, oaKey})
		if v := classify.HTTP(resp.StatusCode, resp.Header, b); v.Class != classify.Capacity {
			t.Errorf("request beyond the pool: %d %s, want capacity", resp.StatusCode, v.Class)
		}
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("held request: %d", c)
		}
	}
	st := srv.Snapshot().Models["gpt-6-astra"]
	if st.PeakConcurrency != 2 || st.Rejected["capacity"] != 3 || st.Served != 2 || st.Received != 5 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestFatRequestsRejectedFirst(t *testing.T) {
	// pool of 8 with three quarters taken by background load: 2 free slots.
	// A small request costs 1 slot; one of ~5000 input tokens costs
	// 1+5000/1000 = 6, capped at half the pool: 4.
	scn := quietScenario(8, 0.75)
	scn.FatTokens = 1000
	srv, base := newSim(t, scn, nil)
	small := reqSpec{"small", "/v1/chat/completions", `{"model":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`, oaKey}
	fat := reqSpec{"fat", "/v1/chat/completions", `{"model":"gpt-6-astra","messages":[{"role":"user","content":"` + strings.Repeat("context ", 2500) + `"}]}`, oaKey}
	if resp, b := post(t, base, fat); resp.StatusCode != 503 {
		t.Fatalf("fat request: %d %s, want 503", resp.StatusCode, clip(b))
	}
	if resp, b := post(t, base, small); resp.StatusCode != 200 {
		t.Fatalf("small request: %d %s, want 200", resp.StatusCode, clip(b))
	}
	if st := srv.Snapshot().Models["gpt-6-astra"]; st.Rejected["capacity"] != 1 || st.Served != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestDiurnalCurve(t *testing.T) {
	wed := func(h, m int) time.Time { return time.Date(2026, 11, 25, h, m, 0, 0, time.UTC) }
	sat := func(h int) time.Time { return time.Date(2026, 11, 28, h, 0, 0, 0, time.UTC) }
	shapes := []struct {
		at   time.Time
		want float64
	}{
		{wed(3, 0), 0}, {wed(8, 0), 0}, {wed(9, 0), 0.5}, {wed(10, 0), 1}, {wed(13, 30), 1},
		{wed(15, 59), 1}, {wed(17, 30), 0.5}, {wed(19, 0), 0}, {wed(23, 0), 0}, {sat(12), 0.3}, {sat(3), 0},
	}
	for _, s := range shapes {
		if got := sim.DayShape(s.at); got < s.want-1e-9 || got > s.want+1e-9 {
			t.Errorf("DayShape(%s) = %v, want %v", s.at.Format("Mon 15:04"), got, s.want)
		}
	}
	// The peak scenario's heavy pool is nearly full at noon on a weekday and
	// mostly free at night; the light pool stays mostly free.
	scn, _ := sim.Builtin("peak")
	clock := &sim.ManualClock{T: wed(12, 0)}
	srv, _ := newSim(t, scn, clock)
	var noon, night, lightNoon float64
	for m := 0; m < 60; m++ {
		noon += srv.Load("gpt-6-astra", wed(12, m)) / 60
		night += srv.Load("gpt-6-astra", wed(3, m)) / 60
		lightNoon += srv.Load("gpt-6-luna", wed(12, m)) / 60
	}
	if noon < 0.75 || night > 0.45 || lightNoon > 0.55 || noon-night < 0.4 {
		t.Fatalf("heavy noon %.2f night %.2f, light noon %.2f", noon, night, lightNoon)
	}
}

func TestPeakScenarioRejectsByTier(t *testing.T) {
	scn, _ := sim.Builtin("peak")
	start, _ := time.Parse(time.RFC3339, scn.Start)
	clock := &sim.ManualClock{T: start}
	srv, base := newSim(t, scn, clock)
	rejected := map[string]int{}
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
		for i := 0; i < 60; i++ {
			clock.T = start.Add(time.Duration(i) * time.Minute) // a new noise draw each minute
			resp, _ := post(t, base, reqSpec{"x", "/v1/chat/completions", `{"model":"` + m + `","messages":[{"role":"user","content":"x"}]}`, oaKey})
			if resp.StatusCode == 503 {
				rejected[m]++
			}
		}
	}
	// heavy mostly full, medium often, light rarely
	if rejected["gpt-6-astra"] < 40 || rejected["gpt-6.1-sol"] < 5 || rejected["gpt-6.1-sol"] > 45 || rejected["gpt-6-luna"] > 3 {
		t.Fatalf("rejections per 60 at peak: %v", rejected)
	}
	if got := srv.Snapshot().Models["gpt-6-astra"].Rejected["capacity"]; got != rejected["gpt-6-astra"] {
		t.Fatalf("stats count %d rejections, saw %d", got, rejected["gpt-6-astra"])
	}
}

func TestOutageScenario(t *testing.T) {
	scn, _ := sim.Builtin("outage")
	start := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	clock := &sim.ManualClock{T: start}
	_, base := newSim(t, scn, clock)
	try := func() int {
		resp, _ := post(t, base, reqSpec{"x", "/v1/messages", `{"model":"claude-haiku-5-5","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, antKey})
		return resp.StatusCode
	}
	if c := try(); c != 529 {
		t.Fatalf("during the outage: %d, want 529", c)
	}
	clock.T = start.Add(11 * time.Minute)
	if c := try(); c != 200 {
		t.Fatalf("after the outage: %d, want 200", c)
	}
}

func TestRateLimitHeadersAreHonest(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	scn.RateLimit = sim.Limits{RPM: 2}
	start := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	clock := &sim.ManualClock{T: start}
	_, base := newSim(t, scn, clock)
	r := reqSpec{"x", "/v1/chat/completions", `{"model":"gpt-6-luna","messages":[{"role":"user","content":"x"}]}`, oaKey}
	resp, _ := post(t, base, r)
	if resp.StatusCode != 200 || resp.Header.Get("x-ratelimit-limit-requests") != "2" || resp.Header.Get("x-ratelimit-remaining-requests") != "1" {
		t.Fatalf("first: %d %v", resp.StatusCode, resp.Header)
	}
	clock.T = start.Add(10 * time.Second)
	post(t, base, r)
	clock.T = start.Add(20 * time.Second)
	resp, body := post(t, base, r)
	v := classify.HTTP(resp.StatusCode, resp.Header, body)
	if resp.StatusCode != 429 || v.Class != classify.RateLimit {
		t.Fatalf("third: %d %s", resp.StatusCode, body)
	}
	// the oldest request leaves the window at start+60s: 40s from now
	if v.Wait != 40*time.Second || resp.Header.Get("retry-after") != "40" || resp.Header.Get("x-ratelimit-remaining-requests") != "0" {
		t.Fatalf("wait %v, headers %v", v.Wait, resp.Header)
	}
	if !strings.Contains(string(body), "Please try again in 40s") {
		t.Fatalf("message does not carry the wait: %s", body)
	}
	clock.T = start.Add(59 * time.Second)
	if resp, _ := post(t, base, r); resp.StatusCode != 429 {
		t.Fatalf("before retry-after: %d, want 429", resp.StatusCode)
	}
	clock.T = start.Add(60 * time.Second)
	if resp, _ := post(t, base, r); resp.StatusCode != 200 {
		t.Fatalf("at retry-after: %d, want 200", resp.StatusCode)
	}
	// Anthropic carries its own headers
	ar := reqSpec{"a", "/v1/messages", `{"model":"claude-haiku-5-5","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, antKey}
	post(t, base, ar)
	post(t, base, ar)
	resp, body = post(t, base, ar)
	if resp.StatusCode != 429 || resp.Header.Get("anthropic-ratelimit-requests-remaining") != "0" || resp.Header.Get("retry-after") == "" {
		t.Fatalf("anthropic: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestTokensPerMinute(t *testing.T) {
	scn, _ := sim.Builtin("calm")
	scn.RateLimit = sim.Limits{TPM: 100}
	_, base := newSim(t, scn, &sim.ManualClock{T: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)})
	big := reqSpec{"x", "/v1/chat/completions", `{"model":"gpt-6-luna","messages":[{"role":"user","content":"` + strings.Repeat("y", 300) + `"}]}`, oaKey}
	if resp, _ := post(t, base, big); resp.StatusCode != 200 {
		t.Fatal("first request should fit")
	}
	resp, body := post(t, base, big)
	if resp.StatusCode != 429 || !strings.Contains(string(body), "tokens per min") || resp.Header.Get("x-ratelimit-remaining-tokens") == "" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestStreamFaults(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	two := 2
	cases := []struct {
		fault   sim.Fault
		r       reqSpec
		check   func(t *testing.T, status int, body []byte, err error)
		stalled bool
	}{
		{sim.Fault{Kind: "midstream", AfterTokens: &two}, requests("gpt-6-astra", "", "", "go")[3], func(t *testing.T, status int, body []byte, err error) {
			if !bytes.Contains(body, []byte(`"delta":" go"`)) || !bytes.Contains(body, []byte("response.failed")) || bytes.Contains(body, []byte("response.completed")) {
				t.Fatalf("want 2 tokens then response.failed:\n%s", body)
			}
			if v := classify.HTTP(status, nil, body); v.Class != classify.Capacity {
				t.Fatalf("class %s", v.Class)
			}
		}, false},
		{sim.Fault{Kind: "midstream"}, requests("", "claude-opus-5-5", "", "go")[5], func(t *testing.T, status int, body []byte, err error) {
			if !bytes.Contains(body, []byte("content_block_delta")) || !bytes.Contains(body, []byte("event: error")) || bytes.Contains(body, []byte("message_stop")) {
				t.Fatalf("want deltas then event: error:\n%s", body)
			}
		}, false},
		{sim.Fault{Kind: "reset", AfterTokens: &two}, requests("gpt-6-astra", "", "", "go")[1], func(t *testing.T, status int, body []byte, err error) {
			if err == nil || bytes.Contains(body, []byte("[DONE]")) {
				t.Fatalf("want a cut stream, got err=%v body=%s", err, body)
			}
			if v := classify.Err(err); v.Class != classify.Network {
				t.Fatalf("read error %v classified %s", err, v.Class)
			}
		}, false},
		{sim.Fault{Kind: "malformed"}, requests("gpt-6-astra", "", "", "go")[3], func(t *testing.T, status int, body []byte, err error) {
			if !bytes.Contains(body, []byte("unterminated")) || bytes.Contains(body, []byte("response.completed")) {
				t.Fatalf("want a malformed frame:\n%s", body)
			}
		}, false},
		{sim.Fault{Kind: "stall", AfterTokens: &two}, requests("gpt-6-astra", "", "", "go")[1], func(t *testing.T, status int, body []byte, err error) {
			if err == nil || !strings.Contains(err.Error(), "deadline") {
				t.Fatalf("want the client's deadline, got %v", err)
			}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.fault.Kind, func(t *testing.T) {
			srv.ClearFaults("")
			if err := srv.AddFault(c.fault); err != nil {
				t.Fatal(err)
			}
			// a bound against a hang only; a stalled stream's 400 ms is the
			// client's deadline the check expects to cut it
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if c.stalled {
				ctx, cancel = context.WithTimeout(context.Background(), 400*time.Millisecond)
			}
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", base+c.r.path, strings.NewReader(c.r.body))
			for k, v := range c.r.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			c.check(t, resp.StatusCode, body, err)
		})
	}
	st := srv.Snapshot()
	if st.Models["gpt-6-astra"].Faults["midstream"] != 1 || st.Models["gpt-6-astra"].Faults["reset"] != 1 ||
		st.Models["gpt-6-astra"].Rejected["network"] != 1 || st.Models["gpt-6-astra"].Rejected["timeout"] != 1 {
		t.Fatalf("stats: %+v", st.Models["gpt-6-astra"])
	}
}

func TestImmediateFaults(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	r := requests("gpt-6-astra", "", "", "go")[0]
	t.Run("reset before any byte", func(t *testing.T) {
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "reset"})
		req, _ := http.NewRequest("POST", base+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer k")
		_, err := http.DefaultClient.Do(req)
		if err == nil {
			t.Fatal("want a transport error")
		}
		if v := classify.Err(err); v.Class != classify.Network {
			t.Fatalf("%v classified %s", err, v.Class)
		}
	})
	t.Run("stall before any byte", func(t *testing.T) {
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "stall"})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer k")
		_, err := http.DefaultClient.Do(req)
		if v := classify.Err(err); v.Class != classify.Timeout {
			t.Fatalf("%v classified %s", err, v.Class)
		}
	})
	t.Run("slow", func(t *testing.T) {
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "slow", DelayMS: 20})
		t0 := time.Now()
		resp, _ := post(t, base, requests("gpt-6-astra", "", "", "go")[1])
		if el := time.Since(t0); resp.StatusCode != 200 || el < 15*20*time.Millisecond {
			t.Fatalf("slow stream took %v (status %d), want ≥ 300ms", el, resp.StatusCode)
		}
	})
	t.Run("malformed non-stream", func(t *testing.T) {
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "malformed"})
		resp, body := post(t, base, r)
		if resp.StatusCode != 200 || json.Valid(body) {
			t.Fatalf("want invalid JSON in a 200: %s", body)
		}
	})
	t.Run("count -1 until cleared", func(t *testing.T) {
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "server_error", Count: -1})
		for i := 0; i < 3; i++ {
			if resp, _ := post(t, base, r); resp.StatusCode != 500 {
				t.Fatalf("try %d: %d", i, resp.StatusCode)
			}
		}
		req, _ := http.NewRequest("DELETE", base+"/_sim/faults", nil)
		http.DefaultClient.Do(req)
		if resp, _ := post(t, base, r); resp.StatusCode != 200 {
			t.Fatalf("after DELETE: %d", resp.StatusCode)
		}
	})
}

func TestControlAPI(t *testing.T) {
	_, base := newSim(t, nil, nil)
	bad := []string{`{"model":"gpt-6-astra","fault":"meteor"}`, `{"model":"gpt-9","fault":"capacity"}`, `{"fault":"capacity","cnt":1}`, `not json`}
	for _, b := range bad {
		resp, body := post(t, base, reqSpec{"f", "/_sim/faults", b, nil})
		if resp.StatusCode != 400 || !bytes.Contains(body, []byte("error")) {
			t.Errorf("%s: %d %s", b, resp.StatusCode, body)
		}
	}
	resp, body := post(t, base, reqSpec{"f", "/_sim/faults", `[{"model":"gpt-6-astra","fault":"capacity","count":2},{"fault":"quota"}]`, nil})
	if resp.StatusCode != 201 || !bytes.Contains(body, []byte(`"count":2`)) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	r := requests("gpt-6-astra", "", "", "x")[0]
	post(t, base, r)
	post(t, base, r)
	post(t, base, r) // the quota fault, for any model
	post(t, base, r) // served
	sresp, err := http.Get(base + "/_sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st sim.Stats
	json.NewDecoder(sresp.Body).Decode(&st)
	sresp.Body.Close()
	m := st.Models["gpt-6-astra"]
	if m == nil || m.Received != 4 || m.Served != 1 || m.Rejected["capacity"] != 2 || m.Rejected["quota"] != 1 || m.TokensOut != 16 {
		t.Fatalf("stats: %+v", m)
	}
	if _, ok := st.Load["gpt-6-astra"]; !ok {
		t.Fatal("stats lack the pool load")
	}
}

func TestScenarioFiles(t *testing.T) {
	scn, err := sim.LoadScenario("../testdata/sim/weekday.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if scn.Models["gpt-6-astra"].Size != 2 || scn.Tiers["light"].Size != 32 || scn.RateLimit.RPM != 30 || scn.Keys["sk-broke"].State != "quota" {
		t.Fatalf("scenario = %+v", scn)
	}
	// every mistake at once, each at its line and field
	_, err = sim.LoadScenario("../testdata/sim/every_mistake.yaml")
	want := `../testdata/sim/every_mistake.yaml:3:8: noise: must be a number, not "lots"
../testdata/sim/every_mistake.yaml:5:18: tiers.heavy.pool: must be at least 1, not 0
../testdata/sim/every_mistake.yaml:5:21: tiers.heavy.peak_loud: unknown field "peak_loud"; allowed here: peak_load, pool, quiet_load
../testdata/sim/every_mistake.yaml:6:33: tiers.medium.peak_load: must be a fraction from 0 to 1, not 1.5
../testdata/sim/every_mistake.yaml:9:10: outages[0].for: must be more than 0s
../testdata/sim/every_mistake.yaml:11:18: keys.sk-x.state: unknown state "broke"; allowed: ok, quota, invalid`
	var ce *config.Error
	if !errors.As(err, &ce) || err.Error() != want {
		t.Fatalf("bad scenario: %v", err)
	}
	if _, err := sim.LoadScenario("nonesuch"); err == nil || !strings.Contains(err.Error(), "built-in: calm, peak") {
		t.Fatalf("unknown name: %v", err)
	}
	for _, n := range sim.BuiltinNames {
		s, ok := sim.Builtin(n)
		if !ok || s.Validate() != nil {
			t.Errorf("builtin %s invalid", n)
		}
	}
}

// Regions serve every model again under a path prefix, with pools, faults
// and statistics of their own.
func TestRegions(t *testing.T) {
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0, Regions: []string{"eu", "us"}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	// the control API of a region, over HTTP
	resp, err := http.Post(hs.URL+"/eu/_sim/faults", "application/json", strings.NewReader(`{"model":"gpt-6-luna","fault":"capacity","count":-1}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("%v %v", err, resp)
	}
	resp.Body.Close()
	post := func(prefix string) int {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+prefix+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-6-luna","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-region-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if post("/eu") != 503 || post("") != 200 || post("/us") != 200 {
		t.Fatal("a region's fault reached another region")
	}
	if srv.Region("eu").Snapshot().Models["gpt-6-luna"].Received != 1 || srv.Snapshot().Models["gpt-6-luna"].Received != 1 ||
		srv.Region("us").Snapshot().Models["gpt-6-luna"].Served != 1 || srv.Region("ap") != nil {
		t.Fatal("statistics are not per region")
	}
	for _, bad := range [][]string{{"v1"}, {"eu", "eu"}, {"a/b"}} {
		if _, err := sim.New(sim.Options{Regions: bad}); err == nil || !strings.Contains(err.Error(), "region") {
			t.Errorf("regions %v: %v", bad, err)
		}
	}
}

// The fault shapes a user meets, as kinds of the control API: each comes
// out in every wire format as what it is.
func TestFaultShapes(t *testing.T) {
	clk := &sim.ManualClock{T: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	srv, base := newSim(t, nil, clk)
	for _, c := range []struct {
		fault sim.Fault
		class classify.Class
		says  string
	}{
		{sim.Fault{Kind: "context_length"}, classify.ContextLength, ""},
		{sim.Fault{Kind: "content_filter"}, classify.ContentFilter, ""},
		{sim.Fault{Kind: "bad_request", Message: "This model does not support assistant message prefill."}, classify.BadRequest, "assistant message prefill"},
		{sim.Fault{Kind: "model_not_found"}, classify.ModelNotFound, ""},
		{sim.Fault{Kind: "rate_limit", RetryAfter: -1}, classify.RateLimit, ""},
	} {
		for _, r := range requests("gpt-6-astra", "claude-opus-5-5", "gemini-3-pro", "go") {
			t.Run(c.fault.Kind+"/"+r.name, func(t *testing.T) {
				srv.ClearFaults("")
				if err := srv.AddFault(c.fault); err != nil {
					t.Fatal(err)
				}
				resp, body := post(t, base, r)
				if v := classify.HTTP(resp.StatusCode, resp.Header, body); v.Class != c.class || !strings.Contains(string(body), c.says) {
					t.Fatalf("%d %s: classified %s, want %s", resp.StatusCode, body, v.Class, c.class)
				}
				if c.fault.RetryAfter < 0 && (resp.Header.Get("Retry-After") != "" || resp.Header.Get("retry-after-ms") != "") {
					t.Fatalf("retry_after -1 sent %v", resp.Header)
				}
			})
		}
	}
	t.Run("truncated: a clean end with no final event", func(t *testing.T) {
		srv.ClearFaults("")
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "truncated"})
		for _, r := range []reqSpec{requests("gpt-6-astra", "", "", "go")[1]} {
			resp, body := post(t, base, r)
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"content":`)) || bytes.Contains(body, []byte("[DONE]")) || bytes.Contains(body, []byte(`"finish_reason":"stop"`)) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		}
	})
	t.Run("truncated whole answer: the body ends short of its Content-Length", func(t *testing.T) {
		srv.ClearFaults("")
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "truncated"})
		r := requests("gpt-6-astra", "", "", "go")[0]
		req, _ := http.NewRequest("POST", base+r.path, strings.NewReader(r.body))
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || classify.Err(err).Class != classify.Network {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
	})
	t.Run("slow first token: the headers at once, the output late", func(t *testing.T) {
		srv.ClearFaults("")
		srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "slow", DelayMS: 1, FirstDelayMS: 300})
		r := requests("gpt-6-astra", "", "", "go")[1]
		req, _ := http.NewRequest("POST", base+r.path, strings.NewReader(r.body))
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if all := time.Since(t0); all < 300*time.Millisecond || resp.StatusCode != 200 || !bytes.Contains(body, []byte("[DONE]")) {
			t.Fatalf("%d after %v: %s", resp.StatusCode, all, body)
		}
	})
	t.Run("seconds: down for a minute, then healthy", func(t *testing.T) {
		srv.ClearFaults("")
		if err := srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1, Seconds: 60}); err != nil {
			t.Fatal(err)
		}
		r := requests("gpt-6-astra", "", "", "go")[0]
		if resp, _ := post(t, base, r); resp.StatusCode != 503 {
			t.Fatalf("during: %d", resp.StatusCode)
		}
		clk.T = clk.T.Add(59 * time.Second)
		if resp, _ := post(t, base, r); resp.StatusCode != 503 {
			t.Fatalf("at 59s: %d", resp.StatusCode)
		}
		clk.T = clk.T.Add(time.Second)
		if resp, _ := post(t, base, r); resp.StatusCode != 200 {
			t.Fatalf("after: %d", resp.StatusCode)
		}
	})
	for _, bad := range []sim.Fault{{Kind: "capacity", Seconds: -1}, {Kind: "rate_limit", RetryAfter: -2}} {
		if err := srv.AddFault(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// On a step clock the simulator's world moves with the requests it takes,
// not with the wall clock: the same seed and the same requests meet the
// same pools (load, noise, random faults) every time.
func TestAStepClockMovesWithRequests(t *testing.T) {
	start := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	clk, err := sim.ParseClock("step:20s", start)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.ParseClock("step:soon", start); err == nil || err.Error() != `sim: --clock "step:soon": write step:D with D a duration, e.g. step:5s (simulated time moves 5s with each request)` {
		t.Fatalf("step:soon: %v", err)
	}
	run := func(clk sim.Clock) []int {
		scn, _ := sim.Builtin("peak")
		scn.Network = sim.NetworkFaults{Reset: 0.2, StallFor: config.Duration(time.Millisecond)} // random faults drawn from the seed too
		srv, base := newSim(t, scn, clk)
		var codes []int
		for i := range 30 {
			model := []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"}[i%3]
			req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"x"}]}`))
			req.Header.Set("Authorization", oaKey["Authorization"])
			resp, err := http.DefaultClient.Do(req)
			code := 0 // a reset connection
			if err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			codes = append(codes, code)
		}
		if got, want := srv.Clock().Now(), start.Add(30*20*time.Second); !got.Equal(want) {
			t.Fatalf("after 30 requests the clock reads %v, want %v", got, want)
		}
		return codes
	}
	first := run(clk)
	t.Logf("codes %v", first)
	again, _ := sim.ParseClock("step:20s", start)
	if second := run(again); !slices.Equal(first, second) {
		t.Fatalf("the same requests met another world:\n%v\n%v", first, second)
	}
	if !slices.Contains(first, 503) && !slices.Contains(first, 529) || !slices.Contains(first, 200) {
		t.Fatalf("a peak with no full pool, or no room: %v", first)
	}
}
