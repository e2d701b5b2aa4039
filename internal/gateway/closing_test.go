package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/sim"
)

// teeClient is an HTTP client that keeps a copy of every answer's body as
// its reader reads it: what an SDK read, byte for byte.
type teeClient struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	last http.Header // the last answer's
}

func (c *teeClient) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		c.mu.Lock()
		c.last = resp.Header
		c.mu.Unlock()
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, (*teeWriter)(c)), resp.Body}
	}
	return resp, err
}

type teeWriter teeClient

func (w *teeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (c *teeClient) header(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last.Get(name)
}

func (c *teeClient) events(t *testing.T) []sse.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sseEvents(t, append([]byte(nil), c.buf.Bytes()...))
}

// responsesThroughSDK streams a Responses request for model through the
// official OpenAI Go SDK, feeding every event to its response accumulator
// (which refuses an event of another response than the stream's, as the
// Node SDK's "Lifecycle response identity changed" does, and an event
// whose fields are not of their types): the response it reconstructed, or
// the first error any of them gave.
func responsesThroughSDK(ctx context.Context, url, model string, tee *teeClient) (*oresponses.Response, error) {
	oa := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Transport: tee}))
	s := oa.Responses.NewStreaming(ctx, oresponses.ResponseNewParams{Model: model, Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var acc oresponses.ResponseAccumulator
	for s.Next() {
		var ev oresponses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(s.Current().RawJSON()), &ev); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", s.Current().RawJSON(), err)
		}
		if err := acc.AddEvent(ev); err != nil {
			return nil, fmt.Errorf("the accumulator refused %s: %w", s.Current().RawJSON(), err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return acc.ReconstructedResponse()
}

// created is what response.created said of the response.
type created struct {
	Response struct {
		ID        string `json:"id"`
		Model     string `json:"model"`
		CreatedAt int64  `json:"created_at"`
	} `json:"response"`
}

// lastSeq is the sequence_number of the event before the last.
func lastSeq(t *testing.T, evs []sse.Event) int64 {
	t.Helper()
	var e struct {
		Seq *int64 `json:"sequence_number"`
	}
	if err := json.Unmarshal(evs[len(evs)-2].Data, &e); err != nil || e.Seq == nil {
		t.Fatalf("the event before the last has no sequence_number: %s", evs[len(evs)-2].Data)
	}
	return *e.Seq
}

// A Responses stream cut after output ends with a response.failed that
// continues it: the id, model and created_at of its response.created, the
// next sequence_number, a whole response object (status failed, the output
// so far, the error, usage and incomplete_details). The official Go SDK's
// accumulator takes every event and reports the failure with spillway's
// message. The event is compared whole.
func TestResponsesStreamCutEndsInItsOwnResponse(t *testing.T) {
	three := 3
	t.Run("passed on as it came", func(t *testing.T) {
		r := newRig(t, nil, nil)
		r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tee := &teeClient{}
		resp, err := responsesThroughSDK(ctx, r.url, "gpt-6-luna", tee)
		const msg = "spillway: the upstream stream ended before its final event: unexpected EOF"
		if err != nil || resp.Status != "failed" || resp.Error.Message != msg || resp.Error.Code != "server_error" {
			t.Fatalf("the SDK: %v %+v", err, resp)
		}
		evs := tee.events(t)
		var c created
		if evs[0].Name != "response.created" || json.Unmarshal(evs[0].Data, &c) != nil || c.Response.ID == "" || c.Response.Model == "" || c.Response.CreatedAt == 0 {
			t.Fatalf("the stream opens with %s %s", evs[0].Name, evs[0].Data)
		}
		want := fmt.Sprintf(`{"type":"response.failed","sequence_number":%d,"response":{"id":%q,"object":"response","created_at":%d,"status":"failed","model":%q,"output":[],"error":{"code":"server_error","message":%q},"incomplete_details":null,"usage":null}}`,
			lastSeq(t, evs)+1, c.Response.ID, c.Response.CreatedAt, c.Response.Model, msg)
		if last := evs[len(evs)-1]; last.Name != "response.failed" || string(last.Data) != want {
			t.Fatalf("the stream ends with\n%s %s\nwant\nresponse.failed %s", last.Name, last.Data, want)
		}
	})
	for _, c := range []struct {
		name, code, msg string
		fault           sim.Fault
	}{
		{"translated from another vendor's stream, cut", "server_error", "spillway: the upstream stream ended before its final event: unexpected EOF",
			sim.Fault{Kind: "reset", AfterTokens: &three, Count: -1}},
		{"translated from another vendor's stream, its error event", "server_is_overloaded", "Overloaded",
			sim.Fault{Kind: "midstream", Count: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, spillTo("claude-sonnet-5-5"))
			fullVendor(t, r, "gpt-")
			c.fault.Model = "claude-sonnet-5-5"
			r.fault(t, c.fault)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tee := &teeClient{}
			resp, err := responsesThroughSDK(ctx, r.url, "gpt-6.1-sol", tee)
			if err != nil || resp.Status != "failed" || resp.Error.Message != c.msg {
				t.Fatalf("the SDK: %v %+v", err, resp)
			}
			evs := tee.events(t)
			var cr created
			if evs[0].Name != "response.created" || json.Unmarshal(evs[0].Data, &cr) != nil || cr.Response.ID == "" || cr.Response.Model != "claude-sonnet-5-5" {
				t.Fatalf("the stream opens with %s %s", evs[0].Name, evs[0].Data)
			}
			var item struct {
				Item struct{ ID string } `json:"item"`
			}
			var text strings.Builder
			for _, ev := range evs {
				var d struct{ Delta string }
				switch ev.Name {
				case "response.output_item.added":
					json.Unmarshal(ev.Data, &item)
				case "response.output_text.delta":
					json.Unmarshal(ev.Data, &d)
					text.WriteString(d.Delta)
				}
			}
			if text.Len() == 0 {
				t.Fatal("no output before the cut")
			}
			want := fmt.Sprintf(`{"type":"response.failed","sequence_number":%d,"response":{"id":%q,"object":"response","created_at":%d,"status":"failed","model":"claude-sonnet-5-5",`+
				`"output":[{"content":[{"annotations":[],"text":%q,"type":"output_text"}],"id":%q,"role":"assistant","status":"incomplete","type":"message"}],`+
				`"error":{"code":%q,"message":%q},"incomplete_details":null,`+
				// the usage the target reported before the cut (its message_start's)
				`"usage":{"input_tokens":33,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":34}}}`,
				lastSeq(t, evs)+1, cr.Response.ID, cr.Response.CreatedAt, text.String(), item.Item.ID, c.code, c.msg)
			if last := evs[len(evs)-1]; last.Name != "response.failed" || string(last.Data) != want {
				t.Fatalf("the stream ends with\n%s %s\nwant\nresponse.failed %s", last.Name, last.Data, want)
			}
			if out := resp.Output; len(out) != 1 || out[0].Status != "incomplete" || out[0].Content[0].Text != text.String() {
				t.Fatalf("the SDK's output so far: %+v", out)
			}
		})
	}
	t.Run("given up before any output", func(t *testing.T) {
		r := newRig(t, nil, func(c *config.Config) { c.Retry.Budget = 0 })
		for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
			r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tee := &teeClient{}
		resp, err := responsesThroughSDK(ctx, r.url, "gpt-6-astra", tee)
		const msg = "spillway: capacity: every model of the chain is at capacity; tried gpt-6-astra (capacity), gpt-6.1-sol (capacity), gpt-6-luna (capacity) in 3 attempts; waited 0s; last upstream message: Our servers are currently overloaded. Please try again later."
		if err != nil || resp.Status != "failed" || resp.Error.Code != "invalid_prompt" || resp.Error.Message != msg {
			t.Fatalf("the SDK: %v %+v", err, resp)
		}
		evs := tee.events(t)
		if len(evs) != 2 {
			t.Fatalf("the give-up is %d events, want 2: %+v", len(evs), evs)
		}
		var f struct {
			Response struct{ ID string } `json:"response"`
		}
		json.Unmarshal(evs[1].Data, &f)
		id, at := f.Response.ID, r.clk.Now().Unix()
		want := fmt.Sprintf(`{"type":"response.created","sequence_number":0,"response":{"id":%q,"object":"response","created_at":%d,"status":"in_progress","model":"gpt-6-astra","output":[],"error":null,"incomplete_details":null,"usage":null}}`, id, at)
		if evs[0].Name != "response.created" || string(evs[0].Data) != want {
			t.Fatalf("the give-up opens with\n%s %s\nwant\nresponse.created %s", evs[0].Name, evs[0].Data, want)
		}
		want = fmt.Sprintf(`{"type":"response.failed","sequence_number":1,"response":{"id":%q,"object":"response","created_at":%d,"status":"failed","model":"gpt-6-astra","output":[],"error":{"code":"invalid_prompt","message":%q},"incomplete_details":null,"usage":null}}`, id, at, msg)
		if evs[1].Name != "response.failed" || string(evs[1].Data) != want || id != "resp_spillway_"+tee.header("X-Spillway-Request-Id") {
			t.Fatalf("the give-up ends with\n%s %s\nwant\nresponse.failed %s", evs[1].Name, evs[1].Data, want)
		}
	})
}

// The other formats' closing events, after a cut past output, each
// compared whole and read by its vendor's Go SDK as that vendor's error
// (never a decoding failure): a Chat chunk's error object, Messages' event:
// error (a stream cut again and again: no continuation left), Gemini's
// error object.
func TestOtherFormatsCutStreamsEndInTheirOwnError(t *testing.T) {
	three := 3
	const msg = "spillway: the upstream stream ended before its final event: unexpected EOF"
	t.Run("chat", func(t *testing.T) {
		r := newRig(t, nil, nil)
		r.fault(t, sim.Fault{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tee := &teeClient{}
		oa := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Transport: tee}))
		s := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-6-luna", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		want := `{"error":{"code":"stream_interrupted","message":"` + msg + `","param":null,"type":"server_error"}}`
		// the SDK's own words for an error chunk: the error, not a decoding failure
		if err := s.Err(); err == nil || err.Error() != "received error while streaming: "+strings.TrimSuffix(strings.TrimPrefix(want, `{"error":`), "}") || len(acc.Choices) == 0 || acc.Choices[0].Message.Content == "" {
			t.Fatalf("the SDK: %v, so far %+v", s.Err(), acc.Choices)
		}
		evs := tee.events(t)
		if last := evs[len(evs)-1]; last.Name != "" || string(last.Data) != want {
			t.Fatalf("the stream ends with %q %s\nwant %s", last.Name, last.Data, want)
		}
	})
	t.Run("messages", func(t *testing.T) {
		r := newRig(t, nil, nil)
		r.fault(t, sim.Fault{Model: "claude-haiku-5-5", Kind: "reset", AfterTokens: &three, Count: -1})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tee := &teeClient{}
		an := anthropic.NewClient(aoption.WithBaseURL(r.url), aoption.WithAPIKey("sk-ant-api03-test"), aoption.WithMaxRetries(0), aoption.WithHTTPClient(&http.Client{Transport: tee}))
		s := an.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-haiku-5-5", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		m := anthropic.Message{}
		for s.Next() {
			if err := m.Accumulate(s.Current()); err != nil {
				t.Fatalf("the accumulator: %v", err)
			}
		}
		var apiErr *anthropic.Error
		if !errors.As(s.Err(), &apiErr) || !strings.Contains(apiErr.Error(), `"type":"api_error"`) || len(m.Content) == 0 || m.Content[0].Text == "" {
			t.Fatalf("the SDK: %v, so far %+v", s.Err(), m.Content)
		}
		evs := tee.events(t)
		last := evs[len(evs)-1]
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(last.Data, &e)
		want := `{"error":{"message":` + mustJSON(e.Error.Message) + `,"type":"api_error"},"type":"error"}`
		if last.Name != "error" || string(last.Data) != want || !strings.HasPrefix(e.Error.Message, "spillway: network: the answer broke after output started and was continued 3 times already") {
			t.Fatalf("the stream ends with %q %s\nwant event: error %s", last.Name, last.Data, want)
		}
	})
	t.Run("gemini", func(t *testing.T) {
		r := newRig(t, nil, nil)
		r.fault(t, sim.Fault{Model: "gemini-3-flash", Kind: "reset", AfterTokens: &three})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tee := &teeClient{}
		c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "AIza-gemini-test-0123", Backend: genai.BackendGeminiAPI,
			HTTPClient: &http.Client{Transport: tee}, HTTPOptions: genai.HTTPOptions{BaseURL: r.url + "/", APIVersion: "v1beta"}})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		var gErr genai.APIError
		for chunk, err := range c.Models.GenerateContentStream(ctx, "gemini-3-flash", genai.Text("hi"), nil) {
			if err != nil {
				if !errors.As(err, &gErr) {
					t.Fatalf("the SDK: %v (not Gemini's error)", err)
				}
				break
			}
			text.WriteString(chunk.Text())
		}
		if gErr.Code != 500 || gErr.Status != "INTERNAL" || gErr.Message != msg || text.Len() == 0 {
			t.Fatalf("the SDK: %+v, so far %q", gErr, text.String())
		}
		evs := tee.events(t)
		want := `{"error":{"code":500,"message":"` + msg + `","status":"INTERNAL"}}`
		if last := evs[len(evs)-1]; last.Name != "" || string(last.Data) != want {
			t.Fatalf("the stream ends with %q %s\nwant %s", last.Name, last.Data, want)
		}
	})
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
