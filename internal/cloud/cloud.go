// Package cloud authorizes requests to the cloud providers (Amazon
// Bedrock, Google Vertex AI) with spillway's own cloud credentials: AWS
// SigV4 over the exact bytes sent (the AWS default credential chain) or a
// Bedrock API key, and Google's Application Default Credentials. A
// request is marked for its provider (With) when it is built; Transport
// authorizes marked requests as they leave, and nothing else.
//
// A cloud credential never leaves for another host: a marked request is
// authorized only when its URL has the scheme and host of its provider's
// base URL. No secret (a key, a secret access key, a session token, an
// access token, a private key) is ever in an error or a Source.
package cloud

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/redact"
)

// Clock is the time credentials are judged by (cached tokens' expiry).
type Clock interface{ Now() time.Time }

// markKey is the context key of a request's mark; unexported, so that
// only With sets it.
type markKey struct{}

// mark is the provider a request is for.
type mark struct {
	name string
	p    config.Provider
}

// With is ctx marked for a request to provider name, configured p (a
// cloud provider): Transport authorizes a request with such a context
// with p's credentials. Give p as the configuration of the moment (a
// reload with other settings gets other credentials).
func With(ctx context.Context, name string, p config.Provider) context.Context {
	return context.WithValue(ctx, markKey{}, mark{name: name, p: p})
}

// Marked reports whether ctx is marked for a cloud provider (With), and
// which.
func Marked(ctx context.Context) (name string, ok bool) {
	m, ok := ctx.Value(markKey{}).(mark)
	return m.name, ok
}

// Transport authorizes requests marked With before base sends them; it
// caches each provider's credentials (refreshed before they expire).
// It is safe for concurrent use.
type Transport struct {
	base  http.RoundTripper
	clock Clock

	mu    sync.Mutex
	creds map[string][]*entry // by provider name, the latest settings first
}

// entry is one provider's credentials, for the settings in key: a
// reload that changes them gets a new entry.
type entry struct {
	key    string
	aws    *awsCreds
	google *googleCreds
}

// NewTransport is a Transport over base (http.DefaultTransport when nil),
// judging tokens' expiry and signing by clock (the real one when nil).
func NewTransport(base http.RoundTripper, clock Clock) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	if clock == nil {
		clock = realClock{}
	}
	return &Transport{base: base, clock: clock, creds: map[string][]*entry{}}
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// RoundTrip authorizes req when it is marked, then sends it through
// base; an unmarked request goes as it is. A marked request is sent as a
// copy (req itself is not changed) with the credential headers a client
// could have set removed and the provider's own added: SigV4 (over the
// exact body bytes, which the copy carries as a replayable body), a
// Bedrock API key or a Google access token, each as a bearer token.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	m, ok := req.Context().Value(markKey{}).(mark)
	if !ok {
		return t.base.RoundTrip(req)
	}
	out, err := t.authorize(req, m)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	return t.base.RoundTrip(out)
}

// authorize is a copy of req authorized for m's provider.
func (t *Transport) authorize(req *http.Request, m mark) (*http.Request, error) {
	if err := sameOrigin(req.URL, m); err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "X-Amz-Security-Token", "X-Amz-Date", "X-Amz-Content-Sha256"} {
		out.Header.Del(h)
	}
	switch m.p.Type {
	case config.Bedrock:
		if k := m.p.APIKey.Value; k != "" {
			out.Header.Set("Authorization", "Bearer "+k)
			return out, nil
		}
		return out, t.awsFor(m).sign(out, t.clock.Now())
	case config.Vertex:
		tok, err := t.googleFor(m).accessToken(out.Context(), t.clock)
		if err != nil {
			return nil, err
		}
		out.Header.Set("Authorization", "Bearer "+tok)
		return out, nil
	}
	return nil, fmt.Errorf("cloud: provider %q is of type %q, not a cloud (%s, %s): its requests cannot be marked for cloud credentials", m.name, m.p.Type, config.Bedrock, config.Vertex)
}

// Source says which credential source provider name, configured p,
// resolves to (never a secret): "api_key", "environment
// (AWS_ACCESS_KEY_ID)", "shared profile work (/home/u/.aws/credentials)",
// "SSO (profile work)", "web identity", "container role", "instance
// role", "service account x@p.iam.gserviceaccount.com (file PATH)", "user
// credentials (file PATH)", "metadata server". An AWS source is known once
// the chain gave credentials: Source retrieves them (the SDK caches them
// for the requests).
func (t *Transport) Source(ctx context.Context, name string, p config.Provider) (string, error) {
	m := mark{name: name, p: p}
	switch p.Type {
	case config.Bedrock:
		if p.APIKey.Value != "" {
			return "api_key", nil
		}
		return t.awsFor(m).source(ctx)
	case config.Vertex:
		return t.googleFor(m).source(ctx)
	}
	return "", fmt.Errorf("cloud: provider %q is of type %q, not a cloud (%s, %s)", name, p.Type, config.Bedrock, config.Vertex)
}

// keptSettings is how many settings of one provider name keep their
// credentials: the configuration's, and the one before a reload, which
// requests pinned to it may still use.
const keptSettings = 2

// entryFor is the entry of provider name for the settings key, a new one
// when there is none (the oldest settings beyond keptSettings are
// dropped).
func (t *Transport) entryFor(name, key string) *entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	es := t.creds[name]
	for _, e := range es {
		if e.key == key {
			return e
		}
	}
	e := &entry{key: key}
	t.creds[name] = append([]*entry{e}, es[:min(len(es), keptSettings-1)]...)
	return e
}

// awsFor is the AWS credentials of m's provider, loaded once per region
// and profile.
func (t *Transport) awsFor(m mark) *awsCreds {
	key := strings.Join([]string{config.Bedrock, m.p.Region, m.p.Profile}, "\x00")
	e := t.entryFor(m.name, key)
	t.mu.Lock()
	if e.aws == nil {
		e.aws = newAWSCreds(m.name, m.p.Region, m.p.Profile)
	}
	a := e.aws
	t.mu.Unlock()
	return a
}

// googleFor is the Google credentials of m's provider, one per
// credentials file.
func (t *Transport) googleFor(m mark) *googleCreds {
	key := strings.Join([]string{config.Vertex, m.p.CredentialsFile}, "\x00")
	e := t.entryFor(m.name, key)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.google == nil {
		e.google = newGoogleCreds(m.name, m.p.CredentialsFile, t.base)
	}
	return e.google
}

// sameOrigin refuses a request whose URL is not on m's provider's scheme
// and host: a cloud credential never leaves for another host.
func sameOrigin(u *url.URL, m mark) error {
	base := m.p.BaseURL
	if base == "" { // a configuration loaded from a file has it filled in
		base = config.CloudBaseURL(m.p.Type, m.p.Region)
	}
	b, err := url.Parse(base)
	if err != nil || b.Host == "" {
		return fmt.Errorf("cloud: provider %q has no usable base URL (%q): its credentials go nowhere", m.name, base)
	}
	if u == nil || !strings.EqualFold(u.Scheme, b.Scheme) || !strings.EqualFold(u.Host, b.Host) {
		got := ""
		if u != nil {
			got = u.Scheme + "://" + u.Host
		}
		return fmt.Errorf("cloud: refused to send provider %q's credentials to %s: only to %s://%s, its base URL's host", m.name, redact.String(got), b.Scheme, b.Host)
	}
	return nil
}

// authError is a failure to get a credential, classified as auth: the
// caller's classifier (classify.Err) reads the verdict it carries. msg
// names the provider and the credential source, and is redacted of
// secrets (known ones in s, and every shape redact knows).
func authError(cloud classify.Provider, s redact.Secrets, format string, args ...any) error {
	msg := oneLine(s.String(fmt.Sprintf(format, args...)))
	return &classify.Failure{Verdict: classify.Verdict{Class: classify.Auth, Provider: cloud, Message: msg}}
}

// oneLine is s on one line, at most 400 bytes (a token endpoint's
// answer may be in it); s is redacted first, so that no cut or join
// hides a secret from redaction.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// closeBody closes a request's body that will not be sent, as RoundTrip
// must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// AuthorizesClouds reports that t authorizes requests marked for a cloud
// (With): what the senders check before they send one.
func (t *Transport) AuthorizesClouds() bool { return true }
