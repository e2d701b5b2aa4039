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
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/clienttest"
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
	r := newRig(t, nil, nil)
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
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "Selected model is at capacity") {
		t.Fatalf("exit %d stderr %s", res.ExitCode, res.Stderr)
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

func distinctRequests(r *rig) int {
	seen := map[string]bool{}
	for _, rec := range r.records() {
		seen[rec.RequestID] = true
	}
	return len(seen)
}

func TestClaudeThroughGateway(t *testing.T) {
	clienttest.Claude(t)
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prompt := "Reply with pong"
	zero := 0
	res := clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{BaseURL: r.url, Model: "claude-opus-5-5", Prompt: prompt, APIKey: "sk-ant-claude-test-0123", MaxRetries: &zero})
	if res.ExitCode != 0 {
		t.Fatalf("claude exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if want := sim.Answer("claude-sonnet-5-5", prompt, 16); !strings.Contains(res.Stdout, want) {
		t.Fatalf("stdout %q lacks the fallback model's answer %q", res.Stdout, want)
	}
	route := strings.Join(routeOf(r), " > ")
	if !strings.HasPrefix(route, "claude-opus-5-5:capacity > claude-sonnet-5-5:ok") {
		t.Fatalf("event log route %q", route)
	}
}

func TestSDKsThroughGateway(t *testing.T) {
	r := newRig(t, nil, nil)
	r.fault(t, sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	r.fault(t, sim.Fault{Model: "claude-opus-5-5", Kind: "capacity", Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	oa := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	an := anthropic.NewClient(aoption.WithBaseURL(r.url), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
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
