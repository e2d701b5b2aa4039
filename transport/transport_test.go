package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/sim"
	"github.com/spillway/spillway/transport"
)

// rig is the simulator on loopback and a Transport in front of it, its
// engine on a fake clock. The behaviours the library shares with the
// gateway are internal/behaviour's suite; these tests are the library's
// own: the official SDKs over it, Call, bodies, requests it leaves alone.
type rig struct {
	sim *sim.Server
	url string
	tr  *transport.Transport
	clk *policytest.Clock // the engine's
	mu  sync.Mutex
	rec []events.Record
}

// startSim starts the simulator on loopback and returns it and its URL.
func startSim(t *testing.T) (*sim.Server, string) {
	t.Helper()
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return srv, hs.URL
}

func newRig(t *testing.T, mut func(*config.Config), opts ...transport.Option) *rig {
	t.Helper()
	return newRigAt(t, func(c *config.Config, _ string) {
		if mut != nil {
			mut(c)
		}
	}, opts...)
}

// newRigAt is newRig, with mut given the simulator's URL too.
func newRigAt(t *testing.T, mut func(*config.Config, string), opts ...transport.Option) *rig {
	t.Helper()
	srv, url := startSim(t)
	cfg := config.Default()
	cfg.Pacing = config.Pacing{MaxConcurrency: 8}
	cfg.Retry.Budget = config.Duration(5 * time.Second)
	cfg.Retry.BackoffBase = config.Duration(20 * time.Millisecond)
	cfg.Retry.BackoffMax = config.Duration(100 * time.Millisecond)
	cfg.Retry.NetworkGap = config.Duration(30 * time.Millisecond)
	cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0 // breakers are policy's to test
	mut(cfg, url)
	r := &rig{sim: srv, url: url}
	sink := events.SinkFunc(func(rec events.Record) {
		r.mu.Lock()
		r.rec = append(r.rec, rec)
		r.mu.Unlock()
	})
	r.clk = policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	engine := policy.New(cfg, policy.WithClock(r.clk))
	r.tr = transport.New(cfg, append([]transport.Option{transport.WithEvents(sink), transport.WithEngine(engine)}, opts...)...)
	return r
}

func (r *rig) fault(t *testing.T, f sim.Fault) {
	t.Helper()
	if err := r.sim.AddFault(f); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) records() []events.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Record(nil), r.rec...)
}

// route is the event log's account: "gpt-6-astra:capacity > gpt-6.1-sol:ok".
func (r *rig) route() string {
	var parts []string
	for _, rec := range r.records() {
		parts = append(parts, rec.Model+":"+rec.Class)
	}
	return strings.Join(parts, " > ")
}

func (r *rig) received(model string) int {
	if st := r.sim.Snapshot().Models[model]; st != nil {
		return st.Received
	}
	return 0
}

func (r *rig) openai() *openai.Client {
	c := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("sk-test-key-0123456789"),
		option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Transport: r.tr}))
	return &c
}

func (r *rig) anthropic() *anthropic.Client {
	c := anthropic.NewClient(aoption.WithBaseURL(r.url), aoption.WithAPIKey("sk-ant-test-key-0123456789"),
		aoption.WithMaxRetries(0), aoption.WithHTTPClient(&http.Client{Transport: r.tr}))
	return &c
}

// sdkCall is one SDK call: it returns the answer's text and the HTTP
// answer (for its headers). Streams are read to their end and closed.
type sdkCall func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error)

// protocol is one SDK and endpoint, with its chain's models.
type protocol struct {
	name          string
	heavy, medium string
	call          sdkCall
}

var (
	chat = protocol{"openai chat", "gpt-6-astra", "gpt-6.1-sol", func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error) {
		var hr *http.Response
		c, err := r.openai().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}, option.WithResponseInto(&hr))
		if err != nil {
			return "", hr, err
		}
		return c.Choices[0].Message.Content, hr, nil
	}}
	chatStream = protocol{"openai chat stream", "gpt-6-astra", "gpt-6.1-sol", func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error) {
		var hr *http.Response
		s := r.openai().Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}, option.WithResponseInto(&hr))
		defer s.Close()
		var text strings.Builder
		for s.Next() {
			if ch := s.Current(); len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
		}
		return text.String(), hr, s.Err()
	}}
	resp = protocol{"openai responses", "gpt-6-astra", "gpt-6.1-sol", func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error) {
		var hr *http.Response
		res, err := r.openai().Responses.New(ctx, responses.ResponseNewParams{Model: model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}, option.WithResponseInto(&hr))
		if err != nil {
			return "", hr, err
		}
		return res.OutputText(), hr, nil
	}}
	respStream = protocol{"openai responses stream", "gpt-6-astra", "gpt-6.1-sol", func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error) {
		var hr *http.Response
		s := r.openai().Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}, option.WithResponseInto(&hr))
		defer s.Close()
		var text strings.Builder
		for s.Next() {
			switch ev := s.Current(); ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.Delta)
			case "response.failed":
				return "", hr, errors.New("the caller saw response.failed")
			}
		}
		return text.String(), hr, s.Err()
	}}
	msgs = protocol{"anthropic messages", "claude-opus-5-5", "claude-sonnet-5-5", func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error) {
		var hr *http.Response
		m, err := r.anthropic().Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}, aoption.WithResponseInto(&hr))
		if err != nil {
			return "", hr, err
		}
		return m.Content[0].Text, hr, nil
	}}
	msgsStream = protocol{"anthropic messages stream", "claude-opus-5-5", "claude-sonnet-5-5", func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error) {
		var hr *http.Response
		s := r.anthropic().Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}, aoption.WithResponseInto(&hr))
		defer s.Close()
		msg := anthropic.Message{}
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return "", hr, err
			}
		}
		if s.Err() != nil || len(msg.Content) == 0 {
			return "", hr, s.Err()
		}
		return msg.Content[0].Text, hr, nil
	}}
	gemini       = protocol{"gemini generateContent", "gemini-3-pro", "gemini-3-flash", geminiCall(false)}
	geminiStream = protocol{"gemini streamGenerateContent", "gemini-3-pro", "gemini-3-flash", geminiCall(true)}
	protocols    = []protocol{chat, chatStream, resp, respStream, msgs, msgsStream, gemini, geminiStream}
)

// geminiCall posts to Gemini's REST API as Gemini CLI does: the model in
// the path, the key in x-goog-api-key, a stream with alt=sse (Google's own
// Go SDK: TestGoogleGenAISDKOnV1).
func geminiCall(stream bool) sdkCall {
	return func(ctx context.Context, r *rig, model, prompt string) (string, *http.Response, error) {
		url := r.url + "/v1beta/models/" + model + ":generateContent"
		if stream {
			url = r.url + "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
		}
		body := `{"contents":[{"role":"user","parts":[{"text":` + strconv.Quote(prompt) + `}]}]}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Goog-Api-Key", "AIza-test-key-0123456789")
		resp, err := (&http.Client{Transport: r.tr}).Do(req)
		if err != nil {
			return "", nil, err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", resp, err
		}
		if resp.StatusCode != 200 {
			return "", resp, fmt.Errorf("gemini: %d %s", resp.StatusCode, raw)
		}
		var chunk struct {
			Candidates []struct {
				Content struct {
					Parts []struct{ Text string } `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		text := ""
		datas := [][]byte{raw}
		if stream {
			datas = nil
			for _, line := range bytes.Split(raw, []byte("\n")) {
				if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					datas = append(datas, d)
				}
			}
		}
		for _, d := range datas {
			chunk.Candidates = nil
			if err := json.Unmarshal(d, &chunk); err != nil {
				return "", resp, fmt.Errorf("gemini: %v in %s", err, d)
			}
			for _, c := range chunk.Candidates {
				for _, p := range c.Content.Parts {
					text += p.Text
				}
			}
		}
		return text, resp, nil
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The heavy model is full: every SDK and endpoint gets the medium model's
// answer, the simulator saw each model named in its own attempt (the body
// was rewound and rewritten), and the event log has one record per attempt.
func TestCapacityFallsBack(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.fault(t, sim.Fault{Model: p.heavy, Kind: "capacity", Count: -1})
			prompt := "fall back please"
			text, hr, err := p.call(testCtx(t), r, p.heavy, prompt)
			if err != nil {
				t.Fatal(err)
			}
			if want := sim.Answer(p.medium, prompt, 16); text != want {
				t.Fatalf("answer %q, want %q", text, want)
			}
			wantRoute := p.heavy + ":capacity > " + p.medium + ":ok"
			if got := hr.Header.Get("X-Spillway-Route"); got != wantRoute && got != p.heavy+":capacity > "+p.medium+":streaming" {
				t.Fatalf("X-Spillway-Route %q, want %q (or :streaming for a stream)", got, wantRoute)
			}
			if hr.Header.Get("X-Spillway-Model") != p.medium || hr.Header.Get("X-Spillway-Attempts") != "2" {
				t.Fatalf("headers %v", hr.Header)
			}
			if r.received(p.heavy) != 1 || r.received(p.medium) != 1 {
				t.Fatalf("the simulator received heavy %d, medium %d; want 1 each", r.received(p.heavy), r.received(p.medium))
			}
			if got := r.route(); got != wantRoute {
				t.Fatalf("event log route %q", got)
			}
			recs := r.records()
			for i, rec := range recs {
				if rec.Source != events.SourceLibrary || rec.Attempt != i+1 || rec.RequestedModel != p.heavy || rec.RequestID != recs[0].RequestID {
					t.Fatalf("record %d: %+v", i, rec)
				}
			}
			if recs[1].FallbackFrom != p.heavy || recs[1].Status != 200 || recs[0].Class != "capacity" {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

// Quota and auth fail at once, and the SDK reports its own typed error with
// the provider's status.
func TestFailFast(t *testing.T) {
	cases := []struct {
		kind   string
		p      protocol
		status int
	}{
		{"quota", chat, 429},
		{"auth", chat, 401},
		{"quota", respStream, 429},
		{"auth", msgs, 401},
		{"quota", msgsStream, 400}, // Anthropic says "credit balance is too low" with a 400
	}
	for _, c := range cases {
		t.Run(c.kind+" "+c.p.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.fault(t, sim.Fault{Model: "*", Kind: c.kind, Count: -1})
			_, _, err := c.p.call(testCtx(t), r, c.p.heavy, "hi")
			var status int
			var hr *http.Response
			var oe *openai.Error
			var ae *anthropic.Error
			switch {
			case errors.As(err, &oe):
				status, hr = oe.StatusCode, oe.Response
			case errors.As(err, &ae):
				status, hr = ae.StatusCode, ae.Response
			default:
				t.Fatalf("err %T %v, want the SDK's typed error", err, err)
			}
			if status != c.status {
				t.Fatalf("status %d, want %d", status, c.status)
			}
			if n := len(r.records()); n != 1 {
				t.Fatalf("%d attempts for a fail-fast class, want 1", n)
			}
			if got := hr.Header.Get("X-Spillway-Route"); got != c.p.heavy+":"+c.kind || hr.Header.Get("X-Should-Retry") != "false" {
				t.Fatalf("headers %v", hr.Header)
			}
		})
	}
}

// When spillway gives up, an SDK gets the answer a gateway would give: its
// provider's error shape with spillway's account (the SDK's typed error);
// Call's error unwraps to the *classify.Failure and to the transport error.
func TestGivingUp(t *testing.T) {
	t.Run("a persisting transport error", func(t *testing.T) {
		r := newRig(t, nil)
		r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "reset", Count: -1})
		_, hr, err := chat.call(testCtx(t), r, "gpt-6-astra", "hi")
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 502 || !strings.Contains(oe.Message, "spillway: network") ||
			hr.Header.Get("X-Spillway-Route") != "gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network > gpt-6-astra:network" {
			t.Fatalf("err %v", err)
		}
		// the provider answered nothing for a minute and its connections
		// fail: the next request is refused at once, as network
		_, hr, err = chat.call(testCtx(t), r, "gpt-6.1-sol", "hi")
		if !errors.As(err, &oe) || oe.StatusCode != 502 || !strings.Contains(oe.Message, "openai is unreachable") ||
			hr.Header.Get("X-Spillway-Route") != "gpt-6.1-sol:network" || hr.Header.Get("X-Spillway-Attempts") != "0" || r.received("gpt-6.1-sol") != 0 {
			t.Fatalf("err %v, route %q", err, hr.Header.Get("X-Spillway-Route"))
		}
		r = newRig(t, nil)
		r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "reset", Count: -1})
		_, err = r.tr.Call(testCtx(t), r.url+"/v1/chat/completions", http.Header{"Authorization": {"Bearer k"}},
			map[string]any{"model": "gpt-6-astra", "messages": []any{}})
		var f *classify.Failure
		var te *transport.Error
		var op *net.OpError
		if !errors.As(err, &f) || f.Verdict.Class != classify.Network || !errors.As(err, &te) || te.Err == nil || !errors.As(err, &op) ||
			te.Status != 502 || !strings.Contains(te.Route, "gpt-6-astra:network") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("every model full, on a stream", func(t *testing.T) {
		r := newRig(t, nil, transport.WithBudget(100*time.Millisecond))
		for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
			r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
		}
		_, hr, err := respStream.call(testCtx(t), r, "gpt-6-astra", "hi")
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 503 || !strings.Contains(oe.Message, "tried gpt-6-astra (capacity), gpt-6.1-sol (capacity), gpt-6-luna (capacity)") {
			t.Fatalf("err %v", err)
		}
		if got := hr.Header.Get("X-Spillway-Route"); !strings.HasPrefix(got, "gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity") || hr.Header.Get("X-Spillway-Model") != "" {
			t.Fatalf("headers %v", hr.Header)
		}
	})
}

func TestCall(t *testing.T) {
	header := http.Header{"Authorization": {"Bearer sk-test-key-0123456789"}}
	body := map[string]any{"model": "gpt-6-astra", "messages": []map[string]string{{"role": "user", "content": "script"}}}

	t.Run("answer from the fallback model", func(t *testing.T) {
		r := newRig(t, nil)
		r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
		a, err := r.tr.Call(testCtx(t), r.url+"/v1/chat/completions", header, body)
		if err != nil || !strings.Contains(string(a.Body), sim.Answer("gpt-6.1-sol", "script", 16)) {
			t.Fatalf("%v %+v", err, a)
		}
		if a.Model != "gpt-6.1-sol" || a.Route != "gpt-6-astra:capacity > gpt-6.1-sol:ok" || a.Attempts != 2 || a.RequestID != r.records()[0].RequestID {
			t.Fatalf("answer %+v", a)
		}
	})
	t.Run("every model full", func(t *testing.T) {
		r := newRig(t, nil, transport.WithBudget(300*time.Millisecond))
		for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
			r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
		}
		_, err := r.tr.Call(testCtx(t), r.url+"/v1/chat/completions", header, body)
		var f *classify.Failure
		if !errors.As(err, &f) || f.Verdict.Class != classify.Capacity {
			t.Fatalf("err %v", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity") || !strings.Contains(msg, "capacity") {
			t.Fatalf("message %q", msg)
		}
		var te *transport.Error
		if !errors.As(err, &te) || te.Status != 503 || len(te.Body) == 0 {
			t.Fatalf("%+v", te)
		}
	})
	t.Run("park instead of sleeping a rung", func(t *testing.T) {
		r := newRig(t, nil)
		for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
			r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
		}
		_, err := r.tr.Call(testCtx(t), r.url+"/v1/chat/completions", header, body, transport.Park([]time.Duration{time.Minute, time.Hour}, 1))
		var te *transport.Error
		if !errors.As(err, &te) || te.Verdict.Class != classify.Capacity || te.ParkUntil.Sub(r.tr.Engine().Clock().Now()) != time.Hour {
			t.Fatalf("err %v", err)
		}
		if n := len(r.records()); n != 3 {
			t.Fatalf("%d attempts before parking, want one walk of the chain", n)
		}
	})
	t.Run("no fallback", func(t *testing.T) {
		r := newRig(t, nil, transport.WithNoFallback(), transport.WithBudget(150*time.Millisecond))
		r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
		if _, err := r.tr.Call(testCtx(t), r.url+"/v1/chat/completions", header, body); err == nil {
			t.Fatal("no error")
		}
		for _, rec := range r.records() {
			if rec.Model != "gpt-6-astra" {
				t.Fatalf("switched model: %+v", rec)
			}
		}
		if r.received("gpt-6.1-sol") != 0 || len(r.records()) < 2 {
			t.Fatalf("records %+v", r.records())
		}
	})
}

// Bodies are replayed for every attempt whether or not the request can
// rewind its own body.
func TestBodyRewound(t *testing.T) {
	for _, getBody := range []bool{true, false} {
		name := map[bool]string{true: "with GetBody", false: "without GetBody"}[getBody]
		t.Run(name, func(t *testing.T) {
			r := newRig(t, nil)
			r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: 1})
			r.fault(t, sim.Fault{Model: "gpt-6.1-sol", Kind: "reset", Count: 1})
			body := `{"model":"gpt-6-astra","messages":[{"role":"user","content":"rewind"}]}`
			var rd io.Reader = strings.NewReader(body)
			if !getBody {
				rd = struct{ io.Reader }{rd} // a reader NewRequest cannot rewind
			}
			req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, r.url+"/v1/chat/completions", rd)
			if (req.GetBody != nil) != getBody {
				t.Fatal("test setup")
			}
			req.Header.Set("Authorization", "Bearer sk-test-key-0123456789")
			req.Header.Set("X-Spillway-Min-Tier", "medium")
			res, err := (&http.Client{Transport: r.tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.Contains(string(b), sim.Answer("gpt-6.1-sol", "rewind", 16)) {
				t.Fatalf("%d %s", res.StatusCode, b)
			}
			if got := r.route(); got != "gpt-6-astra:capacity > gpt-6.1-sol:network > gpt-6.1-sol:ok" {
				t.Fatalf("route %q", got)
			}
			if r.received("gpt-6-astra") != 1 || r.received("gpt-6.1-sol") != 2 {
				t.Fatalf("received astra %d sol %d", r.received("gpt-6-astra"), r.received("gpt-6.1-sol"))
			}
		})
	}
}

// Requests the transport does not manage go to the base transport as they
// are, and leave no records.
func TestPassThrough(t *testing.T) {
	r := newRig(t, nil)
	client := &http.Client{Transport: r.tr}
	res, err := client.Get(r.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res2, err := client.Post(r.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	if res.StatusCode != 200 || res2.StatusCode != 400 || res2.Header.Get("X-Spillway-Route") != "" || len(b) == 0 {
		t.Fatalf("%d %d %v %s", res.StatusCode, res2.StatusCode, res2.Header, b)
	}
	if n := len(r.records()); n != 0 {
		t.Fatalf("%d records for unmanaged requests", n)
	}
}

// Once output has started the stream is the caller's: a break after it
// reaches the SDK, and the attempt's record says network.
func TestBreakAfterOutputReachesCaller(t *testing.T) {
	three := 3
	for _, p := range []protocol{chatStream, msgsStream} {
		t.Run(p.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.fault(t, sim.Fault{Model: p.heavy, Kind: "reset", AfterTokens: &three})
			text, _, err := p.call(testCtx(t), r, p.heavy, "cut short")
			if err == nil {
				t.Fatalf("no error; text %q", text)
			}
			if recs := r.records(); len(recs) != 1 || recs[0].Class != "network" || recs[0].Status != 200 {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

// A caller that cancels its request while reading a stream gets its own
// context.Canceled back, and the record says it was cancelled, not that the
// network failed.
func TestCallerCancelsAStream(t *testing.T) {
	r := newRig(t, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "slow", Count: -1, DelayMS: 20})
	ctx, cancel := context.WithCancel(testCtx(t))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-6-luna","stream":true,"messages":[{"role":"user","content":"long"}]}`))
	req.Header.Set("Authorization", "Bearer sk-test-key-0123456789")
	resp, err := (&http.Client{Transport: r.tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error %v", err)
	}
	if recs := r.records(); len(recs) != 1 || recs[0].Class != "unknown" || !strings.Contains(recs[0].Error, "cancelled by the caller") || !recs[0].CallerEnded {
		t.Fatalf("records %+v", recs)
	}
}

// The library's page of the docs (docs/library.md, which the README links
// to) shows the library with Example_readme's body, word for word: the
// example compiles, so the page's does.
func TestReadmeExampleIsThisExample(t *testing.T) {
	readme, err := os.ReadFile("../docs/library.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	if i := strings.Index(section, "# The Go library"); i >= 0 {
		section = section[i:]
	} else {
		t.Fatal("docs/library.md has no heading \"The Go library\"")
	}
	start := strings.Index(section, "```go\n")
	if start < 0 {
		t.Fatal("no ```go block in docs/library.md")
	}
	end := strings.Index(section[start+6:], "\n```")
	if end < 0 {
		t.Fatal("the ```go block of docs/library.md does not end")
	}
	block := section[start+6 : start+6+end]
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var indented []string
	for _, l := range strings.Split(block, "\n") {
		if l != "" {
			l = "\t" + l
		}
		indented = append(indented, l)
	}
	if !strings.Contains(string(example), "func Example_readme() {\n"+strings.Join(indented, "\n")+"\n}\n") {
		t.Fatalf("the library example of docs/library.md is not Example_readme's body:\n%s", block)
	}
}

// WithClassifier's verdict decides: here a quota answer is read as
// capacity, so the next model answers.
func TestWithClassifier(t *testing.T) {
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "quota", Count: -1})
	cfg := config.Default()
	var seen []classify.Class
	tr := transport.New(cfg, transport.WithPacing(config.Pacing{MaxConcurrency: 8}), transport.WithClassifier(func(in classify.Input) classify.Verdict {
		v := classify.Classify(in)
		seen = append(seen, v.Class)
		if v.Class == classify.Quota {
			v.Class = classify.Capacity
		}
		return v
	}))
	if p := tr.Engine().Config().Pacing; p.MaxConcurrency != 8 || p.MinGap != 0 || cfg.Pacing.MaxConcurrency != 3 {
		t.Fatalf("engine pacing %+v, configuration's %+v", p, cfg.Pacing)
	}
	a, err := tr.Call(testCtx(t), hs.URL+"/v1/chat/completions", http.Header{"Authorization": {"Bearer k"}},
		map[string]any{"model": "gpt-6-astra", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if err != nil || a.Route != "gpt-6-astra:capacity > gpt-6.1-sol:ok" || len(seen) != 1 || seen[0] != classify.Quota {
		t.Fatalf("%v %+v seen %v", err, a, seen)
	}
}

// Each provider's key goes to that provider alone: a deployment or a model
// at another provider gets its own key (never the caller's), a URL of the
// caller's own never gets a configured key, and a caller that names no key
// gets the addressed provider's.
func TestKeysGoToTheirOwnProvider(t *testing.T) {
	type seen struct{ host, auth, query string }
	cases := []struct {
		name       string
		callerKey  string
		callerURL  string // "us", "eu" or "own": where the caller points
		deploy     bool   // gpt-6-astra deployed at us (passthrough) and eu (auth: key)
		usFull     bool   // us answers capacity for gpt-6-astra
		usKeyAuth  bool   // us has auth: key (else passthrough)
		want       []seen // each request upstream, in order
		wantAnswer int
	}{
		{"a deployment at another provider gets that provider's key, not the caller's", "sk-caller-0123456789", "us", true, true, false,
			[]seen{{"us", "Bearer sk-caller-0123456789", ""}, {"eu", "", "api-version=2024-10-21"}}, 200},
		{"a caller's own URL never gets a configured key", "sk-caller-0123456789", "own", false, false, true,
			[]seen{{"own", "Bearer sk-caller-0123456789", ""}}, 200},
		{"a caller that names no key gets the addressed provider's own", "", "us", false, false, false,
			[]seen{{"us", "Bearer sk-us-own-0123456789", ""}}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []seen
			serve := func(name string, full bool) string {
				srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0})
				if err != nil {
					t.Fatal(err)
				}
				if full {
					if err := srv.AddFault(sim.Fault{Kind: "capacity", Model: "gpt-6-astra", Count: -1}); err != nil {
						t.Fatal(err)
					}
				}
				hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					auth := req.Header.Get("Authorization")
					if k := req.Header.Get("Api-Key"); k != "" {
						auth = "api-key " + k
					}
					mu.Lock()
					got = append(got, seen{name, auth, req.URL.RawQuery})
					mu.Unlock()
					srv.Handler().ServeHTTP(w, req)
				}))
				t.Cleanup(func() { srv.Close(); hs.Close() })
				return hs.URL
			}
			us, eu, own := serve("us", c.usFull), serve("eu", false), serve("own", false)
			t.Setenv("EU_KEY", "sk-eu-own-0123456789")
			cfg := config.Default()
			cfg.Pacing = config.Pacing{MaxConcurrency: 8}
			cfg.Breaker.Failures, cfg.Breaker.Consecutive = 1000, 0
			cfg.Providers["openai"] = config.Provider{Type: "openai", BaseURL: us + "/v1", Auth: "passthrough", APIKey: config.Secret{Ref: "env:US_KEY", Value: "sk-us-own-0123456789"}}
			if c.usKeyAuth {
				p := cfg.Providers["openai"]
				p.Auth = "key"
				cfg.Providers["openai"] = p
			}
			cfg.Providers["openai-eu"] = config.Provider{Type: "openai", BaseURL: eu + "/v1", Auth: "key", KeyHeader: "api-key", Query: "api-version=2024-10-21",
				APIKey: config.Secret{Ref: "env:EU_KEY", Value: "sk-eu-own-0123456789"}}
			if c.deploy {
				m := cfg.Models["gpt-6-astra"]
				m.Provider = ""
				m.Deployments = []config.Deployment{{Name: "us", Provider: "openai"}, {Name: "eu", Provider: "openai-eu"}}
				cfg.Models["gpt-6-astra"] = m
			}
			engine := policy.New(cfg, policy.WithClock(policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))))
			client := &http.Client{Transport: transport.New(cfg, transport.WithEngine(engine))}
			base := map[string]string{"us": us, "eu": eu, "own": own}[c.callerURL]
			req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, base+"/v1/chat/completions",
				strings.NewReader(`{"model":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Content-Type", "application/json")
			if c.callerKey != "" {
				req.Header.Set("Authorization", "Bearer "+c.callerKey)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != c.wantAnswer {
				t.Fatalf("status %d", res.StatusCode)
			}
			if c.deploy && c.want[len(c.want)-1].host == "eu" {
				c.want[len(c.want)-1].auth = "api-key sk-eu-own-0123456789"
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(c.want) {
				t.Fatalf("upstream saw %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("request %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

// pacing.when: auto is always in the library (batch work): the second of
// two requests to a model starts min_gap and some jitter after the first.
func TestLibraryPacesFromTheFirstRequest(t *testing.T) {
	if got := transport.New(config.Default()).Engine().Pacing(); got != config.PaceAlways {
		t.Fatalf("the library's own engine paces %s", got)
	}
	pressure := config.Default()
	pressure.Pacing.When = config.PacePressure
	if got := transport.New(pressure).Engine().Pacing(); got != config.PacePressure {
		t.Fatalf("pacing.when: pressure gave %s", got)
	}
	// as batch work paces, on the fake clock
	_, url := startSim(t)
	cfg := config.Default()
	clk := policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var waits []int64
	tr := transport.New(cfg, transport.WithEngine(policy.New(cfg, policy.WithClock(clk), policy.ForBatchWork())),
		transport.WithEvents(events.SinkFunc(func(rec events.Record) { waits = append(waits, rec.WaitMS) })))
	for range 2 {
		if _, err := tr.Call(testCtx(t), url+"/v1/chat/completions", http.Header{"Authorization": {"Bearer k"}},
			map[string]any{"model": "gpt-6-luna", "messages": []map[string]string{{"role": "user", "content": "batch"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(waits) != 2 || waits[0] != 0 || waits[1] < 500 {
		t.Fatalf("waits %v: the second start should wait at least min_gap", waits)
	}
}

// The library holds a request's answers to gateway.max_body_mb, as a
// gateway does: a whole answer larger than that is the upstream's
// (answer_too_large), never sent to the same model again; each model is
// asked once and the caller gets the give-up, saying why.
func TestTheLibraryHoldsARequestToItsCap(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	big := `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("a", 3<<20) + `"},"finish_reason":"stop"}]}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Model string }
		json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		asked[b.Model]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, big)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, func(c *config.Config) {
		c.Gateway.MaxBodyMB = 1
		p := c.Providers["openai"]
		p.BaseURL = up.URL + "/v1"
		c.Providers["openai"] = p
	})
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, up.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-6-astra","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 500 || !strings.Contains(string(b), classify.TooLargePhrase) {
		t.Fatalf("%d: %.300s", resp.StatusCode, b)
	}
	mu.Lock()
	defer mu.Unlock()
	for m, n := range asked {
		if n != 1 {
			t.Fatalf("%s was asked %d times: %v", m, n, asked)
		}
	}
	if len(asked) != 3 {
		t.Fatalf("asked %v, want each model of the chain once", asked)
	}
}
