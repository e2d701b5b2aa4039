package send

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/bedrock"
	"github.com/spillway/spillway/internal/format/vertex"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// eventStream is SSE text's events as a Bedrock event stream: each event's
// JSON in a chunk frame (base64 in {"bytes":...}), encoded with the SDK's
// encoder (prelude and message CRCs).
func eventStream(t *testing.T, sseText string) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, block := range strings.Split(strings.TrimSpace(sseText), "\n\n") {
		_, data, _ := strings.Cut(block, "data: ")
		payload := `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(data)) + `"}`
		msg := eventstream.Message{Headers: eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue("chunk")},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		}, Payload: []byte(payload)}
		if err := eventstream.NewEncoder().Encode(&out, msg); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// A Bedrock stream (an AWS event stream) reaches a Messages caller as the
// server-sent events the Anthropic API would have sent.
func TestBedrockEventStreamAnswer(t *testing.T) {
	frames := eventStream(t, messagesStream)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", bedrock.ContentType)
		w.Write(frames)
	}))
	defer hs.Close()
	cfg := cloudConfig(hs.URL)
	cfg.Models["claude-on-bedrock"] = config.Model{Tier: config.Heavy, Deployments: []config.Deployment{{Provider: "bedrock-east", Upstream: "anthropic.claude-sonnet-4-5-20250929-v1:0"}}}
	msgs := wire.EndpointOf(wire.Messages)
	var st *Stream
	var ct string
	out := policy.New(cfg, policy.WithClock(policytest.New(time.Now()))).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "claude-on-bedrock", Type: config.Anthropic, NoFallback: true}, Stream: true,
		Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader("{}"))
			ans, res := Exchange(a, http.DefaultTransport, req, msgs, Options{})
			if ans == nil || ans.Stream == nil {
				return res
			}
			st, ct = ans.Stream, ans.Resp.Header.Get("Content-Type")
			res.Committed, res.Open = true, true
			return res
		}})
	if st == nil {
		t.Fatalf("no stream: %+v", out)
	}
	b := st.Body()
	got, err := io.ReadAll(b)
	b.Close()
	if err != nil || ct != "text/event-stream" {
		t.Fatalf("%v, content type %q", err, ct)
	}
	for _, want := range []string{"event: message_start\n", `"text":"Hi"`, "event: message_stop\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the caller read no %q:\n%s", want, got)
		}
	}
}

// awsEscape escapes s as AWS escapes a path label: every byte but the
// unreserved ones (letters, digits, '-', '.', '_', '~') as %XX, ':' and '/'
// too.
func awsEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// seen is what an upstream on loopback was sent.
type seen struct {
	uri    string // the request line's target, as it went on the wire
	header http.Header
	body   map[string]json.RawMessage
	raw    []byte
}

// recorder is an upstream that keeps what each request was, and answers
// every one with a small JSON body.
func recorder(t *testing.T) (*httptest.Server, func() seen) {
	t.Helper()
	var mu sync.Mutex
	var last seen
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{uri: r.RequestURI, header: r.Header.Clone(), raw: b}
		_ = json.Unmarshal(b, &last.body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[]}`)
	}))
	t.Cleanup(hs.Close)
	return hs, func() seen { mu.Lock(); defer mu.Unlock(); return last }
}

// cloudConfig is a configuration with a Bedrock and two Vertex AI
// providers (regional and global), all at base.
func cloudConfig(base string) *config.Config {
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: base, Auth: config.AuthKey}
	cfg.Providers["vertex-east"] = config.Provider{Type: config.Vertex, Region: "us-east5", Project: "proj-1", BaseURL: base, Auth: config.AuthKey, Query: "trace=1"}
	cfg.Providers["vertex-global"] = config.Provider{Type: config.Vertex, Region: "global", Project: "proj-1", BaseURL: base + "/", Auth: config.AuthKey}
	return cfg
}

// callerHeader is a caller's request headers: credentials of every vendor's
// kind, a cookie, Anthropic's version and a beta.
func callerHeader() http.Header {
	return http.Header{
		"Authorization": {"Bearer caller-secret"}, "X-Api-Key": {"caller-secret"}, "X-Goog-Api-Key": {"caller-secret"},
		"Api-Key": {"caller-secret"}, "Cookie": {"session=caller-secret"}, "Anthropic-Version": {"2023-06-01"},
		"Anthropic-Beta": {"context-1m-2025-08-07"}, "Openai-Beta": {"x"}, "User-Agent": {"claude-cli/9"},
	}
}

// noCallerCredentials fails t when any of the caller's credentials reached
// the upstream, in a header, the query or the body.
func noCallerCredentials(t *testing.T, s seen) {
	t.Helper()
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Cookie", "Anthropic-Version", "Openai-Beta"} {
		if v := s.header.Get(h); v != "" {
			t.Errorf("%s: %q reached the cloud", h, v)
		}
	}
	if strings.Contains(s.uri, "caller-secret") || strings.Contains(string(s.raw), "caller-secret") {
		t.Errorf("a caller's credential reached the cloud: %s %s", s.uri, s.raw)
	}
}

// A request for a model on a cloud goes in the cloud's envelope: Bedrock's
// InvokeModel with the model id escaped in the path (an inference
// profile's ARN too), Vertex AI's rawPredict and generateContent under the
// model's publisher, regional and global, whole and streamed; with none of
// the caller's credentials and its own provider's query.
func TestCloudRequests(t *testing.T) {
	hs, last := recorder(t)
	cfg := cloudConfig(hs.URL)
	const arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	msgs := wire.EndpointOf(wire.Messages)
	gen, streamGen := wire.EndpointOf(wire.GenerateContent), wire.EndpointOf(wire.StreamGenerateContent)
	messages := func(stream bool) string {
		return fmt.Sprintf(`{"model":"claude-sonnet-5-5","max_tokens":8,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
	}
	const gemini = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	for _, c := range []struct {
		name     string
		ep       wire.Endpoint
		body     string
		query    string // the caller's
		provider string
		upstream string
		format   config.Format
		uri      string // the request's target on the wire
		version  string // the body's anthropic_version, "" for a Gemini body
		beta     bool   // the beta goes as a header (Vertex AI's Claude)
	}{
		{"bedrock, a model id, whole", msgs, messages(false), "beta=true", "bedrock-east", "anthropic.claude-sonnet-4-5-20250929-v1:0", config.Anthropic,
			"/model/" + awsEscape("anthropic.claude-sonnet-4-5-20250929-v1:0") + "/invoke", bedrock.Version, false},
		{"bedrock, an inference profile's ARN, streamed", msgs, messages(true), "", "bedrock-east", arn, config.Anthropic,
			"/model/" + awsEscape(arn) + "/invoke-with-response-stream", bedrock.Version, false},
		{"bedrock, an inference profile's ARN, whole", msgs, messages(false), "", "bedrock-east", arn, config.Anthropic,
			"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke", bedrock.Version, false},
		{"vertex, claude, regional, whole", msgs, messages(false), "", "vertex-east", "claude-sonnet-4-5@20250929", config.Anthropic,
			"/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict?trace=1", vertex.Version, true},
		{"vertex, claude, global, streamed", msgs, messages(true), "", "vertex-global", "claude-sonnet-4-5@20250929", config.Anthropic,
			"/v1/projects/proj-1/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict", vertex.Version, true},
		{"vertex, gemini, regional, whole", gen, gemini, "key=caller-secret", "vertex-east", "gemini-2.5-pro", config.Gemini,
			"/v1/projects/proj-1/locations/us-east5/publishers/google/models/gemini-2.5-pro:generateContent?trace=1", "", false},
		{"vertex, gemini, global, streamed", streamGen, gemini, "alt=sse&key=caller-secret", "vertex-global", "gemini-2.5-flash", config.Gemini,
			"/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, err := wire.ParseBody(c.ep, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			cand := policy.Candidate{Model: "m", Upstream: c.upstream, Provider: c.provider, Format: c.format, Deployment: c.provider}
			req, err := NewRequest(context.Background(), cfg, c.ep, body, cand, callerHeader(), c.query)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			s := last()
			if s.uri != c.uri {
				t.Errorf("sent to\n %s\nwant\n %s", s.uri, c.uri)
			}
			noCallerCredentials(t, s)
			if got := s.header.Get("Anthropic-Beta"); (got != "") != c.beta {
				t.Errorf("anthropic-beta header %q (want it: %v)", got, c.beta)
			}
			if s.header.Get("User-Agent") != "claude-cli/9" || !strings.HasPrefix(s.header.Get("Content-Type"), "application/json") {
				t.Errorf("headers %v", s.header)
			}
			if c.version == "" {
				if string(s.raw) != c.body {
					t.Errorf("a Gemini body goes as it came; sent %s", s.raw)
				}
				return
			}
			var v string
			_ = json.Unmarshal(s.body["anthropic_version"], &v)
			if _, model := s.body["model"]; model || v != c.version || s.body["messages"] == nil {
				t.Errorf("body %s: want no model, anthropic_version %s", s.raw, c.version)
			}
		})
	}
}

// Neither a cloud nor a passthrough of spillway's own credentials: the
// cloud request carries none of its own either (the cloud transport signs
// it as it leaves), and a model's list is not asked of a cloud.
func TestCloudCredentialsAreTheTransports(t *testing.T) {
	cfg := cloudConfig("http://127.0.0.1:1")
	p := cfg.Providers["bedrock-east"]
	p.APIKey = config.Secret{Ref: "env:BK", Value: "bedrock-api-key"}
	for _, f := range []func(http.Header, config.Provider, wire.Format){SetCredentials, SetCredentialsOrOwn} {
		h := http.Header{}
		f(h, p, config.Anthropic)
		if len(h) != 0 {
			t.Errorf("a cloud's key set as a header: %v", h)
		}
	}
	if _, err := ListModels(context.Background(), http.DefaultTransport, cfg, "vertex-east", http.Header{}); err == nil || !strings.Contains(err.Error(), "probe") {
		t.Errorf("ListModels of a cloud: %v", err)
	}
}

// An OpenAI client's request may be answered by Claude on Bedrock: the
// cross-vendor step takes it (the cloud's credentials are spillway's own),
// and the translated Messages body goes in Bedrock's envelope.
func TestCloudTranslated(t *testing.T) {
	hs, last := recorder(t)
	cfg := cloudConfig(hs.URL)
	chat := wire.EndpointOf(wire.Chat)
	cand := policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "anthropic.claude-sonnet-4-5-20250929-v1:0", Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream %v", stream), func(t *testing.T) {
			body, err := wire.ParseBody(chat, fmt.Appendf(nil, `{"model":"gpt-6-astra","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
			if err != nil {
				t.Fatal(err)
			}
			x := NewCrossing(cfg, chat, body, "", true)
			if code, why := x.Check(cand); code != "" {
				t.Fatalf("the step is refused: %s %s", code, why)
			}
			req, turn, err := x.Attempt(context.Background(), cand, callerHeader(), "")
			if err != nil || turn == nil {
				t.Fatalf("%v %v", err, turn)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			s := last()
			want := "/model/" + awsEscape(cand.Upstream) + "/invoke"
			if stream {
				want += "-with-response-stream"
			}
			if s.uri != want {
				t.Errorf("sent to %s, want %s", s.uri, want)
			}
			noCallerCredentials(t, s)
			var v string
			_ = json.Unmarshal(s.body["anthropic_version"], &v)
			if _, model := s.body["model"]; model || v != bedrock.Version || s.body["messages"] == nil || s.body["max_tokens"] == nil {
				t.Errorf("the translation in Bedrock's envelope: %s", s.raw)
			}
		})
	}
	// a vendor's provider without a key of its own still may not take it
	cfg.Providers["anthropic"] = config.Provider{Type: "anthropic", BaseURL: hs.URL, Auth: config.AuthPassthrough}
	body, _ := wire.ParseBody(chat, []byte(`{"model":"gpt-6-astra","messages":[]}`))
	if code, _ := NewCrossing(cfg, chat, body, "", true).Check(policy.Candidate{Model: "claude-sonnet-5-5", Provider: "anthropic", Format: config.Anthropic}); code != policy.NoKey {
		t.Errorf("a keyless vendor: %q", code)
	}
}

// An answer is read by its content type: an AWS event stream and SSE are
// streams (the caller reads SSE either way), JSON a whole answer; and a
// cloud candidate's answers are classified by its cloud's error shapes.
func TestCloudAnswers(t *testing.T) {
	for _, c := range []struct {
		name, contentType string
		status            int
		stream            bool
		provider          classify.Provider // what the classifier was told
	}{
		{"a whole answer", "application/json", 200, false, ""},
		{"an error of Bedrock's", "application/json", 503, false, classify.Bedrock},
		{"server-sent events", "text/event-stream; charset=utf-8", 200, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				if c.status != 200 {
					w.Header().Set("X-Amzn-Errortype", "ServiceUnavailableException:http://internal.amazon.com/coral/com.amazon.bedrock/")
					w.WriteHeader(c.status)
					io.WriteString(w, `{"message":"Too many connections, please wait before trying again."}`)
					return
				}
				if c.stream {
					io.WriteString(w, messagesStream)
					return
				}
				io.WriteString(w, `{"type":"message","content":[]}`)
			}))
			defer hs.Close()
			cfg := cloudConfig(hs.URL)
			cfg.Models["claude-on-bedrock"] = config.Model{Tier: config.Heavy, Deployments: []config.Deployment{{Provider: "bedrock-east", Upstream: "anthropic.claude-sonnet-4-5-20250929-v1:0"}}}
			var mu sync.Mutex
			var told []classify.Provider
			judge := func(in classify.Input) classify.Verdict {
				mu.Lock()
				told = append(told, in.Provider)
				mu.Unlock()
				return classify.Classify(in)
			}
			msgs := wire.EndpointOf(wire.Messages)
			var stream, sse bool
			policy.New(cfg, policy.WithClassifier(judge), policy.WithClock(policytest.New(time.Now()))).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "claude-on-bedrock", Type: config.Anthropic, NoFallback: true},
				Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
					if a.Candidate.Cloud != config.Bedrock {
						t.Errorf("candidate %+v names no cloud", a.Candidate)
					}
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader("{}"))
					ans, res := Exchange(a, http.DefaultTransport, req, msgs, Options{})
					if ans != nil {
						stream = ans.Stream != nil
						sse = ans.Resp.Header.Get("Content-Type") == "text/event-stream"
						if ans.Stream != nil {
							ans.Stream.Close()
						}
					}
					return res
				}})
			if stream != c.stream || c.stream && !sse {
				t.Errorf("stream %v (SSE %v), want %v", stream, sse, c.stream)
			}
			if c.provider != "" && !slices.Contains(told, c.provider) {
				t.Errorf("the classifier was told %v, want %s", told, c.provider)
			}
		})
	}
}

// messagesStream is a whole Messages answer, streamed.
const messagesStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// The escaped form is what goes on the wire, whatever a URL's String makes
// of it.
func TestAWSEscape(t *testing.T) {
	if got := awsEscape("a:b/c.d-e_f~g@h"); got != "a%3Ab%2Fc.d-e_f~g%40h" {
		t.Fatal(got)
	}
	if u, _ := url.Parse("http://h/model/" + awsEscape("x:y/z") + "/invoke"); u.EscapedPath() != "/model/x%3Ay%2Fz/invoke" {
		t.Fatal(u.EscapedPath())
	}
}

// spillway's own one-token probe of a model on a cloud goes in the cloud's
// envelope, as a request's would.
func TestCloudProbe(t *testing.T) {
	hs, last := recorder(t)
	cfg := cloudConfig(hs.URL)
	for _, c := range []struct {
		cand policy.Candidate
		uri  string
	}{
		{policy.Candidate{Model: "claude-sonnet-5-5", Upstream: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Provider: "bedrock-east", Format: config.Anthropic, Cloud: config.Bedrock},
			"/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"},
		{policy.Candidate{Model: "gemini-3-pro", Upstream: "gemini-2.5-pro", Provider: "vertex-global", Format: config.Gemini, Cloud: config.Vertex},
			"/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-pro:generateContent"},
	} {
		ans, err := Probe(context.Background(), signsClouds{http.DefaultTransport}, cfg, c.cand, http.Header{"X-Api-Key": {"caller-secret"}})
		if err != nil || ans.Status != 200 {
			t.Fatalf("%s: %v %+v", c.cand.Provider, err, ans)
		}
		if s := last(); s.uri != c.uri {
			t.Errorf("probe sent to %s, want %s", s.uri, c.uri)
		} else {
			noCallerCredentials(t, s)
		}
	}
}

// A cloud's error answer reaches a Messages client as the Anthropic API
// would say an error of its class, none of the cloud's headers with it; a
// refusal of spillway's credentials says none of the cloud's words (they
// name the account's role), and no record or reason carries the account.
func TestCloudErrorsInClientWords(t *testing.T) {
	const arn = "arn:aws:sts::123456789012:assumed-role/BedrockAdmin/session-7"
	for _, tt := range []struct {
		name, provider, upstream string
		status, want             int // the cloud's status, the client's
		header                   http.Header
		body                     string
		class                    classify.Class
		errType                  string   // the Anthropic error type the client reads
		has                      []string // what the client's body says
	}{
		{"Bedrock's access denied", "bedrock-east", "anthropic.claude-sonnet-4-5-20250929-v1:0", 403, 401,
			http.Header{"X-Amzn-Errortype": {"AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
			`{"message":"User: ` + arn + ` is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1::foundation-model/x"}`,
			classify.Auth, "authentication_error", []string{"bedrock-east", "AccessDeniedException", "spillway doctor"}},
		{"Bedrock's validation error", "bedrock-east", "anthropic.claude-sonnet-4-5-20250929-v1:0", 400, 400,
			http.Header{"X-Amzn-Errortype": {"ValidationException"}},
			`{"message":"Malformed input request: #: extraneous key [foo] is not permitted (caller ` + arn + `)"}`,
			classify.BadRequest, "invalid_request_error", []string{"Malformed input request", "assumed-role/BedrockAdmin"}},
		{"Vertex AI's permission denied", "vertex-east", "claude-sonnet-4-5@20250929", 403, 401, nil,
			`{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/proj-1/locations/us-east5' (or it may not exist).","status":"PERMISSION_DENIED"}}`,
			classify.Auth, "authentication_error", []string{"vertex-east", "spillway doctor"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, vs := range tt.header {
					w.Header()[k] = vs
				}
				w.Header().Set("X-Amzn-Requestid", "a1b2c3")
				w.Header().Set("X-Goog-Trace", "t")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer hs.Close()
			cfg := cloudConfig(hs.URL)
			cfg.Models["claude-on-cloud"] = config.Model{Tier: config.Heavy, Deployments: []config.Deployment{{Provider: tt.provider, Upstream: tt.upstream}}}
			msgs := wire.EndpointOf(wire.Messages)
			out := policy.New(cfg, policy.WithClock(policytest.New(time.Now()))).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "claude-on-cloud", Type: config.Anthropic, NoFallback: true},
				Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader("{}"))
					_, res := Exchange(a, http.DefaultTransport, req, msgs, Options{})
					return res
				}})
			if out.Verdict.Class != tt.class {
				t.Fatalf("class %s, want %s: %+v", out.Verdict.Class, tt.class, out)
			}
			status, h, body := GiveUp(msgs, out)
			var got struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(body, &got); err != nil || got.Type != "error" || got.Error.Type != tt.errType || status != tt.want {
				t.Fatalf("HTTP %d %s: not the Anthropic API's %s (%v)", status, body, tt.errType, err)
			}
			for _, want := range tt.has {
				if !strings.Contains(got.Error.Message, want) {
					t.Errorf("the message %q says no %q", got.Error.Message, want)
				}
			}
			for k := range h {
				if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amzn-") || strings.HasPrefix(lk, "x-goog-") {
					t.Errorf("the client got the cloud's header %s", k)
				}
			}
			for what, s := range map[string]string{"the answer": string(body), "the reason": out.Reason, "the verdict": out.Verdict.Message} {
				if strings.Contains(s, "123456789012") || tt.class == classify.Auth && (strings.Contains(s, "arn:aws") || strings.Contains(s, "Permission 'aiplatform")) {
					t.Errorf("%s carries the cloud's account words: %s", what, s)
				}
			}
		})
	}
}

// A cloud's own headers do not reach the client with its answer.
func TestCloudAnswerHeaders(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-Requestid", "a1b2c3")
		w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", "12")
		w.Header().Set("X-Goog-Trace", "t")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[]}`)
	}))
	defer hs.Close()
	cfg := cloudConfig(hs.URL)
	cfg.Models["claude-on-bedrock"] = config.Model{Tier: config.Heavy, Deployments: []config.Deployment{{Provider: "bedrock-east", Upstream: "anthropic.claude-x-v1:0"}}}
	var h http.Header
	policy.New(cfg, policy.WithClock(policytest.New(time.Now()))).Run(context.Background(), &policy.Call{Request: policy.Request{Model: "claude-on-bedrock", Type: config.Anthropic, NoFallback: true},
		Send: func(ctx context.Context, a *policy.Attempt) policy.Result {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader("{}"))
			ans, res := Exchange(a, http.DefaultTransport, req, wire.EndpointOf(wire.Messages), Options{})
			if ans != nil {
				h = ans.Resp.Header
			}
			return res
		}})
	if h == nil || h.Get("Content-Type") != "application/json" {
		t.Fatalf("no answer: %v", h)
	}
	for k := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amzn-") || strings.HasPrefix(lk, "x-goog-") {
			t.Errorf("the client got the cloud's header %s", k)
		}
	}
}
