package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
)

// BenchmarkDirect and BenchmarkThroughGateway send the same non-streaming
// chat request to the simulator directly and through the gateway (pacing
// off), one at a time on loopback: the difference is the gateway's cost per
// request, hop included. `spillway bench overhead` (issue 7) will do this
// open-loop at fixed rates against a bare reverse proxy too.
func benchChat(b *testing.B, url string) {
	benchPost(b, url, `{"model":"gpt-6-luna","messages":[{"role":"user","content":"bench"}]}`)
}

// benchPost sends body to the chat endpoint at url, one request at a time.
func benchPost(b *testing.B, url, body string) {
	benchPostTo(b, url+"/v1/chat/completions", body)
}

// benchPostTo sends body to url, one request at a time.
func benchPostTo(b *testing.B, url, body string) {
	client := &http.Client{}
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatal(resp.StatusCode, n)
		}
	}
}

func BenchmarkDirect(b *testing.B) {
	r := newRig(b, nil, func(c *config.Config) { c.Pacing = config.Pacing{MaxConcurrency: 64} })
	benchChat(b, r.simURL)
}

func BenchmarkThroughGateway(b *testing.B) {
	r := newRig(b, nil, func(c *config.Config) { c.Pacing = config.Pacing{MaxConcurrency: 64} })
	benchChat(b, r.url)
}

// BenchmarkStreamThroughGateway is BenchmarkThroughGateway for a streamed
// answer: its allocations are the relay's (a memory profile of it shows
// where they come from).
func BenchmarkStreamThroughGateway(b *testing.B) {
	r := newRig(b, nil, func(c *config.Config) { c.Pacing = config.Pacing{MaxConcurrency: 64} })
	benchStream(b, r.url)
}

func BenchmarkStreamDirect(b *testing.B) {
	r := newRig(b, nil, func(c *config.Config) { c.Pacing = config.Pacing{MaxConcurrency: 64} })
	benchStream(b, r.simURL)
}

// BenchmarkStreamResponsesThroughGateway is BenchmarkStreamThroughGateway
// for a Responses stream, whose events the relay judges by name and walks
// once each.
func BenchmarkStreamResponsesThroughGateway(b *testing.B) {
	r := newRig(b, nil, func(c *config.Config) { c.Pacing = config.Pacing{MaxConcurrency: 64} })
	benchPostTo(b, r.url+"/v1/responses", `{"model":"gpt-6-luna","stream":true,"input":"bench"}`)
}

func benchStream(b *testing.B, url string) {
	benchPost(b, url, `{"model":"gpt-6-luna","stream":true,"messages":[{"role":"user","content":"bench"}]}`)
}

// BenchmarkStreamTranslated is BenchmarkStreamThroughGateway answered by
// another vendor's model: the Chat request into Messages, the stream back.
func BenchmarkStreamTranslated(b *testing.B) {
	r := newRig(b, nil, func(c *config.Config) {
		c.Pacing = config.Pacing{MaxConcurrency: 64}
		p := c.Providers["anthropic"]
		p.APIKey = config.Secret{Value: "sk-ant-bench"}
		c.Providers["anthropic"] = p
		c.Models["bench-openai"] = config.Model{Provider: "openai", Tier: config.Light, Upstream: "gpt-6-luna"}
		c.Models["bench-claude"] = config.Model{Provider: "anthropic", Tier: config.Light, Upstream: "claude-haiku-5-5"}
		c.Chains["bench-translated"] = []string{"bench-openai", "bench-claude"}
	})
	benchPost(b, r.url, `{"model":"bench-claude","stream":true,"messages":[{"role":"user","content":"bench"}]}`)
}
