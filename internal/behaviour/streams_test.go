package behaviour_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// streamRows: streams that end well. A break after output ends in the
// protocol's error event (hold off), or restarts unseen (hold on), or, for
// a Messages answer through the gateway, is continued from what the client
// has; a malformed frame never reaches the client; the first-token limit
// and its hedge.
// signedIn is c as Claude Code logged in with a Claude plan sends it: an
// OAuth bearer and the oauth beta.
func signedIn(c call) call {
	c.Header = map[string]string{"Authorization": "Bearer sk-ant-oat01-behaviour-0123456789", "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,oauth-2025-04-20"}
	return c
}

func streamRows() []row {
	holdAll := func(model string) func(*config.Config) {
		return func(c *config.Config) {
			m := c.Models[model]
			m.Hold = config.Hold{Tokens: 1000} // the whole (16-token) answer
			c.Models[model] = m
		}
	}
	noPrefill := func(c *config.Config) {
		no := false
		m := c.Models["claude-opus-5-5"]
		m.Prefill = &no
		c.Models["claude-opus-5-5"] = m
	}
	firstToken := func(model string, hedge bool) func(*config.Config) {
		return func(c *config.Config) {
			m := c.Models[model]
			m.FirstTokenTimeout, m.Hedge = config.Duration(10*time.Second), hedge
			c.Models[model] = m
		}
	}
	hedge := func(on bool) func(*config.Config) { return firstToken("gpt-6-astra", on) }
	opus := sim.Answer("claude-opus-5-5", "hi", 16)
	three, zero := 3, 0
	return []row{
		{
			name:   "hold off: a stream cut after output ends in the protocol's error event, and its route does not say ok",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three}},
			call:   chat("gpt-6-luna", "hi", true),
			want:   want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:network", notBody: []string{"X-Spillway-Route: gpt-6-luna:ok"}},
		},
		{
			name:   "hold on: a stream cut inside the window restarts unseen; the client gets one complete answer",
			cfg:    holdAll("gpt-6-luna"),
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three, Count: 1}},
			call:   responses("gpt-6-luna", "hi", true),
			want: want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:network > gpt-6-luna:ok", text: sim.Answer("gpt-6-luna", "hi", 16),
				check: once("event: response.created")},
		},
		{
			name: "hold on: a stall inside the window (timeouts.idle of silence) restarts unseen",
			cfg: func(c *config.Config) {
				holdAll("gpt-6-luna")(c)
				c.Retry.TimeoutRetries, c.Retry.Budget = 1, config.Duration(time.Hour)
				// a first-token limit of another length: the tick fires the idle one, after output
				c.Timeouts.FirstToken = config.Duration(time.Minute)
			},
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "stall", AfterTokens: &three, Count: 1}},
			call:   chat("gpt-6-luna", "hi", true),
			tick: func(ctx context.Context, w *world) {
				w.waitReceived(ctx, "gpt-6-luna", 1)
				fireIdle(2*time.Minute)(ctx, w)
			},
			want: want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:timeout > gpt-6-luna:ok", text: sim.Answer("gpt-6-luna", "hi", 16),
				check: errorSays(0, "went silent for 2m0s (timeouts.idle)")},
		},
		{
			name:   "X-Spillway-Hold: when the window's time is up what was held goes out, though nothing new came; a stall after it is a break after output",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "stall", AfterTokens: &three, Count: 1}},
			call:   chat("gpt-6-luna", "hi", true).With("X-Spillway-Hold", "5s"),
			tick: func(ctx context.Context, w *world) {
				advanceWhenReceived("gpt-6-luna", 5*time.Second)(ctx, w) // the window's end: delivered
				fireIdle(2*time.Minute)(ctx, w)                          // then the idle watchdog
			},
			want: want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:timeout",
				check: func(t *testing.T, w *world, res result) {
					// what had come when the window ended (at least the first
					// output, which opened it), and at most the three sent
					sent := strings.Join(sim.Tokens(sim.Answer("gpt-6-luna", "hi", 16))[:3], "")
					if got := text(res.body); got == "" || !strings.HasPrefix(sent, got) {
						t.Fatalf("the client got %q, want what was held of %q", got, sent)
					}
					errorSays(0, "went silent for 2m0s (timeouts.idle) after output started")(t, w, res)
				}},
		},
		{
			name:   "X-Spillway-Hold: 0 turns a model's hold window off",
			cfg:    holdAll("gpt-6-luna"),
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "reset", AfterTokens: &three, Count: 1}},
			call:   chat("gpt-6-luna", "hi", true).With("X-Spillway-Hold", "0"),
			want:   want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:network"},
		},
		{
			name:   "a malformed frame after output never reaches the client: the stream ends in the protocol's error",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "malformed", AfterTokens: &three}},
			call:   responses("gpt-6-luna", "hi", true),
			want: want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:server_error",
				notBody: []string{"\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"unterminated\n", "garbage"}},
		},
		{
			name:   "a malformed frame inside a hold window: restarted, one complete answer",
			cfg:    holdAll("gpt-6-luna"),
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "malformed", AfterTokens: &three, Count: 1}},
			call:   responses("gpt-6-luna", "hi", true),
			want: want{status: 200, model: "gpt-6-luna", route: "gpt-6-luna:server_error > gpt-6-luna:ok", text: sim.Answer("gpt-6-luna", "hi", 16),
				notBody: []string{"unterminated", "garbage"}, check: once("event: response.created")},
		},
		{
			name:   "gemini: gemini-3-pro full, a whole answer comes from gemini-3-flash",
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "capacity", Count: -1}},
			call:   gemini("gemini-3-pro", "hi", false),
			want:   want{status: 200, model: "gemini-3-flash", route: "gemini-3-pro:capacity > gemini-3-flash:ok", text: sim.Answer("gemini-3-flash", "hi", 16)},
		},
		{
			name:   "gemini stream: capacity before output goes to gemini-3-flash unseen",
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "capacity", Count: -1}},
			call:   gemini("gemini-3-pro", "hi", true),
			want:   want{status: 200, model: "gemini-3-flash", route: "gemini-3-pro:capacity > gemini-3-flash:ok", text: sim.Answer("gemini-3-flash", "hi", 16)},
		},
		{
			name:   "gemini stream: a cut after output is a broken stream, and its route does not say ok",
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "reset", AfterTokens: &three}},
			call:   gemini("gemini-3-pro", "hi", true),
			want:   want{status: 200, model: "gemini-3-pro", broken: true, route: "gemini-3-pro:network"},
		},
		{
			name:   "gemini stream: through the gateway, the cut stream ends in Gemini's error object",
			only:   "gateway",
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "reset", AfterTokens: &three}},
			call:   gemini("gemini-3-pro", "hi", true),
			want: want{status: 200, model: "gemini-3-pro", broken: true, route: "gemini-3-pro:network",
				check: func(t *testing.T, _ *world, res result) {
					if !bytes.Contains(res.body, []byte(`"status":"INTERNAL"`)) && !bytes.Contains(res.body, []byte(`"status":"UNAVAILABLE"`)) {
						t.Fatalf("no Gemini error object at the end:\n%s", res.body)
					}
				}},
		},
		{
			name:   "gemini stream, hold on: a cut inside the window restarts unseen",
			cfg:    holdAll("gemini-3-pro"),
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "reset", AfterTokens: &three, Count: 1}},
			call:   gemini("gemini-3-pro", "hi", true),
			want:   want{status: 200, model: "gemini-3-pro", route: "gemini-3-pro:network > gemini-3-pro:ok", text: sim.Answer("gemini-3-pro", "hi", 16)},
		},
		{
			name:   "gemini stream: a malformed frame after output never reaches the client",
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "malformed", AfterTokens: &three}},
			call:   gemini("gemini-3-pro", "hi", true),
			want:   want{status: 200, model: "gemini-3-pro", broken: true, route: "gemini-3-pro:server_error", notBody: []string{"unterminated", "garbage"}},
		},
		{
			name:   "gemini stream: one that ends without a finishReason is not a complete answer",
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "truncated", AfterTokens: &three}},
			call:   gemini("gemini-3-pro", "hi", true),
			want:   want{status: 200, model: "gemini-3-pro", broken: true, route: "gemini-3-pro:network"},
		},
		{
			name:   "gemini stream: first-token limit: past it, gemini-3-flash before the client sees a byte",
			cfg:    firstToken("gemini-3-pro", false),
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "stall", AfterTokens: &zero, Count: 1}},
			call:   gemini("gemini-3-pro", "hi", true),
			tick:   advanceWhenReceived("gemini-3-pro", 10*time.Second),
			want: want{status: 200, model: "gemini-3-flash", route: "gemini-3-pro:timeout > gemini-3-flash:ok", text: sim.Answer("gemini-3-flash", "hi", 16),
				check: errorSays(0, "no output within 10s (models.gemini-3-pro.first_token_timeout)")},
		},
		{
			name:   "gemini stream: hedge: gemini-3-flash starts beside a silent gemini-3-pro and answers",
			cfg:    firstToken("gemini-3-pro", true),
			faults: []sim.Fault{{Model: "gemini-3-pro", Kind: "stall", AfterTokens: &zero, Count: 1}},
			call:   gemini("gemini-3-pro", "hi", true),
			tick:   advanceWhenReceived("gemini-3-pro", 10*time.Second),
			want: want{status: 200, model: "gemini-3-flash", route: "gemini-3-pro:hedge_lost > gemini-3-flash:ok", text: sim.Answer("gemini-3-flash", "hi", 16),
				check: func(t *testing.T, w *world, res result) {
					if n := len(w.records()); n != 2 {
						t.Fatalf("%d records, want both attempts", n)
					}
				}},
		},
		{
			name:   "a stream that ends cleanly without its final event is not a complete answer",
			faults: []sim.Fault{{Model: "gpt-6-luna", Kind: "truncated", AfterTokens: &three}},
			call:   chat("gpt-6-luna", "hi", true),
			want:   want{status: 200, model: "gpt-6-luna", broken: true, route: "gpt-6-luna:network"},
		},
		{
			name:   "continuation: a Messages stream cut after output goes on from what the client has; one coherent answer",
			only:   "gateway",
			faults: []sim.Fault{{Model: "claude-opus-5-5", Kind: "reset", AfterTokens: &five, Count: 1}},
			call:   messages("claude-opus-5-5", "hi", true),
			want: want{status: 200, model: "claude-opus-5-5", route: "claude-opus-5-5:network > claude-opus-5-5:ok", header: "claude-opus-5-5:streaming", text: opus,
				check: func(t *testing.T, w *world, res result) {
					once("event: message_start")(t, w, res)
					once("event: message_stop")(t, w, res)
					if n := w.received("claude-opus-5-5"); n != 2 {
						t.Fatalf("opus received %d requests, want the answer and its continuation", n)
					}
				}},
		},
		{
			name:   "a sign-in (Claude Code's login) is never continued: a stream cut after output ends in the protocol's error event, no request of spillway's own",
			only:   "gateway",
			faults: []sim.Fault{{Model: "claude-opus-5-5", Kind: "reset", AfterTokens: &five, Count: 1}},
			call:   signedIn(messages("claude-opus-5-5", "hi", true)),
			want: want{status: 200, model: "claude-opus-5-5", broken: true, route: "claude-opus-5-5:network",
				check: func(t *testing.T, w *world, res result) {
					if n := w.received("claude-opus-5-5"); n != 1 {
						t.Fatalf("opus received %d requests, want the client's one", n)
					}
				}},
		},
		{
			name:   "a sign-in is never hedged: past the first-token limit the silent model is given up, then the next answers",
			cfg:    firstToken("claude-opus-5-5", true),
			faults: []sim.Fault{{Model: "claude-opus-5-5", Kind: "stall", AfterTokens: &zero, Count: 1}},
			call:   signedIn(messages("claude-opus-5-5", "hi", true)),
			tick:   advanceWhenReceived("claude-opus-5-5", 10*time.Second),
			want:   want{status: 200, model: "claude-sonnet-5-5", route: "claude-opus-5-5:timeout > claude-sonnet-5-5:ok", text: sim.Answer("claude-sonnet-5-5", "hi", 16)},
		},
		{
			name:   "with an API key the same stall is hedged",
			cfg:    firstToken("claude-opus-5-5", true),
			faults: []sim.Fault{{Model: "claude-opus-5-5", Kind: "stall", AfterTokens: &zero, Count: 1}},
			call:   messages("claude-opus-5-5", "hi", true),
			tick:   advanceWhenReceived("claude-opus-5-5", 10*time.Second),
			want:   want{status: 200, model: "claude-sonnet-5-5", route: "claude-opus-5-5:hedge_lost > claude-sonnet-5-5:ok", text: sim.Answer("claude-sonnet-5-5", "hi", 16)},
		},
		{
			name:   "continuation: an overload mid-answer goes on from what the client has, on the same model when it is the last",
			only:   "gateway",
			faults: []sim.Fault{{Model: "claude-haiku-5-5", Kind: "midstream"}},
			call:   messages("claude-haiku-5-5", "hi", true),
			want: want{status: 200, model: "claude-haiku-5-5", route: "claude-haiku-5-5:capacity > claude-haiku-5-5:ok", header: "claude-haiku-5-5:streaming",
				text: sim.Answer("claude-haiku-5-5", "hi", 16), notBody: []string{"overloaded_error"}},
		},
		{
			name:   "continuation: a model with prefill: false is never sent one; the next model goes on",
			only:   "gateway",
			cfg:    noPrefill,
			faults: []sim.Fault{{Model: "claude-opus-5-5", Kind: "reset", AfterTokens: &five, Count: 1}},
			call:   messages("claude-opus-5-5", "hi", true),
			want: want{status: 200, model: "claude-opus-5-5", route: "claude-opus-5-5:network > claude-sonnet-5-5:ok", header: "claude-opus-5-5:streaming",
				text: strings.Join(sim.Tokens(opus)[:5], "") + strings.Join(sim.Tokens(sim.Answer("claude-sonnet-5-5", "hi", 16))[5:], ""),
				check: func(t *testing.T, w *world, _ result) {
					if n := w.received("claude-opus-5-5"); n != 1 {
						t.Fatalf("opus (prefill: false) received %d requests", n)
					}
				}},
		},
		{
			name: "continuation: a fallback that rejects an assistant prefill (400) is passed over, and remembered",
			only: "gateway",
			cfg:  noPrefill,
			faults: []sim.Fault{{Model: "claude-opus-5-5", Kind: "reset", AfterTokens: &five, Count: 1},
				{Model: "claude-sonnet-5-5", Kind: "bad_request", Message: "This model does not support assistant message prefill. The conversation must end with a user message.", Count: 1}},
			call: messages("claude-opus-5-5", "hi", true),
			want: want{status: 200, model: "claude-opus-5-5", header: "claude-opus-5-5:streaming",
				route: "claude-opus-5-5:network > claude-sonnet-5-5:bad_request > claude-haiku-5-5:ok",
				text:  strings.Join(sim.Tokens(opus)[:5], "") + strings.Join(sim.Tokens(sim.Answer("claude-haiku-5-5", "hi", 16))[5:], "")},
		},
		{
			name:   "continuation: when it breaks again and again, the stream ends in the protocol's error event after three",
			only:   "gateway",
			faults: []sim.Fault{{Model: "claude-haiku-5-5", Kind: "reset", AfterTokens: &three, Count: -1}},
			call:   messages("claude-haiku-5-5", "hi", true),
			want: want{status: 200, model: "claude-haiku-5-5", broken: true, header: "claude-haiku-5-5:streaming",
				route: "claude-haiku-5-5:network > claude-haiku-5-5:network > claude-haiku-5-5:network > claude-haiku-5-5:network",
				body:  []string{"continued 3 times already"}, notBody: []string{"message_stop"},
				check: func(t *testing.T, _ *world, res result) {
					// no gap, no repeat: four pieces of three tokens, in order
					if got, want := text(res.body), strings.Join(sim.Tokens(sim.Answer("claude-haiku-5-5", "hi", 16))[:12], ""); got != want {
						t.Fatalf("text %q, want %q", got, want)
					}
				}},
		},
		{
			name:   "first-token limit: past it, the next model before the client sees a byte",
			cfg:    hedge(false),
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "stall", AfterTokens: &zero, Count: 1}},
			call:   responses("gpt-6-astra", "hi", true),
			tick:   advanceWhenReceived("gpt-6-astra", 10*time.Second),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:timeout > gpt-6.1-sol:ok", text: sim.Answer("gpt-6.1-sol", "hi", 16),
				check: errorSays(0, "no output within 10s (models.gpt-6-astra.first_token_timeout)")},
		},
		{
			name:   "hedge: past the first-token limit the next model starts beside it; the first to answer answers, both count",
			cfg:    hedge(true),
			faults: []sim.Fault{{Model: "gpt-6-astra", Kind: "stall", AfterTokens: &zero, Count: 1}},
			call:   responses("gpt-6-astra", "hi", true),
			tick:   advanceWhenReceived("gpt-6-astra", 10*time.Second),
			want: want{status: 200, model: "gpt-6.1-sol", route: "gpt-6-astra:hedge_lost > gpt-6.1-sol:ok", text: sim.Answer("gpt-6.1-sol", "hi", 16),
				check: func(t *testing.T, w *world, res result) {
					once("event: response.created")(t, w, res)
					if n := len(w.records()); n != 2 {
						t.Fatalf("%d records, want both attempts", n)
					}
				}},
		},
	}
}

// once checks that the body holds s exactly once.
func once(s string) func(*testing.T, *world, result) {
	return func(t *testing.T, _ *world, res result) {
		if n := bytes.Count(res.body, []byte(s)); n != 1 {
			t.Fatalf("the body holds %q %d times:\n%s", s, n, clip(res.body))
		}
	}
}
