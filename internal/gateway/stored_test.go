package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresponses "github.com/openai/openai-go/v3/responses"
)

// A Responses answer another vendor's model gave is stored nowhere: its id
// says so (resp_spw_MODEL_…), and a later request that continues it by
// previous_response_id is answered at once with OpenAI's own 400 for an id
// it does not have, naming the model, and is never sent upstream. A request
// that leaves store unset is still translated; one that sets store: true is
// passed over.
func TestTranslatedResponsesAreNotStored(t *testing.T) {
	r := newRig(t, nil, spillTo("claude-sonnet-5-5"))
	fullVendor(t, r, "gpt-")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	oa := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	spilled := regexp.MustCompile(`^resp_spw_claude-sonnet-5-5_[0-9a-f]{24}$`)

	// store unset: translated, whole and streamed, each id saying so
	first, err := oa.Responses.New(ctx, oresponses.ResponseNewParams{Model: "gpt-6.1-sol", Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil || !spilled.MatchString(first.ID) || first.Model != "claude-sonnet-5-5" {
		t.Fatalf("a translated answer: %v %q %q", err, first.ID, first.Model)
	}
	s := oa.Responses.NewStreaming(ctx, oresponses.ResponseNewParams{Model: "gpt-6.1-sol", Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var streamed string
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.completed" {
			streamed = ev.Response.ID
		}
	}
	if s.Err() != nil || !spilled.MatchString(streamed) {
		t.Fatalf("a translated stream: %v %q", s.Err(), streamed)
	}

	// continuing it: answered at once, nothing sent
	before := len(r.records())
	const want = `{"error":{"code":"previous_response_not_found","message":"spillway: previous response %s was answered by claude-sonnet-5-5, another vendor's model, through spillway, and stored nowhere; send the conversation whole instead (its earlier input and output items, as with store: false); nothing was sent upstream","param":"previous_response_id","type":"invalid_request_error"}}`
	_, err = oa.Responses.New(ctx, oresponses.ResponseNewParams{Model: "gpt-6.1-sol", PreviousResponseID: openai.String(first.ID),
		Input: oresponses.ResponseNewParamsInputUnion{OfString: openai.String("and then?")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "previous_response_not_found" || apiErr.Param != "previous_response_id" ||
		apiErr.RawJSON() != mustField(t, strings.Replace(want, "%s", first.ID, 1), "error") {
		t.Fatalf("continuing a translated answer: %v", err)
	}
	for _, stream := range []bool{false, true} {
		body := `{"model":"gpt-6.1-sol","previous_response_id":"` + streamed + `","input":"and then?","stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
		resp, err := http.Post(r.url+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.Replace(want, "%s", streamed, 1); resp.StatusCode != 400 || strings.TrimSpace(string(b)) != got {
			t.Fatalf("stream %v: %d %s\nwant 400 %s", stream, resp.StatusCode, b, got)
		}
	}
	if n := len(r.records()); n != before {
		t.Fatalf("%d attempts went upstream for a request that continues a translated answer", n-before)
	}

	// store: true asks OpenAI to keep it: never translated
	req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/responses", strings.NewReader(`{"model":"gpt-6.1-sol","store":true,"input":"hi"}`))
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if route := resp.Header.Get("X-Spillway-Route"); resp.StatusCode == 200 || !strings.Contains(route, "claude-sonnet-5-5[anthropic]:untranslatable") {
		t.Fatalf("store: true: %d %q %s", resp.StatusCode, route, b)
	}
	if st := r.servedStats(t, "claude-sonnet-5-5", 2); st == nil || st.Received != 2 {
		t.Fatalf("claude-sonnet-5-5 received %+v, want the two translated requests only", st)
	}
}

// mustField is the JSON of field name of the object s.
func mustField(t *testing.T, s, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return string(m[name])
}
