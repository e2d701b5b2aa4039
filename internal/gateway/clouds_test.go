package gateway_test

// Issue 48's proof through the gateway: a Claude model whose Anthropic
// pool is full is answered by the same model on Bedrock in one region,
// then in another, then on Vertex AI; a Gemini model spills from the
// Gemini API to Vertex AI. The simulator checks every credential (SigV4
// over the bytes received, the Bedrock API key, the bearer its own token
// endpoint granted), and no cloud secret reaches anything the gateway
// writes or shows.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/policy/policytest"
	"github.com/spillway/spillway/sim"
)

// The cloud credentials of these tests: canaries, each distinctive enough
// that finding it anywhere is a leak.
const (
	cloudKeyID      = "AKIDCLOUDE2E0000001"
	cloudSecret     = "CANARYawsSecretKey0e2e9f7c1b3d5a"
	cloudSession    = "CANARYawsSessionToken4c6e8a0b2d"
	cloudBedrockKey = "CANARYbedrockApiKey1a3c5e7f9b"
)

// cloudModel is the Claude model of these tests, its upstream ids on
// each cloud.
const (
	cloudModel     = "claude-sonnet-5-5"
	bedrockProfile = "us.anthropic.claude-sonnet-5-5-20261001-v1:0"
	bedrockARN     = "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-sonnet-5-5-20261001-v1:0"
	vertexClaude   = "claude-sonnet-5-5@20261001"
)

// simClock is the simulator on the gateway's fake clock: an access token
// expires for the simulator when it does for the gateway.
type simClock struct{ c *policytest.Clock }

func (s simClock) Now() time.Time { return s.c.Now() }
func (simClock) Factor() float64  { return 1 }

// tokenWatch stands before the simulator and notes the access tokens its
// /token endpoint granted and the bearer of every Vertex AI request.
type tokenWatch struct {
	h       http.Handler
	mu      sync.Mutex
	granted []string
	bearers []string      // of Vertex AI requests, in order
	headers []http.Header // of every request, in order
	urls    []string      // of every request, in order
}

func (tw *tokenWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tw.mu.Lock()
	tw.headers = append(tw.headers, r.Header.Clone())
	tw.urls = append(tw.urls, r.URL.String())
	tw.mu.Unlock()
	switch {
	case r.URL.Path == "/token":
		rec := httptest.NewRecorder()
		tw.h.ServeHTTP(rec, r)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if rec.Code == 200 && json.Unmarshal(rec.Body.Bytes(), &tok) == nil && tok.AccessToken != "" {
			tw.mu.Lock()
			tw.granted = append(tw.granted, tok.AccessToken)
			tw.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	case strings.Contains(r.URL.Path, "/publishers/"):
		tw.mu.Lock()
		tw.bearers = append(tw.bearers, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		tw.mu.Unlock()
	}
	tw.h.ServeHTTP(w, r)
}

// seen is the tokens granted and the Vertex AI bearers so far.
func (tw *tokenWatch) seen() (granted, bearers []string) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return append([]string(nil), tw.granted...), append([]string(nil), tw.bearers...)
}

// cloudRig is a rig whose simulator serves Bedrock in us-east-1 and
// us-west-2 and Vertex AI, each with the credentials it checks, and whose
// gateway reaches claude-sonnet-5-5 and gemini-3-pro there.
type cloudRig struct {
	*rig
	watch   *tokenWatch
	saJSON  []byte
	evPath  string // the event log
	evw     *events.Writer
	answers bytes.Buffer // every answer's bytes, as clients read them
}

func newCloudRig(t *testing.T, opt func(*gateway.Options)) *cloudRig {
	t.Helper()
	return newCloudRigWith(t, nil, opt)
}

// newCloudRigWith is newCloudRig with its configuration changed by mut
// (after the clouds are set up).
func newCloudRigWith(t *testing.T, mut func(*config.Config), opt func(*gateway.Options)) *cloudRig {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", cloudKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cloudSecret)
	t.Setenv("AWS_SESSION_TOKEN", cloudSession)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", empty)

	cr := &cloudRig{rig: &rig{}}
	cr.clk = policytest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0, Clock: simClock{cr.clk}, Regions: []string{"us-east-1", "us-west-2"},
		Clouds: sim.CloudAuth{
			AWS:                  &sim.AWSCredentials{AccessKeyID: cloudKeyID, SecretAccessKey: cloudSecret, SessionToken: cloudSession},
			BedrockAPIKey:        cloudBedrockKey,
			GoogleServiceAccount: true,
		}})
	if err != nil {
		t.Fatal(err)
	}
	cr.watch = &tokenWatch{h: srv.Handler()}
	hs := httptest.NewServer(cr.watch)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	cr.sim, cr.simURL = srv, hs.URL
	state := t.TempDir()
	if cr.saJSON, err = srv.ServiceAccountJSON(hs.URL + "/token"); err != nil {
		t.Fatal(err)
	}
	saFile := filepath.Join(state, "sa.json")
	if err := os.WriteFile(saFile, cr.saJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	cr.evPath = filepath.Join(state, "events.jsonl")
	if cr.evw, err = events.NewWriter(cr.evPath, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cr.evw.Close(context.Background()) })
	cr.start(t, func(c *config.Config) {
		spillTo(cloudModel)(c) // an OpenAI client's chain overflows to Claude
		c.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: hs.URL + "/us-east-1", Auth: config.AuthKey}
		c.Providers["bedrock-west"] = config.Provider{Type: config.Bedrock, Region: "us-west-2", BaseURL: hs.URL + "/us-west-2", Auth: config.AuthKey,
			APIKey: config.Secret{Ref: "env:AWS_BEARER_TOKEN_BEDROCK", Value: cloudBedrockKey}}
		c.Providers["vertex-global"] = config.Provider{Type: config.Vertex, Project: "spillway-e2e", Region: "global", BaseURL: hs.URL, Auth: config.AuthKey, CredentialsFile: saFile}
		m := c.Models[cloudModel]
		// the weights make the order certain: Anthropic's API first (its
		// round-robin credit lasts for a thousand requests), the others
		// follow as listed
		m.Deployments = []config.Deployment{
			{Name: "anthropic", Provider: "anthropic", Weight: 1_000_000},
			{Name: "bedrock-east", Provider: "bedrock-east", Upstream: bedrockProfile, Weight: 100},
			{Name: "bedrock-west", Provider: "bedrock-west", Upstream: bedrockARN, Weight: 10},
			{Name: "vertex", Provider: "vertex-global", Upstream: vertexClaude, Weight: 1},
		}
		c.Models[cloudModel] = m
		g := c.Models["gemini-3-pro"]
		g.Deployments = []config.Deployment{{Name: "gemini", Provider: "gemini", Weight: 1000}, {Name: "vertex", Provider: "vertex-global", Upstream: "gemini-3-pro", Weight: 1}}
		c.Models["gemini-3-pro"] = g
		if mut != nil {
			mut(c)
		}
	}, func(o *gateway.Options) {
		mem := o.Events
		o.Events = events.SinkFunc(func(rec events.Record) { mem.Write(rec); cr.evw.Write(rec) })
		if opt != nil {
			opt(o)
		}
	})
	return cr
}

// client is an HTTP client that keeps a copy of every answer's bytes.
func (cr *cloudRig) client() *http.Client {
	return &http.Client{Transport: teeAnswers{&cr.answers, &cr.mu}}
}

type teeAnswers struct {
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (ta teeAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ta.mu.Lock()
	for k, v := range resp.Header {
		ta.buf.WriteString(k + ": " + strings.Join(v, ",") + "\n")
	}
	ta.mu.Unlock()
	resp.Body = teeBody{resp.Body, ta}
	return resp, nil
}

type teeBody struct {
	io.ReadCloser
	ta teeAnswers
}

func (b teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.ta.mu.Lock()
	b.ta.buf.Write(p[:n])
	b.ta.mu.Unlock()
	return n, err
}

// poolServed is pool's count of answers served by srv once it reaches n
// (waited for on waitCtx(t): the simulator counts an answer after its
// last write, which the client may have read already).
func poolServed(t testing.TB, srv *sim.Server, pool string, n int) int {
	if st := servedStats(t, srv, pool, n); st != nil {
		return st.Served
	}
	return 0
}

// okRecords are the records of the attempts that answered requests of
// endpoint, in order, once there are at least n (waited for on
// waitCtx(t): the gateway records a stream once it has relayed its end).
func (cr *cloudRig) okRecords(t testing.TB, endpoint string, n int) []events.Record {
	oks := func(recs []events.Record) []events.Record {
		var out []events.Record
		for _, rec := range recs {
			if rec.Endpoint == endpoint && rec.Class == "ok" {
				out = append(out, rec)
			}
		}
		return out
	}
	return oks(cr.waitRecords(t, func(recs []events.Record) bool { return len(oks(recs)) >= n }))
}

// claudeAsk is one client's request for claude-sonnet-5-5 through the
// gateway: the answer's text, and the route the gateway reported.
type claudeAsk struct {
	name     string
	endpoint string
	ask      func(ctx context.Context, cr *cloudRig, prompt string) (text, route string, err error)
}

var claudeAsks = []claudeAsk{
	{"messages", "/v1/messages", func(ctx context.Context, cr *cloudRig, prompt string) (string, string, error) {
		var hr *http.Response
		m, err := anthropicOf(cr).Messages.New(ctx, claudeParams(prompt), aoption.WithResponseInto(&hr))
		if err != nil {
			return "", "", err
		}
		return m.Content[0].Text, hr.Header.Get("X-Spillway-Route"), nil
	}},
	{"messages stream", "/v1/messages", func(ctx context.Context, cr *cloudRig, prompt string) (string, string, error) {
		var hr *http.Response
		s := anthropicOf(cr).Messages.NewStreaming(ctx, claudeParams(prompt), aoption.WithResponseInto(&hr))
		msg := anthropic.Message{}
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return "", "", err
			}
		}
		if s.Err() != nil || len(msg.Content) == 0 {
			return "", "", errOr(s.Err(), "no content")
		}
		return msg.Content[0].Text, hr.Header.Get("X-Spillway-Route"), nil
	}},
	{"openai chat, translated", "/v1/chat/completions", func(ctx context.Context, cr *cloudRig, prompt string) (string, string, error) {
		var hr *http.Response
		c, err := openaiOf(cr).Chat.Completions.New(ctx, chatParams(prompt), option.WithResponseInto(&hr))
		if err != nil {
			return "", "", err
		}
		return c.Choices[0].Message.Content, hr.Header.Get("X-Spillway-Route"), nil
	}},
	{"openai chat stream, translated", "/v1/chat/completions", func(ctx context.Context, cr *cloudRig, prompt string) (string, string, error) {
		var hr *http.Response
		s := openaiOf(cr).Chat.Completions.NewStreaming(ctx, chatParams(prompt), option.WithResponseInto(&hr))
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if s.Err() != nil || len(acc.Choices) == 0 {
			return "", "", errOr(s.Err(), "no choices")
		}
		return acc.Choices[0].Message.Content, hr.Header.Get("X-Spillway-Route"), nil
	}},
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

func anthropicOf(cr *cloudRig) *anthropic.Client {
	c := anthropic.NewClient(aoption.WithBaseURL(cr.url), aoption.WithAPIKey("sk-ant-api03-caller"), aoption.WithMaxRetries(0), aoption.WithHTTPClient(cr.client()))
	return &c
}

func openaiOf(cr *cloudRig) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(cr.url+"/v1/"), option.WithAPIKey("sk-caller"), option.WithMaxRetries(0), option.WithHTTPClient(cr.client()))
	return &c
}

func claudeParams(prompt string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: cloudModel, MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
}

func chatParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "gpt-6-astra", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// Anthropic's pool of claude-sonnet-5-5 full, the official Anthropic and
// OpenAI Go SDKs (whole and streamed; OpenAI's translated through its
// chain's overflow) are answered by the same model on Bedrock us-east-1
// (SigV4 with the environment's session credentials); with that region
// full, on Bedrock us-west-2 (a Bedrock API key); with both full, on
// Vertex AI (a service account's token). Routes and records name each
// pool. gemini-3-pro spills from the Gemini API to Vertex AI. Vertex AI's
// token is refreshed before it expires on the gateway's clock, and no
// cloud secret is anywhere the gateway writes or shows.
func TestClaudeSpillsAcrossCloudPools(t *testing.T) {
	cr := newCloudRig(t, nil)
	fullVendor(t, cr.rig, "gpt-")
	cr.fault(t, sim.Fault{Model: cloudModel, Kind: "capacity", Count: -1})
	east, west := cr.sim.Region("us-east-1"), cr.sim.Region("us-west-2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	phases := []struct {
		name   string
		fill   *sim.Server // the pool to fill before the phase
		srv    *sim.Server // the pool that answers
		pool   string
		hop    string // the deployment that answers
		before []string
	}{
		{"bedrock us-east-1", nil, east, "bedrock/" + cloudModel, "bedrock-east", []string{"anthropic"}},
		{"bedrock us-west-2", east, west, "bedrock/" + cloudModel, "bedrock-west", []string{"anthropic", "bedrock-east"}},
		{"vertex", west, cr.sim, "vertex/" + cloudModel, "vertex", []string{"anthropic", "bedrock-east", "bedrock-west"}},
	}
	for _, ph := range phases {
		if ph.fill != nil {
			if err := ph.fill.AddFault(sim.Fault{Model: "bedrock/" + cloudModel, Kind: "capacity", Count: -1}); err != nil {
				t.Fatal(err)
			}
		}
		for i, a := range claudeAsks {
			t.Run(ph.name+"/"+a.name, func(t *testing.T) {
				prompt := "spill to " + ph.name + " " + a.name
				before, nok := poolServed(t, ph.srv, ph.pool, 0), len(cr.okRecords(t, a.endpoint, 0))
				text, route, err := a.ask(ctx, cr, prompt)
				if err != nil {
					t.Fatal(err)
				}
				if want := sim.Answer(ph.pool, prompt, 16); text != want {
					t.Errorf("answer %q, want %q", text, want)
				}
				if got := poolServed(t, ph.srv, ph.pool, before+1); got != before+1 {
					t.Errorf("%s served %d, want %d", ph.pool, got, before+1)
				}
				// a route names each deployment (model@deployment); a
				// translated step says the format it was sent in; a
				// stream's header is sent while it streams
				vendor := ""
				if a.endpoint == "/v1/chat/completions" {
					vendor = "[anthropic]"
				}
				var hops []string
				for _, d := range ph.before {
					hops = append(hops, cloudModel+"@"+d+vendor+":capacity")
				}
				wantRoute := strings.Join(append(hops, cloudModel+"@"+ph.hop+vendor+":ok"), " > ")
				if vendor != "" {
					wantRoute = "gpt-6-astra:capacity > gpt-6.1-sol:capacity > gpt-6-luna:capacity > " + wantRoute
				}
				wantHeader := wantRoute
				if strings.Contains(a.name, "stream") {
					wantHeader = strings.TrimSuffix(wantRoute, ":ok") + ":streaming"
				}
				if route != wantHeader {
					t.Errorf("X-Spillway-Route %q, want %q", route, wantHeader)
				}
				recs := cr.okRecords(t, a.endpoint, nok+1)
				if len(recs) != nok+1 {
					t.Fatalf("%d records of answers, want %d", len(recs), nok+1)
				}
				last := recs[len(recs)-1]
				if last.Deployment != ph.hop || last.Model != cloudModel || last.Route != wantRoute {
					t.Errorf("the answer's record: deployment %q model %q route %q", last.Deployment, last.Model, last.Route)
				}
				if translated := last.TranslatedFrom != ""; translated != (i >= 2) {
					t.Errorf("translated_from %q", last.TranslatedFrom)
				}
			})
		}
	}
	// every Bedrock request was authenticated: SigV4 by the access key in
	// us-east-1, the API key in us-west-2 (the simulator refuses others)
	for _, c := range []struct {
		srv *sim.Server
		key string
	}{{east, cloudKeyID}, {west, cloudBedrockKey}} {
		st := c.srv.Snapshot().Models["bedrock/"+cloudModel]
		if st == nil || len(st.Credentials) != 1 || st.Credentials[sim.Fingerprint(c.key, "")] == 0 {
			t.Errorf("Bedrock's credentials %+v", st)
		}
	}

	t.Run("gemini to vertex", func(t *testing.T) { geminiToVertex(t, ctx, cr) })
	t.Run("tokens refreshed", func(t *testing.T) { tokensRefreshed(t, ctx, cr) })
	t.Run("no secret anywhere", func(t *testing.T) { noCloudSecret(t, cr) })
}

// geminiToVertex: gemini-3-pro full on the Gemini API, Google's Go SDK
// (generateContent and streamGenerateContent?alt=sse) is answered by
// Vertex AI's gemini-3-pro.
func geminiToVertex(t *testing.T, ctx context.Context, cr *cloudRig) {
	cr.fault(t, sim.Fault{Model: "gemini-3-pro", Kind: "capacity", Count: -1})
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "AIza-caller", Backend: genai.BackendGeminiAPI,
		HTTPClient: cr.client(), HTTPOptions: genai.HTTPOptions{BaseURL: cr.url + "/", APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	const pool = "vertex/gemini-3-pro"
	prompt := "spill gemini to vertex"
	want := sim.Answer(pool, prompt, 16)
	res, err := c.Models.GenerateContent(ctx, "gemini-3-pro", genai.Text(prompt), nil)
	if err != nil || res.Text() != want {
		t.Fatalf("whole: %v %q, want %q", err, textOf(res), want)
	}
	text := ""
	for res, err := range c.Models.GenerateContentStream(ctx, "gemini-3-pro", genai.Text(prompt), nil) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		text += res.Text()
	}
	if text != want {
		t.Fatalf("stream %q, want %q", text, want)
	}
	if got := poolServed(t, cr.sim, pool, 2); got != 2 {
		t.Fatalf("%s served %d", pool, got)
	}
	for _, ep := range []string{"/v1beta/models/{model}:generateContent", "/v1beta/models/{model}:streamGenerateContent"} {
		recs := cr.okRecords(t, ep, 1)
		if len(recs) != 1 || recs[0].Deployment != "vertex" || recs[0].Route != "gemini-3-pro@gemini:capacity > gemini-3-pro@vertex:ok" {
			t.Errorf("%s: records %+v", ep, recs)
		}
	}
}

// tokensRefreshed: every Vertex AI request went with a token the
// simulator's endpoint granted; past the token's refresh time on the
// gateway's clock (its lifetime, an hour, less five minutes) the next
// request gets a second token, and past the first token's expiry (which
// the simulator, on the same clock, then refuses) requests still succeed.
func tokensRefreshed(t *testing.T, ctx context.Context, cr *cloudRig) {
	ask := func() string {
		t.Helper()
		text, _, err := claudeAsks[0].ask(ctx, cr, "after a while")
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	granted, bearers := cr.watch.seen()
	if len(granted) != 1 || len(bearers) < 6 {
		t.Fatalf("before: %d tokens granted, %d Vertex requests; want 1 token and every request", len(granted), len(bearers))
	}
	for _, b := range bearers {
		if b != granted[0] {
			t.Fatalf("a Vertex request went with a bearer the token endpoint never granted")
		}
	}
	first := granted[0]
	cr.clk.Advance(54 * time.Minute) // before the refresh: the same token
	if text := ask(); text != sim.Answer("vertex/"+cloudModel, "after a while", 16) {
		t.Fatalf("at 54 min: %q", text)
	}
	if granted, _ = cr.watch.seen(); len(granted) != 1 {
		t.Fatalf("a token refreshed %d times before its time", len(granted)-1)
	}
	cr.clk.Advance(2 * time.Minute) // 56 min: past expiry less the margin
	ask()
	granted, bearers = cr.watch.seen()
	if len(granted) != 2 || bearers[len(bearers)-1] != granted[1] {
		t.Fatalf("at 56 min: %d tokens granted, the last request's bearer the new one: %v", len(granted), bearers[len(bearers)-1] == granted[len(granted)-1])
	}
	cr.clk.Advance(10 * time.Minute) // the first token expired
	ask()
	granted, bearers = cr.watch.seen()
	for _, b := range bearers {
		if b != granted[0] && b != granted[1] {
			t.Fatalf("a Vertex request went with a bearer the token endpoint never granted")
		}
	}
	if len(granted) != 2 {
		t.Fatalf("%d tokens granted, want 2", len(granted))
	}
	// the simulator refuses the first token now (the refresh was needed),
	// and a token it never granted
	for _, tok := range []string{first, "ya29.never-granted"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cr.simURL+"/v1/projects/spillway-e2e/locations/global/publishers/anthropic/models/"+vertexClaude+":rawPredict",
			strings.NewReader(`{"anthropic_version":"vertex-2023-10-16","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("a token expired or never granted: %d, want 401", resp.StatusCode)
		}
	}
}

// noCloudSecret: the AWS secret key and session token, the Bedrock API
// key, the service account's private key and every access token granted
// are in no log line, record, event log or state file, metric, status or
// answer.
func noCloudSecret(t *testing.T, cr *cloudRig) {
	var sa struct {
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
	}
	if err := json.Unmarshal(cr.saJSON, &sa); err != nil {
		t.Fatal(err)
	}
	marks := map[string]string{"AWS secret key": cloudSecret, "AWS session token": cloudSession, "Bedrock API key": cloudBedrockKey,
		"service account key id": sa.PrivateKeyID}
	// a line of the PEM's body stands for the private key
	for i, line := range strings.Split(sa.PrivateKey, "\n") {
		if len(line) == 64 && i > 2 {
			marks["service account private key"] = line
			break
		}
	}
	granted, _ := cr.watch.seen()
	for _, tok := range granted {
		marks["Google access token "+tok[:12]] = tok
	}
	if len(marks) != 5+len(granted) || len(granted) == 0 {
		t.Fatalf("the canaries are not all set: %d", len(marks))
	}
	if err := cr.evw.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	blob, _ := json.Marshal(cr.records())
	cr.mu.Lock()
	shown := map[string]string{"the log": cr.logs.String(), "the records": string(blob), "the answers": cr.answers.String()}
	cr.mu.Unlock()
	if !strings.Contains(shown["the records"], "bedrock-west") || !strings.Contains(shown["the answers"], "[vertex/"+cloudModel+"]") {
		t.Fatal("the records or answers are not the scenario's (they would prove nothing)")
	}
	for _, path := range []string{"/metrics", "/spillway/status"} {
		resp, err := http.Get(cr.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		shown[path] = string(b)
	}
	filepath.WalkDir(filepath.Dir(cr.evPath), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != "sa.json" {
			b, _ := os.ReadFile(p)
			shown[p] = string(b)
		}
		return nil
	})
	if !strings.Contains(shown[cr.evPath], `"deployment":"vertex"`) {
		t.Fatalf("the event log has no Vertex AI attempt:\n%.2000s", shown[cr.evPath])
	}
	for where, text := range shown {
		for what, mark := range marks {
			if strings.Contains(text, mark) {
				t.Errorf("%s holds the %s", where, what)
			}
		}
	}
}

// tamperEast changes one byte of each us-east-1 Bedrock request's body
// after the gateway signed it.
type tamperEast struct{ base http.RoundTripper }

func (tp tamperEast) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasPrefix(req.URL.Path, "/us-east-1/model/") {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		b[len(b)-2] ^= 1
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	return tp.base.RoundTrip(req)
}

// A signed Bedrock request with one byte changed after the gateway signed
// it is refused by the simulator (Bedrock's InvalidSignatureException, an
// auth answer): a refusal of spillway's own credentials passes that
// deployment over, the route says where, and the model's next pool
// answers. (How a cloud's refusal reads in the client's format:
// send's TestCloudErrorsInClientWords.)
func TestTamperedBedrockRequestRefused(t *testing.T) {
	cr := newCloudRig(t, func(o *gateway.Options) { o.Transport = tamperEast{http.DefaultTransport} })
	cr.fault(t, sim.Fault{Model: cloudModel, Kind: "capacity", Count: -1})
	for _, stream := range []bool{false, true} {
		resp, body := cr.do(t, messages(cloudModel, "tampered", stream))
		// the refusal of spillway's own credentials passes us-east-1 over:
		// the model's next pool answers
		want := cloudModel + "@anthropic:capacity > " + cloudModel + "@bedrock-east:auth > " + cloudModel + "@bedrock-west:"
		if route := resp.Header.Get("X-Spillway-Route"); !strings.HasPrefix(route, want) || resp.StatusCode != 200 {
			t.Fatalf("stream %v: %d route %q, want it to start %q\n%s", stream, resp.StatusCode, route, want, body)
		}
		if !stream && !strings.Contains(string(body), "[bedrock/"+cloudModel+"] tampered") || resp.Header.Get("X-Amzn-Errortype") != "" {
			t.Fatalf("stream %v: not us-west-2's answer: %v\n%s", stream, resp.Header, body)
		}
	}
	if st := cr.sim.Region("us-east-1").Snapshot().Models["bedrock/"+cloudModel]; st != nil && st.Served != 0 {
		t.Fatalf("us-east-1 served a tampered request: %+v", st)
	}
}
