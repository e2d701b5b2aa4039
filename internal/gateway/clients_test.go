package gateway_test

// The real Codex CLI and Claude Code, and the official Go SDKs, through the
// gateway to the simulator with the heavy model full: each completes with
// the fallback model's answer, and the event log and headers show the route.
// The clients are skipped (failed when CI=true) when not installed; see
// scripts/install-clients. The gateway runs on the fake clock here too, but
// the clients are real processes with timers of their own: these tests wait
// on them in real time, and assert no bound on it.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/report"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/sim"
)

func routeOf(r *rig) []string {
	var out []string
	for _, rec := range r.records() {
		out = append(out, rec.Model+":"+rec.Class)
	}
	return out
}

// codex runs Codex against the gateway with gpt-6-astra and prompt.
func codex(t *testing.T, r *rig, prompt string) clienttest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return clienttest.RunCodex(t, ctx, clienttest.CodexOptions{BaseURL: r.url + "/v1", Model: "gpt-6-astra", Prompt: prompt, APIKey: "sk-codex-test-0123456789"})
}

func TestCodexThroughGateway(t *testing.T) {
	clienttest.Codex(t)
	// on the wall clock: the report matches the rollout's turn to the
	// log's request by their times
	r := newRigWith(t, nil, nil, func(o *gateway.Options) { o.Engine = policy.New(o.Config) })
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	prompt := "Reply with pong"
	res := codex(t, r, prompt)
	if res.ExitCode != 0 {
		t.Fatalf("codex exit %d\nstderr: %s", res.ExitCode, res.Stderr)
	}
	if want := sim.Answer("gpt-6.1-sol", prompt, 16); !strings.Contains(res.Stdout, want) {
		t.Fatalf("stdout %q lacks the fallback model's answer %q", res.Stdout, want)
	}
	if strings.Contains(res.Stderr, "at capacity") {
		t.Fatalf("Codex saw the capacity error: %s", res.Stderr)
	}
	if got := strings.Join(routeOf(r), " > "); got != "gpt-6-astra:capacity > gpt-6.1-sol:ok" {
		t.Fatalf("event log route %q", got)
	}
	// spillway report, given Codex's rollout and the gateway's log, counts
	// the turn once: the log's two attempts, the rollout's turn skipped
	log := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := events.NewWriter(log, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range r.records() {
		w.Write(rec)
	}
	w.Close(context.Background())
	rr, err := report.Build(context.Background(), report.Options{Only: []string{"spillway", "codex"}, EventLog: log, EventLogNamed: true, CodexHome: res.CodexHome, Loc: time.UTC})
	if err != nil || rr.Totals.Attempts != 2 {
		t.Fatalf("the report counts %+v (%v), want the gateway's 2 attempts", rr.Totals, err)
	}
	if in := rr.Inputs[len(rr.Inputs)-1]; in.Source != "codex" || in.Duplicates != 1 || in.Events != 0 {
		t.Fatalf("the rollout's input %+v, want its turn skipped as the log's", in)
	}
}

// gpt-6-astra served by two deployments (two simulators, pools of their
// own): with the first full, Codex is answered by the second, with no step
// down a tier.
func TestCodexThroughGatewayToASecondDeployment(t *testing.T) {
	clienttest.Codex(t)
	eu, err := sim.New(sim.Options{Seed: 2, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	euServer := httptest.NewServer(eu.Handler())
	t.Cleanup(func() { eu.Close(); euServer.Close() })
	r := newRig(t, nil, func(c *config.Config) {
		c.Providers["openai-eu"] = config.Provider{Type: "openai", BaseURL: euServer.URL + "/v1", Auth: "passthrough"}
		m := c.Models["gpt-6-astra"]
		m.Provider = ""
		m.Deployments = []config.Deployment{{Name: "us", Provider: "openai"}, {Name: "eu", Provider: "openai-eu"}}
		c.Models["gpt-6-astra"] = m
	})
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	prompt := "Reply with pong"
	res := codex(t, r, prompt)
	if res.ExitCode != 0 {
		t.Fatalf("codex exit %d\nstderr: %s", res.ExitCode, res.Stderr)
	}
	if want := sim.Answer("gpt-6-astra", prompt, 16); !strings.Contains(res.Stdout, want) || strings.Contains(res.Stderr, "at capacity") {
		t.Fatalf("stdout %q lacks the heavy model's answer %q; stderr %s", res.Stdout, want, res.Stderr)
	}
	var route []string
	for _, rec := range r.records() {
		route = append(route, rec.Model+"@"+rec.Deployment+":"+rec.Class)
	}
	if got := strings.Join(route, " > "); got != "gpt-6-astra@us:capacity > gpt-6-astra@eu:ok" {
		t.Fatalf("event log route %q", got)
	}
	if eu.Snapshot().Models["gpt-6-astra"].Served != 1 {
		t.Fatal("the second deployment did not answer")
	}
}

func TestCodexAllModelsFullPrintsCapacity(t *testing.T) {
	clienttest.Codex(t)
	r := newRig(t, nil, nil)
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
		r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}
	res := codex(t, r, "hi")
	// spillway's words, not Codex's fixed "Selected model is at capacity.
	// Please try a different model." (spillway tried them all)
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "ERROR: spillway: capacity: every model of the chain is at capacity; tried gpt-6-astra") ||
		strings.Contains(res.Stderr, "Please try a different model") {
		t.Fatalf("exit %d stderr %s", res.ExitCode, res.Stderr)
	}
	// and the rollout Codex keeps: its failure reads as capacity in spillway report
	rollouts, _ := filepath.Glob(filepath.Join(res.CodexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(rollouts) != 1 {
		t.Fatalf("rollouts %v", rollouts)
	}
	rr, err := report.Build(context.Background(), report.Options{Only: []string{"codex"}, CodexHome: res.CodexHome, Loc: time.UTC})
	if err != nil || rr.Totals.Capacity != 1 {
		t.Fatalf("the report reads Codex's failure as %+v (%v), want capacity", rr.Totals, err)
	}
	// the event form makes Codex stop at once instead of retrying the whole
	// chain four more times
	walks := 0
	for _, rec := range r.records() {
		if rec.Model == "gpt-6-astra" {
			walks++
		}
	}
	if reqIDs := distinctRequests(r); reqIDs != 1 {
		t.Fatalf("Codex sent %d requests; the gateway's failure should not make it retry", reqIDs)
	}
	if walks < 2 {
		t.Fatalf("the gateway walked the chain %d times before giving up", walks)
	}
}

// A chain that fails without a full model (every model answers 500) is
// walked once, and Codex gets the event form, not a 502: it prints
// spillway's words once and does not reconnect and resend.
func TestCodexAllModelsBrokenStopsOnce(t *testing.T) {
	clienttest.Codex(t)
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "*", Kind: "server_error", Count: -1})
	res := codex(t, r, "hi")
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "ERROR: spillway: server_error: every model of the chain failed (server_error), and none was full; tried gpt-6-astra") {
		t.Fatalf("exit %d stderr %s", res.ExitCode, res.Stderr)
	}
	if strings.Contains(res.Stderr, "Reconnecting") || distinctRequests(r) != 1 {
		t.Fatalf("Codex sent %d requests:\n%s", distinctRequests(r), res.Stderr)
	}
	if n := len(r.records()); n != 6 {
		t.Fatalf("%d attempts, want one walk (each model and its retry)", n)
	}
}

func distinctRequests(r *rig) int {
	seen := map[string]bool{}
	for _, rec := range r.records() {
		seen[rec.RequestID] = true
	}
	return len(seen)
}

// claude runs the real Claude Code through the gateway on claude-opus-5-5
// with its own retries off, and fails the test unless it exits 0; it gives
// what Claude printed.
func claude(t *testing.T, r *rig, prompt string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zero := 0
	res := clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: prompt, APIKey: "sk-ant-claude-test-0123", MaxRetries: &zero})
	if res.ExitCode != 0 {
		t.Fatalf("claude exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

func TestClaudeThroughGateway(t *testing.T) {
	clienttest.Claude(t)
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
	prompt := "Reply with pong"
	if out, want := claude(t, r, prompt), sim.Answer("claude-sonnet-5-5", prompt, 16); !strings.Contains(out, want) {
		t.Fatalf("stdout %q lacks the fallback model's answer %q", out, want)
	}
	route := strings.Join(routeOf(r), " > ")
	if !strings.HasPrefix(route, "claude-opus-5-5:capacity > claude-sonnet-5-5:ok") {
		t.Fatalf("event log route %q", route)
	}
}

// Claude Code logged in with a Claude plan (a login-shaped OAuth token):
// answered through the gateway by the next model when its own is full, the
// token passed through untouched to each.
func TestClaudeLoginThroughGateway(t *testing.T) {
	clienttest.Claude(t)
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zero := 0
	token := "sk-ant-oat01-login-shaped-0123456789"
	prompt := "Reply with pong"
	res := clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: prompt, OAuthToken: token, MaxRetries: &zero})
	if want := sim.Answer("claude-sonnet-5-5", prompt, 16); res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
		t.Fatalf("exit %d, stdout %q lacks %q\nstderr: %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}
	want := sim.Fingerprint(token, "")
	for _, m := range []string{"claude-opus-5-5", "claude-sonnet-5-5"} {
		got := r.sim.Snapshot().Models[m].Credentials
		if len(got) != 1 || got[want] == 0 {
			t.Fatalf("%s saw credentials %v, want the login's own", m, got)
		}
	}
}

func TestSDKsThroughGateway(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	oa := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	an := anthropic.NewClient(aoption.WithBaseURL(r.url), aoption.WithAPIKey("sk-ant-api03-test"), aoption.WithMaxRetries(0))
	prompt := "through the gateway"

	t.Run("openai chat", func(t *testing.T) {
		c, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-6-astra", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		if err != nil || c.Choices[0].Message.Content != sim.Answer("gpt-6.1-sol", prompt, 16) {
			t.Fatalf("%v %+v", err, c)
		}
	})
	t.Run("openai chat stream", func(t *testing.T) {
		s := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-6-astra", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if s.Err() != nil || acc.Choices[0].Message.Content != sim.Answer("gpt-6.1-sol", prompt, 16) {
			t.Fatalf("%v %+v", s.Err(), acc.Choices)
		}
	})
	t.Run("openai responses stream", func(t *testing.T) {
		s := oa.Responses.NewStreaming(ctx, oresponses.ResponseNewParams{Model: "gpt-6-astra", Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}})
		text := ""
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.output_text.delta" {
				text += ev.Delta
			}
		}
		if s.Err() != nil || text != sim.Answer("gpt-6.1-sol", prompt, 16) {
			t.Fatalf("%v %q", s.Err(), text)
		}
	})
	t.Run("openai responses", func(t *testing.T) {
		resp, err := oa.Responses.New(ctx, oresponses.ResponseNewParams{Model: "gpt-6-astra", Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}})
		if err != nil || resp.OutputText() != sim.Answer("gpt-6.1-sol", prompt, 16) {
			t.Fatalf("%v", err)
		}
	})
	params := anthropic.MessageNewParams{Model: "claude-opus-5-5", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
	t.Run("anthropic messages", func(t *testing.T) {
		m, err := an.Messages.New(ctx, params)
		if err != nil || m.Content[0].Text != sim.Answer("claude-sonnet-5-5", prompt, 16) {
			t.Fatalf("%v %+v", err, m)
		}
	})
	t.Run("anthropic messages stream", func(t *testing.T) {
		s := an.Messages.NewStreaming(ctx, params)
		msg := anthropic.Message{}
		for s.Next() {
			msg.Accumulate(s.Current())
		}
		if s.Err() != nil || msg.Content[0].Text != sim.Answer("claude-sonnet-5-5", prompt, 16) {
			t.Fatalf("%v %+v", s.Err(), msg)
		}
	})
}

// The official OpenAI and Anthropic Go SDKs read every stream the gateway
// produces for the simulator's fault shapes: a complete answer with no
// error (a hold window, a continuation, the route's last word in
// comments), or, for a stream that broke, the protocol's own error event,
// parsed as such (never a decoding error from a forwarded bad frame).
func TestSDKsReadEveryStream(t *testing.T) {
	three, five := 3, 5
	hold := func(model string) func(*config.Config) {
		return func(c *config.Config) {
			m := c.Models[model]
			m.Hold = config.Hold{Tokens: 1000}
			c.Models[model] = m
		}
	}
	type sdkStream func(ctx context.Context, url, model string) (string, error)
	chatStream := func(ctx context.Context, url, model string) (string, error) {
		oa := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
		s := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if len(acc.Choices) == 0 {
			return "", s.Err()
		}
		return acc.Choices[0].Message.Content, s.Err()
	}
	respStream := func(ctx context.Context, url, model string) (string, error) {
		oa := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
		s := oa.Responses.NewStreaming(ctx, oresponses.ResponseNewParams{Model: model, Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		text := ""
		for s.Next() {
			switch ev := s.Current(); ev.Type {
			case "response.output_text.delta":
				text += ev.Delta
			case "response.failed":
				return text, fmt.Errorf("response.failed: %s", ev.Response.Error.Message)
			}
		}
		return text, s.Err()
	}
	msgStream := func(ctx context.Context, url, model string) (string, error) {
		an := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("sk-ant-api03-test"), aoption.WithMaxRetries(0))
		s := an.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		msg := anthropic.Message{}
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return "", err
			}
		}
		if len(msg.Content) == 0 {
			return "", s.Err()
		}
		return msg.Content[0].Text, s.Err()
	}
	cases := []struct {
		name  string
		call  sdkStream
		model string
		fault sim.Fault
		mut   func(*config.Config)
		text  string // the complete answer; "" when the stream must end in the protocol's error
	}{
		{"chat, cut after output", chatStream, "gpt-6-luna", sim.Fault{Kind: "reset", AfterTokens: &three}, nil, ""},
		{"chat, cut inside a hold window", chatStream, "gpt-6-luna", sim.Fault{Kind: "reset", AfterTokens: &three}, hold("gpt-6-luna"), sim.Answer("gpt-6-luna", "hi", 16)},
		{"chat, a malformed frame after output", chatStream, "gpt-6-luna", sim.Fault{Kind: "malformed", AfterTokens: &three}, nil, ""},
		{"chat, a malformed frame inside a hold window", chatStream, "gpt-6-luna", sim.Fault{Kind: "malformed", AfterTokens: &three}, hold("gpt-6-luna"), sim.Answer("gpt-6-luna", "hi", 16)},
		{"chat, no [DONE]", chatStream, "gpt-6-luna", sim.Fault{Kind: "truncated", AfterTokens: &three}, nil, ""},
		{"chat, complete", chatStream, "gpt-6-luna", sim.Fault{Kind: "slow", DelayMS: 1}, nil, sim.Answer("gpt-6-luna", "hi", 16)},
		{"responses, cut after output", respStream, "gpt-6-luna", sim.Fault{Kind: "reset", AfterTokens: &three}, nil, ""},
		{"responses, an overload after output", respStream, "gpt-6-luna", sim.Fault{Kind: "midstream"}, nil, ""},
		{"responses, a malformed frame after output", respStream, "gpt-6-luna", sim.Fault{Kind: "malformed", AfterTokens: &three}, nil, ""},
		{"responses, cut inside a hold window", respStream, "gpt-6-luna", sim.Fault{Kind: "reset", AfterTokens: &three}, hold("gpt-6-luna"), sim.Answer("gpt-6-luna", "hi", 16)},
		{"responses, complete", respStream, "gpt-6-luna", sim.Fault{Kind: "slow", DelayMS: 1}, nil, sim.Answer("gpt-6-luna", "hi", 16)},
		{"messages, cut after output: continued", msgStream, "claude-opus-5-5", sim.Fault{Kind: "reset", AfterTokens: &five}, nil, sim.Answer("claude-opus-5-5", "hi", 16)},
		{"messages, an overload after output: continued", msgStream, "claude-haiku-5-5", sim.Fault{Kind: "midstream"}, nil, sim.Answer("claude-haiku-5-5", "hi", 16)},
		{"messages, a malformed frame after output: continued", msgStream, "claude-opus-5-5", sim.Fault{Kind: "malformed", AfterTokens: &five}, nil, sim.Answer("claude-opus-5-5", "hi", 16)},
		{"messages, cut again and again", msgStream, "claude-haiku-5-5", sim.Fault{Kind: "reset", AfterTokens: &three, Count: -1}, nil, ""},
		{"messages, complete", msgStream, "claude-opus-5-5", sim.Fault{Kind: "slow", DelayMS: 1}, nil, sim.Answer("claude-opus-5-5", "hi", 16)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, c.mut)
			f := c.fault
			f.Model = c.model
			r.fault(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			text, err := c.call(ctx, r.url, c.model)
			if c.text != "" {
				if err != nil || text != c.text {
					t.Fatalf("err %v, text %q, want %q", err, text, c.text)
				}
				return
			}
			// broken: the SDK read the protocol's error event, not garbage
			if err == nil || !strings.Contains(err.Error(), "spillway") && !strings.Contains(err.Error(), "overloaded") && !strings.Contains(err.Error(), "Overloaded") {
				t.Fatalf("err %v (text %q): want the protocol's error event", err, text)
			}
			for _, bad := range []string{"invalid character", "unexpected end of JSON", "cannot unmarshal"} {
				if strings.Contains(err.Error(), bad) {
					t.Fatalf("the SDK failed to decode the stream: %v", err)
				}
			}
		})
	}
}

// Claude Code reads a continued answer as one: its stream broke after five
// tokens and the gateway went on from them.
func TestClaudeReadsAContinuedAnswer(t *testing.T) {
	clienttest.Claude(t)
	r := newRig(t, nil, nil)
	five := 5
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "reset", AfterTokens: &five})
	prompt := "Reply with pong"
	if out, want := claude(t, r, prompt), sim.Answer("claude-opus-5-5", prompt, 16); !strings.Contains(out, want) {
		t.Fatalf("stdout %q lacks the whole answer %q", out, want)
	}
	if route := strings.Join(routeOf(r), " > "); !strings.HasPrefix(route, "claude-opus-5-5:network > claude-opus-5-5:ok") {
		t.Fatalf("event log route %q", route)
	}
}

// A Responses stream that breaks after output ends in response.failed
// (hold off): Codex reconnects by itself (stream_max_retries) and the
// gateway answers the new request.
func TestCodexReconnectsAfterABrokenStream(t *testing.T) {
	clienttest.Codex(t)
	r := newRig(t, nil, nil)
	three, two := 3, 2
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "reset", AfterTokens: &three})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prompt := "Reply with pong"
	res := clienttest.RunCodex(t, ctx, clienttest.CodexOptions{BaseURL: r.url + "/v1", Model: "gpt-6-astra", Prompt: prompt,
		APIKey: "sk-codex-test-0123456789", StreamMaxRetries: &two})
	if res.ExitCode != 0 || !strings.Contains(res.Stderr, "Reconnecting... 1/2") {
		t.Fatalf("codex exit %d\nstderr: %s", res.ExitCode, res.Stderr)
	}
	if want := sim.Answer("gpt-6-astra", prompt, 16); !strings.Contains(res.Stdout, want) || strings.Count(res.Stdout, "[gpt-6-astra]") != 1 {
		t.Fatalf("stdout %q: want the answer once", res.Stdout)
	}
	if got := strings.Join(routeOf(r), " > "); got != "gpt-6-astra:network > gpt-6-astra:ok" || distinctRequests(r) != 2 {
		t.Fatalf("event log route %q in %d requests", got, distinctRequests(r))
	}
}

// The real Gemini CLI through the gateway, gemini-3-pro full: it answers
// from gemini-3-flash (its own retries off, as exec sets them), and the
// event log says so.
func TestGeminiCLIThroughGateway(t *testing.T) {
	clienttest.Gemini(t)
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prompt := "Reply with pong"
	res := clienttest.RunGemini(t, ctx, clienttest.GeminiOptions{BaseURL: r.url, Model: "gemini-3-pro", Prompt: prompt, APIKey: "AIza-gemini-cli-test-0123", MaxAttempts: 1})
	if res.ExitCode != 0 {
		t.Fatalf("gemini exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if want := strings.Join(sim.Tokens(sim.Answer("gemini-3-flash", prompt, 16))[:4], ""); !strings.Contains(res.Stdout, want) {
		t.Fatalf("stdout %q lacks the fallback model's answer %q", res.Stdout, want)
	}
	if route := strings.Join(routeOf(r), " > "); !strings.HasPrefix(route, "gemini-3-pro:capacity > gemini-3-flash:ok") {
		t.Fatalf("event log route %q", route)
	}
}

// When every model is full, Claude Code (its own retries low) shows the
// gateway's words: the give-up answer carries x-should-retry: false, so it
// does not retry, and it prints the message after "API Error: 529".
func TestClaudeAllModelsFullShowsSpillwaysMessage(t *testing.T) {
	clienttest.Claude(t)
	r := newRig(t, nil, nil)
	for _, m := range []string{"claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} {
		r.fault(t, sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	two := 2
	res := clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: "hi", APIKey: "sk-ant-claude-test-0123", MaxRetries: &two})
	out := res.Stdout + res.Stderr
	if res.ExitCode == 0 || !strings.Contains(out, "API Error: 529 spillway:") || !strings.Contains(out, "claude-haiku-5-5") {
		t.Fatalf("exit %d: Claude Code did not show spillway's message:\n%s", res.ExitCode, out)
	}
	if n := distinctRequests(r); n != 1 {
		t.Fatalf("Claude Code sent %d requests: x-should-retry: false should stop its retries", n)
	}
}

// Claude Code at its plan's usage limit through the gateway: with the
// chain's on_usage_limit: overflow, the overflow chain (a provider with
// spillway's own key) answers; without it, Claude Code shows the upstream's
// own limit text.
func TestClaudeUsageLimitOverflows(t *testing.T) {
	clienttest.Claude(t)
	for _, overflow := range []bool{true, false} {
		r := newRig(t, nil, func(c *config.Config) {
			c.Providers["anthropic-team"] = config.Provider{Type: "anthropic", BaseURL: c.Providers["anthropic"].BaseURL, Auth: "key",
				APIKey: config.Secret{Ref: "env:TEAM_KEY", Value: "sk-ant-team-own-key-0123456789"}}
			c.Models["claude-sonnet-5-5-team"] = config.Model{Provider: "anthropic-team", Tier: config.Medium, Upstream: "claude-sonnet-5-5", Context: 200000}
			c.Chains["claude-team"] = []string{"claude-sonnet-5-5-team"}
			rules := config.ChainRules{Overflow: "claude-team", OnUsageLimit: config.UsageLimitFail}
			if overflow {
				rules.OnUsageLimit = config.UsageLimitOverflow
			}
			c.ChainRules = map[string]config.ChainRules{"claude": rules}
		})
		r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "usage_limit", Count: -1, ResetsIn: 7200})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		zero := 0
		prompt := "Reply with pong"
		res := clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: prompt, OAuthToken: "sk-ant-oat01-plan-0123456789", MaxRetries: &zero})
		cancel()
		route := strings.Join(routeOf(r), " > ")
		if overflow {
			if want := sim.Answer("claude-sonnet-5-5", prompt, 16); res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
				t.Fatalf("overflow: exit %d, stdout %q lacks %q\nstderr: %s", res.ExitCode, res.Stdout, want, res.Stderr)
			}
			if !strings.HasPrefix(route, "claude-opus-5-5:usage_limit > claude-sonnet-5-5-team:ok") {
				t.Fatalf("route %q", route)
			}
			// the overflow went with spillway's own key, not the plan's login
			if got := r.sim.Snapshot().Models["claude-sonnet-5-5"].Credentials; got[sim.Fingerprint("sk-ant-team-own-key-0123456789", "")] == 0 || got[sim.Fingerprint("sk-ant-oat01-plan-0123456789", "")] != 0 {
				t.Fatalf("claude-sonnet-5-5 saw %v", got)
			}
			continue
		}
		out := res.Stdout + res.Stderr
		if res.ExitCode == 0 || !strings.Contains(out, "usage limit reached") || !strings.HasPrefix(route, "claude-opus-5-5:usage_limit") || strings.Contains(route, "sonnet") {
			t.Fatalf("without overflow: exit %d, route %q, Claude Code printed:\n%s", res.ExitCode, route, out)
		}
	}
}
