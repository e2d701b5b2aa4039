package vertex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	avertex "github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/spillway/spillway/internal/format/vertex"
	"github.com/spillway/spillway/internal/simtest"
)

// relay is a Vertex AI front end for the test: the rawPredict request
// read as a Messages one (ClientRequest), sent to the simulator's
// Anthropic API, its answer written back through Answer in small writes;
// answer, when set, writes the answer instead.
type relay struct {
	sim    string
	answer func(w http.ResponseWriter)
	paths  []string
}

func (rl *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := vertex.NewAnswer(w)
	defer a.Close()
	rl.paths = append(rl.paths, r.URL.Path)
	if rl.answer != nil {
		rl.answer(a)
		return
	}
	in, _ := io.ReadAll(r.Body)
	body, err := vertex.ClientRequest(in, "claude-sonnet-5-5", strings.HasSuffix(r.URL.Path, ":streamRawPredict"))
	if err != nil {
		http.Error(a, err.Error(), http.StatusBadRequest)
		return
	}
	req, _ := http.NewRequestWithContext(r.Context(), "POST", rl.sim+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("x-api-key", "sk-ant-test")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(a, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		a.Header()[k] = v
	}
	a.WriteHeader(resp.StatusCode)
	buf := make([]byte, 41)
	for {
		n, err := resp.Body.Read(buf)
		a.Write(buf[:n])
		a.Flush()
		if err != nil {
			return
		}
	}
}

// anthropic-sdk-go's Vertex AI client reads a stream and a whole answer
// through Answer as the simulator's, and the all-full error as a 429 in
// Google's shape.
func TestAnthropicSDKVertex(t *testing.T) {
	_, simURL := simtest.Start(t, nil)
	rl := &relay{sim: simURL}
	srv := httptest.NewServer(rl)
	defer srv.Close()
	creds := &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "test-token"})}
	c := anthropic.NewClient(avertex.WithCredentials(context.Background(), "us-east5", "my-proj", creds),
		aoption.WithBaseURL(srv.URL+"/"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	params := anthropic.MessageNewParams{Model: "claude-sonnet-5-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))}}

	s := c.Messages.NewStreaming(ctx, params)
	msg := anthropic.Message{}
	n := 0
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n < 4 || len(msg.Content) == 0 || msg.Content[0].Text == "" {
		t.Fatalf("%d events: %v %q", n, msg.Content, rl.paths)
	}
	whole, err := c.Messages.New(ctx, params)
	if err != nil || len(whole.Content) == 0 || whole.Content[0].Text == "" {
		t.Fatalf("%+v %v", whole, err)
	}
	if len(rl.paths) != 2 || !strings.HasSuffix(rl.paths[0], "/models/claude-sonnet-5-5:streamRawPredict") || !strings.HasSuffix(rl.paths[1], ":rawPredict") {
		t.Errorf("paths %q", rl.paths)
	}

	rl.answer = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Should-Retry", "false")
		w.WriteHeader(529)
		w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"spillway: every deployment is full"}}`))
	}
	_, err = c.Messages.New(ctx, params)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 {
		t.Fatalf("all full: %T %v", err, err)
	}
	var g struct {
		Error struct {
			Code            int
			Message, Status string
		}
	}
	if err := json.Unmarshal([]byte(ae.RawJSON()), &g); err != nil || g.Error.Code != 429 || g.Error.Status != "RESOURCE_EXHAUSTED" || g.Error.Message != "spillway: every deployment is full" || ae.Response.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("all full: %s (%v) %v", ae.RawJSON(), err, ae.Response.Header)
	}
}
