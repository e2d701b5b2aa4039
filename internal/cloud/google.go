package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/redact"
)

// scope is the OAuth scope of Vertex AI's API.
const scope = "https://www.googleapis.com/auth/cloud-platform"

// refreshMargin is how long before its expiry (on the Transport's clock)
// an access token is replaced: a request signed with it then still has
// minutes to reach Vertex and be read. A token that lives less than twice
// the margin is replaced at half its life.
const refreshMargin = 5 * time.Minute

// defaultLifetime is how long a token whose endpoint said no lifetime is
// kept: Google's access tokens live an hour.
const defaultLifetime = time.Hour

// maxCredentialsFile bounds a credentials JSON read (a service account's
// is about 2 KiB).
const maxCredentialsFile = 1 << 20

// googleCreds is one Vertex provider's Google credentials: its
// credentials file, or Application Default Credentials, and the access
// token it holds.
//
// oauth2's own cache (ReuseTokenSource) judges expiry by the real clock
// and refreshes only 10 s before it; here the token and its expiry are
// kept by hand, judged by the Transport's clock, and each refresh builds
// the credentials' token source anew (reading a small file and parsing
// it), so no library cache hands back the token being replaced.
type googleCreds struct {
	name, file string
	base       http.RoundTripper
	refreshing chan struct{} // one refresh at a time: a send takes the turn

	mu        sync.Mutex
	token     string
	expiry    time.Time // on the Transport's clock; zero: no token yet
	refreshAt time.Time // when a refresh is due, before expiry
	retryAt   time.Time // after a failed refresh, when to try again
}

// retryAfter is how long after a failed refresh (on the Transport's
// clock) the held token, still valid, is used without asking the
// endpoint again: 15 s, so that a burst of requests makes one token call,
// not one each, and the refresh is still tried about twenty times within
// the margin before the token expires.
const retryAfter = 15 * time.Second

func newGoogleCreds(name, file string, base http.RoundTripper) *googleCreds {
	return &googleCreds{name: name, file: file, base: base, refreshing: make(chan struct{}, 1)}
}

// accessToken is a valid access token: the one held, or a new one when it
// is near its expiry. Concurrent callers wait (as long as their ctx lets
// them) for the one refresh under way. When a refresh fails while the
// held token is still valid, that token is used, and no refresh is tried
// again for retryAfter; the failure is returned only once the token has
// expired.
func (g *googleCreds) accessToken(ctx context.Context, clock Clock) (string, error) {
	if tok, ok := g.held(clock.Now()); ok {
		return tok, nil
	}
	select {
	case g.refreshing <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-g.refreshing }()
	if tok, ok := g.held(clock.Now()); ok {
		return tok, nil // another caller refreshed it (or failed to) meanwhile
	}
	start := clock.Now()
	tok, err := g.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", err // the caller's end, not the endpoint's failure
		}
		return g.heldAfterFailure(clock.Now(), err)
	}
	life := lifetime(tok)
	g.mu.Lock()
	g.token = tok.AccessToken
	g.expiry = start.Add(life)
	g.refreshAt = start.Add(life - min(refreshMargin, life/2))
	g.retryAt = time.Time{}
	g.mu.Unlock()
	return tok.AccessToken, nil
}

// held is the token held, if it is not yet due for refresh at now, or it
// is still valid and a refresh failed less than retryAfter ago.
func (g *googleCreds) held(now time.Time) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.token == "" || !now.Before(g.expiry) {
		return "", false
	}
	if now.Before(g.refreshAt) || now.Before(g.retryAt) {
		return g.token, true
	}
	return "", false
}

// heldAfterFailure is the token held, while it is valid at now, after a
// refresh failed with err (no refresh is tried again for retryAfter);
// else err.
func (g *googleCreds) heldAfterFailure(now time.Time, err error) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.token == "" || !now.Before(g.expiry) {
		return "", err
	}
	g.retryAt = now.Add(retryAfter)
	return g.token, nil
}

// lifetime is how long tok lives from when it was asked for: the
// endpoint's expires_in, else what is left to its Expiry (which oauth2
// sets on the real clock), else defaultLifetime.
func lifetime(tok *oauth2.Token) time.Duration {
	switch {
	case tok.ExpiresIn > 0:
		return time.Duration(tok.ExpiresIn) * time.Second
	case !tok.Expiry.IsZero():
		return max(time.Until(tok.Expiry), 0)
	}
	return defaultLifetime
}

// fetch gets a new access token from the credentials' token endpoint (or
// the metadata server).
func (g *googleCreds) fetch(ctx context.Context) (*oauth2.Token, error) {
	// oauth2 sends its token requests with the client in the context;
	// ctxTransport makes them end with ctx (the JWT grant's does not
	// carry it otherwise).
	ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: ctxTransport{ctx: ctx, base: g.base}})
	c, err := g.find(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := c.creds.TokenSource.Token()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, authError(classify.Vertex, c.secrets, "vertex provider %q (%s): getting an access token: %v", g.name, c.source, err)
	}
	if tok.AccessToken == "" {
		return nil, authError(classify.Vertex, c.secrets, "vertex provider %q (%s): the token endpoint gave no access token", g.name, c.source)
	}
	return tok, nil
}

// found is a provider's Google credentials, what they are (Source) and
// the secrets their file holds (to take out of errors).
type found struct {
	creds   *google.Credentials
	kind    string // the JSON's "type"
	source  string
	secrets redact.Secrets
}

// fileType refuses a credentials_file of a kind other than a service
// account key or a user's credentials (gcloud's). Other kinds, such as
// external_account (workload identity federation) and
// impersonated_service_account, name URLs that oauth2 fetches, or sends
// tokens to, without validating them (its documentation warns so): a file
// of those kinds is for Application Default Credentials, which load it
// as any Google client on the machine would.
func fileType(kind string) error {
	switch google.CredentialsType(kind) {
	case google.ServiceAccount, google.AuthorizedUser:
		return nil
	case "":
		return fmt.Errorf("not a Google credentials JSON with a \"type\" (%s or %s)", google.ServiceAccount, google.AuthorizedUser)
	}
	return fmt.Errorf("its type is %q; spillway takes a %s or %s file (for other kinds, use Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS)", kind, google.ServiceAccount, google.AuthorizedUser)
}

// find reads the provider's credentials: its credentials file, or
// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS,
// gcloud's file, the metadata server).
func (g *googleCreds) find(ctx context.Context) (found, error) {
	params := google.CredentialsParams{Scopes: []string{scope}}
	if g.file != "" {
		b, err := readCredentialsFile(g.file)
		if err != nil {
			return found{}, authError(classify.Vertex, redact.Secrets{}, "vertex provider %q: credentials_file: %v", g.name, err)
		}
		f := describe(b, g.file)
		if err := fileType(f.kind); err != nil {
			return found{}, authError(classify.Vertex, f.secrets, "vertex provider %q: credentials_file %s: %v", g.name, g.file, err)
		}
		c, err := google.CredentialsFromJSONWithTypeAndParams(ctx, b, google.CredentialsType(f.kind), params)
		if err != nil {
			return found{}, authError(classify.Vertex, f.secrets, "vertex provider %q (%s): %s", g.name, f.source, err)
		}
		f.creds = c
		return f, nil
	}
	c, err := google.FindDefaultCredentialsWithParams(ctx, params)
	if err != nil {
		return found{}, authError(classify.Vertex, redact.Secrets{}, "vertex provider %q: no Google Application Default Credentials (set credentials_file, GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth application-default login`): %s", g.name, err)
	}
	if c.JSON == nil {
		// The metadata server's token source (oauth2's computeSource,
		// over cloud.google.com/go/compute/metadata) takes no context and
		// reads its answer without a bound: a token request there does not
		// end with the caller's ctx, and its size is not limited. It is
		// accepted as it is: the server is the local, trusted
		// 169.254.169.254 of the instance spillway runs on, or the
		// operator's GCE_METADATA_HOST (the library uses it only when it
		// finds itself on GCE), its client dials with a timeout, and its
		// answers are small; bounding it would mean writing the metadata
		// client again.
		return found{creds: c, source: "metadata server"}, nil
	}
	path := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS")
	if path == "" {
		path = gcloudFile()
	}
	f := describe(c.JSON, path)
	f.creds = c
	return f, nil
}

// source names the provider's credential source, without a token.
func (g *googleCreds) source(ctx context.Context) (string, error) {
	f, err := g.find(ctx)
	if err != nil {
		return "", err
	}
	return f.source, nil
}

// describe says what credentials JSON b, read from path, is, and the
// secrets it holds.
func describe(b []byte, path string) found {
	var j struct {
		Type         string `json:"type"`
		ClientEmail  string `json:"client_email"`
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
		ClientSecret string `json:"client_secret"`
		RefreshToken string `json:"refresh_token"`
	}
	_ = json.Unmarshal(b, &j) // a file that does not parse is told by oauth2
	f := found{kind: j.Type, secrets: redact.NewSecrets(j.PrivateKey, j.PrivateKeyID, j.ClientSecret, j.RefreshToken)}
	switch j.Type {
	case "service_account":
		f.source = fmt.Sprintf("service account %s (file %s)", j.ClientEmail, path)
	case "authorized_user":
		f.source = fmt.Sprintf("user credentials (file %s)", path)
	case "":
		f.source = fmt.Sprintf("credentials (file %s)", path)
	default:
		f.source = fmt.Sprintf("%s credentials (file %s)", j.Type, path)
	}
	return f
}

// readCredentialsFile is the credentials JSON at path, at most
// maxCredentialsFile bytes.
func readCredentialsFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCredentialsFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCredentialsFile {
		return nil, fmt.Errorf("%s is over %d KiB: not a Google credentials JSON", path, maxCredentialsFile>>10)
	}
	return b, nil
}

// gcloudFile is where gcloud keeps Application Default Credentials (as
// golang.org/x/oauth2/google looks for them).
func gcloudFile() string {
	const f = "application_default_credentials.json"
	if runtime.GOOS == "windows" {
		return filepath.Join(os.Getenv("APPDATA"), "gcloud", f)
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "gcloud", f)
}

// ctxTransport sends each request with ctx.
type ctxTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (c ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.base.RoundTrip(req.WithContext(c.ctx))
}
