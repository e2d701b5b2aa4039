package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
)

// A request answers by the configuration it started with, even when a
// reload comes while it is at the upstream: a team gateway's request keeps
// the team's account headers home after a reload that drops gateway.keys
// (its answer is scrubbed by the pinned configuration, not the new one).
func TestReloadMidRequestKeepsItsConfiguration(t *testing.T) {
	tm := newTeam(t, "0.0.0.0:0", "")
	type answer struct {
		h    http.Header
		body string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, tm.url+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-6-sol","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{h: resp.Header, body: string(b)}
	}()
	// the request is at the upstream, held there
	tm.up.waitHeld(t, "the request")
	// a configuration without gateway keys (the account's headers would
	// go to the client under it)
	file := fmt.Sprintf("listen: \"127.0.0.1:0\"\nproviders:\n  openai: { base_url: %q, api_key: env:PROVIDER, auth: key }\n", tm.up.srv.URL+"/v1")
	next, err := config.Parse("next.yaml", []byte(file), func(k string) string { return map[string]string{"PROVIDER": teamProvider}[k] })
	if err != nil {
		t.Fatal(err)
	}
	tm.gw.Reload(next)
	tm.up.release()
	a := <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	if !strings.Contains(a.body, "held") {
		t.Fatalf("the held request: %s", a.body)
	}
	for _, h := range []string{"Set-Cookie", "Openai-Organization"} {
		if v := a.h.Get(h); v != "" {
			t.Errorf("%s: %q reached the client: the request was scrubbed by the configuration reloaded while it ran", h, v)
		}
	}
}
