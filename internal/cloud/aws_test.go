package cloud

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

// The test credentials: canaries that must never leave in an error or a
// Source.
const (
	testKeyID   = "AKIAIOSFODNN7EXAMPLE"
	testSecret  = "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"
	testToken   = "FwoGZXIvYXdzEBYaDCANARYSESSIONTOKENxyz0123456789abcdefghij"
	profKeyID   = "AKIAPROFILEEXAMPLE01"
	profSecret  = "profileSECRETcanary0123456789abcdefghijk"
	testRegion  = "us-east-1"
	modelPath   = "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
	requestBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// awsEnv isolates the AWS SDK from the machine: the given environment
// credentials (none when keyID is empty), config and credentials files of
// the test's own (absent unless written), no instance metadata.
func awsEnv(t *testing.T, keyID, secret, token string) (configFile, credsFile string) {
	t.Helper()
	dir := t.TempDir()
	configFile, credsFile = filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token,
		"AWS_CONFIG_FILE": configFile, "AWS_SHARED_CREDENTIALS_FILE": credsFile,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "",
		"AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
	} {
		t.Setenv(k, v)
	}
	return configFile, credsFile
}

// sigV4Server is Bedrock's signature check: it signs again, with the SDK's
// signer and the credentials it knows by key id, what it received (the
// signed headers, the body's hash, the date the request gives) and
// refuses (403) a request whose signature differs. It answers 200 with
// the key id that signed.
type sigV4Server struct {
	*httptest.Server
	known map[string]aws.Credentials // by access key id

	mu   sync.Mutex
	seen []*http.Request
}

func newSigV4Server(t *testing.T, creds ...aws.Credentials) *sigV4Server {
	s := &sigV4Server{known: map[string]aws.Credentials{}}
	for _, c := range creds {
		s.known[c.AccessKeyID] = c
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *sigV4Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, r)
	s.mu.Unlock()
	if err := s.verify(r, body); err != nil {
		w.Header().Set("X-Amzn-Errortype", "InvalidSignatureException")
		http.Error(w, `{"message":"`+err.Error()+`"}`, http.StatusForbidden)
		return
	}
	io.WriteString(w, strings.SplitN(strings.TrimPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="), "/", 2)[0])
}

func (s *sigV4Server) verify(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ", ") {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || len(scope) != 5 {
		return errors.New("no SigV4 authorization")
	}
	c, ok := s.known[scope[0]]
	if !ok {
		return errors.New("unknown key id")
	}
	if scope[2] != testRegion || scope[3] != "bedrock" {
		return errors.New("wrong scope " + fields["Credential"])
	}
	if r.Header.Get("X-Amz-Security-Token") != c.SessionToken {
		return errors.New("session token mismatch")
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	u, _ := url.Parse("http://" + r.Host + r.RequestURI)
	again, _ := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), c, again, hex.EncodeToString(sum[:]), "bedrock", testRegion, when); err != nil {
		return err
	}
	if again.Header.Get("Authorization") != auth {
		return errors.New("signature mismatch")
	}
	return nil
}

// bedrockRequest is a marked request for provider p of the body b.
func bedrockRequest(t *testing.T, base string, p config.Provider, b string) *http.Request {
	t.Helper()
	ctx := With(context.Background(), "bedrock-east", p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+modelPath, strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return req
}

// send is req's status and body through tr.
func send(t *testing.T, tr http.RoundTripper, req *http.Request) (int, string) {
	t.Helper()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestSigV4Verifies(t *testing.T) {
	for _, c := range []struct {
		name, token string
	}{
		{"long-term keys", ""},
		{"session credentials", testToken},
	} {
		t.Run(c.name, func(t *testing.T) {
			awsEnv(t, testKeyID, testSecret, c.token)
			srv := newSigV4Server(t, aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: c.token})
			clock := newClock()
			tr := NewTransport(nil, clock)
			p := config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: srv.URL}
			for i := range 3 {
				req := bedrockRequest(t, srv.URL, p, requestBody)
				if status, body := send(t, tr, req); status != 200 || body != testKeyID {
					t.Fatalf("request %d: %d %s", i, status, body)
				}
				if req.Header.Get("Authorization") != "" {
					t.Fatal("RoundTrip changed the caller's request")
				}
				clock.Advance(time.Minute)
			}
			got := srv.seen[0]
			if d := got.Header.Get("X-Amz-Date"); d != "20261206T100000Z" {
				t.Errorf("X-Amz-Date %q, want the injected clock's", d)
			}
			if tok := got.Header.Get("X-Amz-Security-Token"); tok != c.token {
				t.Errorf("X-Amz-Security-Token %q, want %q", tok, c.token)
			}
			if got.RequestURI != modelPath {
				t.Errorf("path %q, want the escaped %q", got.RequestURI, modelPath)
			}
		})
	}
}

// tamper changes one byte of each request's body after it was signed.
type tamper struct{ base http.RoundTripper }

func (tp tamper) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	req.Body.Close()
	b[len(b)/2] ^= 1
	req.Body = io.NopCloser(bytes.NewReader(b))
	return tp.base.RoundTrip(req)
}

func TestSigV4TamperedBodyRefused(t *testing.T) {
	awsEnv(t, testKeyID, testSecret, testToken)
	srv := newSigV4Server(t, aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: testToken})
	p := config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: srv.URL}
	if status, body := send(t, NewTransport(nil, newClock()), bedrockRequest(t, srv.URL, p, requestBody)); status != 200 {
		t.Fatalf("untampered: %d %s", status, body)
	}
	status, body := send(t, NewTransport(tamper{http.DefaultTransport}, newClock()), bedrockRequest(t, srv.URL, p, requestBody))
	if status != http.StatusForbidden || !strings.Contains(body, "signature mismatch") {
		t.Fatalf("tampered body: %d %s, want Bedrock's 403", status, body)
	}
}

// recorder keeps the requests base was given, and answers 200.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

func TestSigV4BodyIsReplayable(t *testing.T) {
	awsEnv(t, testKeyID, testSecret, "")
	rec := &recorder{}
	tr := NewTransport(rec, newClock())
	p := config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com"}
	for _, c := range []struct {
		name    string
		getBody bool
	}{{"with GetBody", true}, {"a plain reader", false}} {
		t.Run(c.name, func(t *testing.T) {
			req := bedrockRequest(t, p.BaseURL, p, requestBody)
			if !c.getBody {
				req.GetBody, req.Body = nil, io.NopCloser(strings.NewReader(requestBody))
			}
			send(t, tr, req)
			out := rec.reqs[len(rec.reqs)-1]
			if out.ContentLength != int64(len(requestBody)) || out.GetBody == nil {
				t.Fatalf("ContentLength %d, GetBody set %v", out.ContentLength, out.GetBody != nil)
			}
			for range 2 {
				rc, _ := out.GetBody()
				if b, _ := io.ReadAll(rc); string(b) != requestBody {
					t.Fatalf("GetBody gave %q", b)
				}
			}
			if b, _ := io.ReadAll(out.Body); string(b) != requestBody {
				t.Fatalf("Body gave %q", b)
			}
			if !strings.Contains(out.Header.Get("Authorization"), "Credential="+testKeyID+"/20261206/us-east-1/bedrock/aws4_request") {
				t.Fatalf("Authorization %q", out.Header.Get("Authorization"))
			}
		})
	}
}

// onceBody is a body that may be read once: a second read (after EOF)
// fails, so a signer that copied it and then sent it would be caught.
type onceBody struct {
	r    io.Reader
	done bool
}

func (b *onceBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("body read again")
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.done = true
	}
	return n, err
}

func (b *onceBody) Close() error { return nil }

// seeBody records the body each request is sent with, then sends it on.
type seeBody struct {
	base   http.RoundTripper
	bodies []io.ReadCloser
}

func (s *seeBody) RoundTrip(req *http.Request) (*http.Response, error) {
	s.bodies = append(s.bodies, req.Body)
	return s.base.RoundTrip(req)
}

func TestSigV4HashesGetBodyWithoutACopy(t *testing.T) {
	awsEnv(t, testKeyID, testSecret, testToken)
	srv := newSigV4Server(t, aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: testToken})
	p := config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: srv.URL}
	see := &seeBody{base: http.DefaultTransport}
	tr := NewTransport(see, newClock())
	req := bedrockRequest(t, srv.URL, p, requestBody)
	own := &onceBody{r: strings.NewReader(requestBody)}
	calls := 0
	req.Body = own
	req.GetBody = func() (io.ReadCloser, error) {
		calls++
		return &onceBody{r: strings.NewReader(requestBody)}, nil
	}
	if status, body := send(t, tr, req); status != 200 || body != testKeyID {
		t.Fatalf("%d %s", status, body)
	}
	if calls != 1 {
		t.Errorf("GetBody called %d times, want once (to hash)", calls)
	}
	if len(see.bodies) != 1 || see.bodies[0] != io.ReadCloser(own) {
		t.Errorf("the request was sent with another body than its own: a copy")
	}
	if !own.done {
		t.Error("the request's own body was not sent")
	}
}

func TestBedrockAPIKeyIsABearerUnsigned(t *testing.T) {
	awsEnv(t, testKeyID, testSecret, testToken)
	rec := &recorder{}
	p := config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com",
		APIKey: config.Secret{Ref: "env:AWS_BEARER_TOKEN_BEDROCK", Value: "bedrock-api-key-CANARY-0123456789"}}
	req := bedrockRequest(t, p.BaseURL, p, requestBody)
	req.Header.Set("Authorization", "Bearer the-callers-own-key")
	send(t, NewTransport(rec, newClock()), req)
	out := rec.reqs[0]
	if got := out.Header.Get("Authorization"); got != "Bearer bedrock-api-key-CANARY-0123456789" {
		t.Fatalf("Authorization %q", got)
	}
	for _, h := range []string{"X-Amz-Date", "X-Amz-Security-Token"} {
		if out.Header.Get(h) != "" {
			t.Errorf("%s set on an API-key request", h)
		}
	}
	src, err := NewTransport(rec, newClock()).Source(context.Background(), "bedrock-east", p)
	if err != nil || src != "api_key" {
		t.Fatalf("Source = %q, %v", src, err)
	}
}

func TestMarkedRequestToAnotherHostIsRefused(t *testing.T) {
	awsEnv(t, testKeyID, testSecret, testToken)
	var hits int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer other.Close()
	otherURL, _ := url.Parse(other.URL)
	for _, c := range []struct {
		name string
		p    config.Provider
		url  string
	}{
		{"bedrock, another host", config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com"}, other.URL},
		{"bedrock api key, another port", config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: "http://127.0.0.1:1",
			APIKey: config.Secret{Value: "bedrock-api-key-CANARY-0123456789"}}, other.URL},
		{"vertex, another scheme", config.Provider{Type: config.Vertex, Region: "global", BaseURL: "https://" + otherURL.Host, CredentialsFile: "/nonexistent"}, other.URL},
		{"not a cloud", config.Provider{Type: "anthropic", BaseURL: other.URL}, other.URL},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(With(context.Background(), "p", c.p), http.MethodPost, c.url+modelPath, strings.NewReader(requestBody))
			resp, err := NewTransport(nil, newClock()).RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatal("a marked request went to another host")
			}
			noSecret(t, err.Error())
		})
	}
	if hits != 0 {
		t.Fatalf("the other host got %d requests", hits)
	}
}

func TestUnmarkedRequestIsUntouched(t *testing.T) {
	awsEnv(t, testKeyID, testSecret, testToken)
	rec := &recorder{}
	req, _ := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages", strings.NewReader(requestBody))
	req.Header.Set("X-Api-Key", "the-callers-key")
	send(t, NewTransport(rec, newClock()), req)
	if rec.reqs[0] != req || req.Header.Get("X-Api-Key") != "the-callers-key" || len(req.Header) != 1 {
		t.Fatalf("an unmarked request was changed: %v", req.Header)
	}
	if _, ok := Marked(req.Context()); ok {
		t.Fatal("Marked on an unmarked context")
	}
	if name, ok := Marked(With(context.Background(), "bedrock-east", config.Provider{Type: config.Bedrock})); !ok || name != "bedrock-east" {
		t.Fatalf("Marked = %q, %v", name, ok)
	}
}

func TestAWSSharedProfile(t *testing.T) {
	configFile, credsFile := awsEnv(t, "", "", "")
	os.WriteFile(configFile, []byte("[profile work]\nregion = eu-west-1\n"), 0o600)
	os.WriteFile(credsFile, []byte("[default]\naws_access_key_id = "+testKeyID+"\naws_secret_access_key = "+testSecret+
		"\n\n[work]\naws_access_key_id = "+profKeyID+"\naws_secret_access_key = "+profSecret+"\n"), 0o600)
	srv := newSigV4Server(t, aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret},
		aws.Credentials{AccessKeyID: profKeyID, SecretAccessKey: profSecret})
	tr := NewTransport(nil, newClock())
	for _, c := range []struct{ profile, keyID, source string }{
		{"work", profKeyID, "shared profile work (" + credsFile + ")"},
		{"", testKeyID, "shared profile default (" + credsFile + ")"},
	} {
		p := config.Provider{Type: config.Bedrock, Region: testRegion, Profile: c.profile, BaseURL: srv.URL}
		if status, body := send(t, tr, bedrockRequest(t, srv.URL, p, requestBody)); status != 200 || body != c.keyID {
			t.Fatalf("profile %q: %d %s, want signed by %s", c.profile, status, body, c.keyID)
		}
		src, err := tr.Source(context.Background(), "bedrock-east", p)
		if err != nil || src != c.source {
			t.Fatalf("Source = %q, %v; want %q", src, err, c.source)
		}
		noSecret(t, src)
	}
}

func TestAWSConfigCachedPerSettings(t *testing.T) {
	awsEnv(t, testKeyID, testSecret, "")
	srv := newSigV4Server(t, aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret},
		aws.Credentials{AccessKeyID: profKeyID, SecretAccessKey: profSecret})
	tr := NewTransport(nil, newClock())
	p := config.Provider{Type: config.Bedrock, Region: testRegion, BaseURL: srv.URL}
	if _, body := send(t, tr, bedrockRequest(t, srv.URL, p, requestBody)); body != testKeyID {
		t.Fatalf("signed by %q", body)
	}
	src, err := tr.Source(context.Background(), "bedrock-east", p)
	if err != nil || src != "environment (AWS_ACCESS_KEY_ID)" {
		t.Fatalf("Source = %q, %v", src, err)
	}
	// the environment changes: the loaded configuration stays, until the
	// provider's settings change
	t.Setenv("AWS_ACCESS_KEY_ID", profKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", profSecret)
	if _, body := send(t, tr, bedrockRequest(t, srv.URL, p, requestBody)); body != testKeyID {
		t.Fatalf("same settings: signed by %q, want the cached configuration's %s", body, testKeyID)
	}
	p.Profile = "other"
	os.WriteFile(os.Getenv("AWS_SHARED_CREDENTIALS_FILE"), []byte("[other]\naws_access_key_id = "+profKeyID+"\naws_secret_access_key = "+profSecret+"\n"), 0o600)
	if _, body := send(t, tr, bedrockRequest(t, srv.URL, p, requestBody)); body != profKeyID {
		t.Fatalf("new settings: signed by %q, want a new configuration's %s", body, profKeyID)
	}
	// a request pinned to the configuration before the reload still has
	// its credentials
	p.Profile = ""
	if _, body := send(t, tr, bedrockRequest(t, srv.URL, p, requestBody)); body != testKeyID {
		t.Fatalf("the settings before: signed by %q, want their cached configuration's %s", body, testKeyID)
	}
}

func TestAWSNoCredentialsIsAnAuthError(t *testing.T) {
	awsEnv(t, "", "", "")
	rec := &recorder{}
	p := config.Provider{Type: config.Bedrock, Region: testRegion, Profile: "missing", BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com"}
	for _, p := range []config.Provider{p, {Type: config.Bedrock, Region: testRegion, BaseURL: p.BaseURL}} {
		_, err := NewTransport(rec, newClock()).RoundTrip(bedrockRequest(t, p.BaseURL, p, requestBody))
		if err == nil {
			t.Fatalf("profile %q: signed without credentials", p.Profile)
		}
		if v := classify.Err(err); v.Class != classify.Auth || !strings.Contains(err.Error(), `bedrock provider "bedrock-east"`) {
			t.Fatalf("profile %q: %v classified %s", p.Profile, err, v.Class)
		}
		if _, err := NewTransport(rec, newClock()).Source(context.Background(), "bedrock-east", p); err == nil {
			t.Fatal("Source without credentials")
		}
	}
	if len(rec.reqs) != 0 {
		t.Fatalf("%d requests sent", len(rec.reqs))
	}
}

func TestAWSSourceNames(t *testing.T) {
	for src, want := range map[string]string{
		"EnvConfigCredentials":               "environment (AWS_ACCESS_KEY_ID)",
		"SharedConfigCredentials: /h/.aws/c": "shared profile work (/h/.aws/c)",
		"SSOProvider":                        "SSO (profile work)",
		"WebIdentityCredentials":             "web identity",
		"CredentialsEndpointProvider":        "container role",
		"EC2RoleProvider":                    "instance role",
		"AssumeRoleProvider":                 "assumed role (profile work)",
	} {
		if got := awsSource(src, "work"); got != want {
			t.Errorf("awsSource(%q) = %q, want %q", src, got, want)
		}
	}
}

// canaries are every secret the tests configure.
var canaries = []string{testSecret, testToken, profSecret, "bedrock-api-key-CANARY", "CANARY"}

// noSecret fails when s holds a canary.
func noSecret(t *testing.T, s string) {
	t.Helper()
	for _, c := range append(canaries, googleCanaries()...) {
		if c != "" && strings.Contains(s, c) {
			t.Fatalf("a secret (%.6s…) in %q", c, s)
		}
	}
}
