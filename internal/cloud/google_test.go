package cloud

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
)

const (
	saEmail      = "spillway@test-project.iam.gserviceaccount.com"
	clientSecret = "client-secret-CANARY-0123456789"
	refreshToken = "1//refresh-token-CANARY-0123456789"
	vertexPath   = "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
)

var (
	keyOnce sync.Once
	saKey   *rsa.PrivateKey
	saPEM   string
)

// serviceKey is the test service account's RSA key, made once.
func serviceKey(t *testing.T) (*rsa.PrivateKey, string) {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		saKey, saPEM = k, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	})
	return saKey, saPEM
}

// googleCanaries are the Google secrets the tests configure (the private
// key's body by a line of it).
func googleCanaries() []string {
	out := []string{clientSecret, refreshToken}
	if saPEM != "" {
		out = append(out, strings.Split(saPEM, "\n")[2])
	}
	return out
}

// google is a fake Google: a token endpoint (POST /token) for the
// JWT-bearer grant, which verifies the assertion's RS256 signature with
// the service account's public key, and the refresh-token grant; and
// Vertex AI, which takes only the last token the endpoint gave.
type fakeGoogle struct {
	*httptest.Server
	key *rsa.PublicKey

	tokenCalls atomic.Int32
	fail       atomic.Bool    // the token endpoint refuses
	down       atomic.Bool    // the token endpoint answers 500
	gate       chan chan bool // when set, each token call waits for a release
	grants     sync.Map       // grant type → count
	mu         sync.Mutex
	current    string         // the last token given
	used       map[string]int // tokens Vertex saw
}

func newFakeGoogle(t *testing.T) *fakeGoogle {
	k, _ := serviceKey(t)
	g := &fakeGoogle{key: &k.PublicKey, used: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", g.token)
	mux.HandleFunc("POST /v1/", g.vertex)
	g.Server = httptest.NewServer(mux)
	t.Cleanup(g.Close)
	return g
}

func (g *fakeGoogle) token(w http.ResponseWriter, r *http.Request) {
	if g.gate != nil {
		release := make(chan bool)
		g.gate <- release
		<-release
	}
	n := g.tokenCalls.Add(1)
	if g.down.Load() {
		http.Error(w, "backend error", http.StatusInternalServerError)
		return
	}
	r.ParseForm()
	grant := r.PostForm.Get("grant_type")
	var err error
	switch grant {
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		err = g.checkAssertion(r.PostForm.Get("assertion"), "http://"+r.Host+"/token")
	case "refresh_token":
		if r.PostForm.Get("refresh_token") != refreshToken || r.PostForm.Get("client_secret") != clientSecret || r.PostForm.Get("client_id") != "client-id.apps" {
			err = errors.New("bad refresh grant")
		}
	default:
		err = fmt.Errorf("unsupported grant %q", grant)
	}
	if err == nil && g.fail.Load() {
		// an endpoint that echoes what it was sent, secrets and all
		err = fmt.Errorf("echo %s %s %s", r.PostForm.Get("refresh_token"), r.PostForm.Get("client_secret"), saPEM)
	}
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": err.Error()})
		return
	}
	c, _ := g.grants.LoadOrStore(grant, new(atomic.Int32))
	c.(*atomic.Int32).Add(1)
	tok := fmt.Sprintf("ya29.test-token-%d", n)
	g.mu.Lock()
	g.current = tok
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":%q,"expires_in":3600,"token_type":"Bearer"}`, tok)
}

// checkAssertion verifies a JWT-bearer assertion: RS256 by the service
// account's key, issued by it, for the token endpoint aud, with Vertex's
// scope.
func (g *fakeGoogle) checkAssertion(jwt, aud string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	var head struct{ Alg string }
	var claims struct {
		Iss, Scope, Aud string
		Exp, Iat        int64
	}
	for i, v := range []any{&head, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, v) != nil {
			return errors.New("bad JWT part")
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if head.Alg != "RS256" || rsa.VerifyPKCS1v15(g.key, crypto.SHA256, sum[:], sig) != nil {
		return errors.New("assertion signature does not verify")
	}
	if claims.Iss != saEmail || claims.Aud != aud || claims.Scope != scope || claims.Exp <= claims.Iat {
		return fmt.Errorf("bad claims %+v", claims)
	}
	return nil
}

func (g *fakeGoogle) vertex(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	g.used[tok]++
	ok := tok == g.current
	g.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"code":401,"status":"UNAUTHENTICATED"}}`, http.StatusUnauthorized)
		return
	}
	io.WriteString(w, tok)
}

func (g *fakeGoogle) grantCount(grant string) int32 {
	if c, ok := g.grants.Load(grant); ok {
		return c.(*atomic.Int32).Load()
	}
	return 0
}

// credentialsFile writes a credentials JSON of kind for g's endpoint.
func credentialsFile(t *testing.T, g *fakeGoogle, kind string) string {
	_, keyPEM := serviceKey(t)
	var v map[string]string
	switch kind {
	case "service_account":
		v = map[string]string{"type": kind, "project_id": "test-project", "private_key_id": "kid-1", "private_key": keyPEM,
			"client_email": saEmail, "client_id": "1234", "token_uri": g.URL + "/token"}
	case "authorized_user":
		v = map[string]string{"type": kind, "client_id": "client-id.apps", "client_secret": clientSecret,
			"refresh_token": refreshToken, "token_uri": g.URL + "/token"}
	}
	b, _ := json.Marshal(v)
	path := filepath.Join(t.TempDir(), kind+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// vertexProvider is a vertex provider on g with credentials file.
func vertexProvider(g *fakeGoogle, file string) config.Provider {
	return config.Provider{Type: config.Vertex, Project: "test-project", Region: "us-east5", BaseURL: g.URL, CredentialsFile: file}
}

func vertexRequest(t *testing.T, p config.Provider) *http.Request {
	req, err := http.NewRequestWithContext(With(context.Background(), "vertex-east", p), http.MethodPost, p.BaseURL+vertexPath, strings.NewReader(requestBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer the-callers-own")
	return req
}

func TestVertexServiceAccountTokenCached(t *testing.T) {
	g := newFakeGoogle(t)
	p := vertexProvider(g, credentialsFile(t, g, "service_account"))
	tr := NewTransport(nil, newClock())
	for i := range 5 {
		if status, body := send(t, tr, vertexRequest(t, p)); status != 200 || body != "ya29.test-token-1" {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	if n := g.grantCount("urn:ietf:params:oauth:grant-type:jwt-bearer"); n != 1 || g.tokenCalls.Load() != 1 {
		t.Fatalf("%d JWT grants, %d token calls; want one for five requests", n, g.tokenCalls.Load())
	}
	if g.used["the-callers-own"] != 0 {
		t.Fatal("the caller's credential reached Vertex")
	}
}

func TestVertexRefreshedBeforeExpiry(t *testing.T) {
	g := newFakeGoogle(t)
	p := vertexProvider(g, credentialsFile(t, g, "service_account"))
	clock := newClock()
	tr := NewTransport(nil, clock)
	steps := []struct {
		advance time.Duration
		token   string
	}{
		{0, "ya29.test-token-1"},
		{54 * time.Minute, "ya29.test-token-1"},             // 6 minutes left: kept
		{time.Minute - time.Second, "ya29.test-token-1"},    // 5 min 1 s left: kept
		{time.Second, "ya29.test-token-2"},                  // 5 minutes left: refreshed
		{55*time.Minute - time.Second, "ya29.test-token-2"}, // the new one's life counts from its refresh
		{time.Second, "ya29.test-token-3"},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		if status, body := send(t, tr, vertexRequest(t, p)); status != 200 || body != s.token {
			t.Fatalf("step %d: %d %s, want %s", i, status, body, s.token)
		}
	}
	if n := g.tokenCalls.Load(); n != 3 {
		t.Fatalf("%d token calls, want 3", n)
	}
}

func TestVertexFailedRefreshKeepsTheValidToken(t *testing.T) {
	g := newFakeGoogle(t)
	p := vertexProvider(g, credentialsFile(t, g, "service_account"))
	clock := newClock()
	tr := NewTransport(nil, clock)
	if status, body := send(t, tr, vertexRequest(t, p)); status != 200 || body != "ya29.test-token-1" {
		t.Fatalf("first: %d %s", status, body)
	}
	clock.Advance(58 * time.Minute) // 2 minutes left: due for refresh
	g.down.Store(true)
	burst := func(step string) {
		t.Helper()
		for range 5 {
			if status, body := send(t, tr, vertexRequest(t, p)); status != 200 || body != "ya29.test-token-1" {
				t.Fatalf("%s: %d %s, want the held token", step, status, body)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for range 10 {
			wg.Go(func() {
				resp, err := tr.RoundTrip(vertexRequest(t, p))
				if err == nil {
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
					resp.Body.Close()
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
	}
	steps := []struct {
		name    string
		advance time.Duration
		calls   int32
	}{
		{"the first failure", 0, 2},
		{"within the back-off", retryAfter - time.Second, 2},
		{"after the back-off", time.Second, 3},
	}
	for _, s := range steps {
		clock.Advance(s.advance)
		burst(s.name)
		if n := g.tokenCalls.Load(); n != s.calls {
			t.Fatalf("%s: %d token calls, want %d", s.name, n, s.calls)
		}
	}
	clock.Advance(2*time.Minute - retryAfter) // the token has expired
	_, err := tr.RoundTrip(vertexRequest(t, p))
	if err == nil || classify.Err(err).Class != classify.Auth {
		t.Fatalf("after the expiry: %v, want the endpoint's failure", err)
	}
	g.down.Store(false)
	if status, body := send(t, tr, vertexRequest(t, p)); status != 200 || body != "ya29.test-token-5" {
		t.Fatalf("the endpoint back: %d %s", status, body)
	}
}

func TestVertexConcurrentCallersRefreshOnce(t *testing.T) {
	g := newFakeGoogle(t)
	p := vertexProvider(g, credentialsFile(t, g, "service_account"))
	clock := newClock()
	tr := NewTransport(nil, clock)
	for round, want := range []int32{1, 2} {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Go(func() {
				resp, err := tr.RoundTrip(vertexRequest(t, p))
				if err == nil {
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
					resp.Body.Close()
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if n := g.tokenCalls.Load(); n != want {
			t.Fatalf("round %d: %d token calls, want %d", round, n, want)
		}
		clock.Advance(56 * time.Minute)
	}
}

func TestVertexWaitersHonourTheirContext(t *testing.T) {
	g := newFakeGoogle(t)
	g.gate = make(chan chan bool)
	p := vertexProvider(g, credentialsFile(t, g, "service_account"))
	tr := NewTransport(nil, newClock())
	first := make(chan error, 1)
	go func() {
		resp, err := tr.RoundTrip(vertexRequest(t, p))
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	release := <-g.gate // the first caller's refresh is at the endpoint
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := vertexRequest(t, p).WithContext(With(ctx, "vertex-east", p))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled waiter: %v", err)
	}
	release <- true
	if err := <-first; err != nil {
		t.Fatalf("the refreshing caller: %v", err)
	}
}

func TestVertexAuthorizedUser(t *testing.T) {
	g := newFakeGoogle(t)
	file := credentialsFile(t, g, "authorized_user")
	p := vertexProvider(g, file)
	tr := NewTransport(nil, newClock())
	for range 3 {
		if status, body := send(t, tr, vertexRequest(t, p)); status != 200 || body != "ya29.test-token-1" {
			t.Fatalf("%d %s", status, body)
		}
	}
	if n := g.grantCount("refresh_token"); n != 1 {
		t.Fatalf("%d refresh grants, want 1", n)
	}
	src, err := tr.Source(context.Background(), "vertex-east", p)
	if want := "user credentials (file " + file + ")"; err != nil || src != want {
		t.Fatalf("Source = %q, %v; want %q", src, err, want)
	}
}

func TestVertexSource(t *testing.T) {
	g := newFakeGoogle(t)
	file := credentialsFile(t, g, "service_account")
	tr := NewTransport(nil, newClock())
	want := "service account " + saEmail + " (file " + file + ")"
	src, err := tr.Source(context.Background(), "vertex-east", vertexProvider(g, file))
	if err != nil || src != want {
		t.Fatalf("credentials_file: Source = %q, %v; want %q", src, err, want)
	}
	// Application Default Credentials, by GOOGLE_APPLICATION_CREDENTIALS
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	p := vertexProvider(g, "")
	src, err = tr.Source(context.Background(), "vertex-adc", p)
	if err != nil || src != want {
		t.Fatalf("ADC: Source = %q, %v; want %q", src, err, want)
	}
	if status, body := send(t, tr, vertexRequest(t, p)); status != 200 || body != "ya29.test-token-1" {
		t.Fatalf("ADC: %d %s", status, body)
	}
	noSecret(t, src)
}

func TestVertexTokenEndpointFailureIsAnAuthError(t *testing.T) {
	for _, kind := range []string{"service_account", "authorized_user"} {
		t.Run(kind, func(t *testing.T) {
			g := newFakeGoogle(t)
			g.fail.Store(true)
			file := credentialsFile(t, g, kind)
			p := vertexProvider(g, file)
			_, err := NewTransport(nil, newClock()).RoundTrip(vertexRequest(t, p))
			if err == nil {
				t.Fatal("no error from a failing token endpoint")
			}
			v := classify.Err(err)
			if v.Class != classify.Auth || !strings.Contains(err.Error(), `vertex provider "vertex-east"`) || !strings.Contains(err.Error(), file) {
				t.Fatalf("%v classified %s", err, v.Class)
			}
			noSecret(t, err.Error())
			noSecret(t, v.Message)
			if len(g.used) != 0 {
				t.Fatal("Vertex got a request without a token")
			}
		})
	}
}

func TestVertexBadCredentialsFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\nnotakeyCANARY\n-----END PRIVATE KEY-----\n"`), 0o600)
	for _, file := range []string{filepath.Join(dir, "missing.json"), bad} {
		g := newFakeGoogle(t)
		_, err := NewTransport(nil, newClock()).RoundTrip(vertexRequest(t, vertexProvider(g, file)))
		if err == nil || classify.Err(err).Class != classify.Auth || !strings.Contains(err.Error(), "vertex-east") {
			t.Fatalf("%s: %v", file, err)
		}
		noSecret(t, err.Error())
	}
}

func TestVertexReloadWithAnotherFile(t *testing.T) {
	g := newFakeGoogle(t)
	sa, user := vertexProvider(g, credentialsFile(t, g, "service_account")), vertexProvider(g, credentialsFile(t, g, "authorized_user"))
	tr := NewTransport(nil, newClock())
	for i, c := range []struct {
		p     config.Provider
		token string
	}{{sa, "ya29.test-token-1"}, {user, "ya29.test-token-2"}} {
		if status, body := send(t, tr, vertexRequest(t, c.p)); status != 200 || body != c.token {
			t.Fatalf("step %d: %d %s, want %s", i, status, body, c.token)
		}
	}
	// the file before the reload keeps its token (the endpoint's last
	// token is the user's: Vertex refuses the older one, which was sent)
	if status, _ := send(t, tr, vertexRequest(t, sa)); status != http.StatusUnauthorized || g.tokenCalls.Load() != 2 {
		t.Fatalf("the settings before: %d, %d token calls; want their own token, no new call", status, g.tokenCalls.Load())
	}
}

func TestVertexCredentialsFileOfAnotherTypeIsRefused(t *testing.T) {
	g := newFakeGoogle(t)
	dir := t.TempDir()
	subject := filepath.Join(dir, "subject-token")
	os.WriteFile(subject, []byte("a-subject-token"), 0o600)
	for _, c := range []struct {
		name string
		json map[string]any
		want string
	}{
		{"external_account", map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",
			"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": g.URL + "/token", "credential_source": map[string]string{"file": subject}}, `its type is "external_account"`},
		{"impersonated_service_account", map[string]any{"type": "impersonated_service_account", "service_account_impersonation_url": g.URL + "/token",
			"source_credentials": map[string]string{"type": "authorized_user", "client_id": "client-id.apps", "client_secret": clientSecret, "refresh_token": refreshToken, "token_uri": g.URL + "/token"}},
			`its type is "impersonated_service_account"`},
		{"no type", map[string]any{"client_email": saEmail}, `not a Google credentials JSON with a "type"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := json.Marshal(c.json)
			file := filepath.Join(dir, c.name+".json")
			os.WriteFile(file, b, 0o600)
			_, err := NewTransport(nil, newClock()).RoundTrip(vertexRequest(t, vertexProvider(g, file)))
			if err == nil || classify.Err(err).Class != classify.Auth || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("%v, want an auth error saying %s", err, c.want)
			}
			noSecret(t, err.Error())
			if n := g.tokenCalls.Load(); n != 0 {
				t.Fatalf("%d calls to the file's token URL", n)
			}
		})
	}
}
