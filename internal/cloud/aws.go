package cloud

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/redact"
)

// signingName is Bedrock's SigV4 service name (bedrock-runtime's hosts
// sign as "bedrock").
const signingName = "bedrock"

// maxSignedBody bounds the body SigV4 reads to hash: a request body is
// already bounded where it is built (gateway.max_body_mb); this is the
// transport's own bound, whatever hands it a body.
const maxSignedBody = 256 << 20

// awsCreds is one Bedrock provider's AWS configuration: the default
// credential chain for its region and profile, loaded once (a failed load
// is tried again at the next request) and kept; its credentials are the
// SDK's aws.CredentialsCache, which retrieves and refreshes them.
type awsCreds struct {
	name, region, profile string
	signer                *v4.Signer
	loading               chan struct{} // one load at a time: a load takes the turn

	mu  sync.Mutex // guards cfg only, never held across a load
	cfg *aws.Config
}

func newAWSCreds(name, region, profile string) *awsCreds {
	return &awsCreds{name: name, region: region, profile: profile, signer: v4.NewSigner(), loading: make(chan struct{}, 1)}
}

// where names the credential chain in errors: the provider and its
// profile.
func (a *awsCreds) where() string {
	if a.profile != "" {
		return fmt.Sprintf("bedrock provider %q (the AWS default credential chain, profile %q)", a.name, a.profile)
	}
	return fmt.Sprintf("bedrock provider %q (the AWS default credential chain)", a.name)
}

// config is the provider's AWS configuration, loaded at its first use.
// Concurrent callers wait (as long as their ctx lets them) for the one
// load under way; a load that fails because its ctx ended returns ctx's
// error, not an auth failure.
func (a *awsCreds) config(ctx context.Context) (aws.Config, error) {
	if cfg, ok := a.loaded(); ok {
		return cfg, nil
	}
	select {
	case a.loading <- struct{}{}:
	case <-ctx.Done():
		return aws.Config{}, ctx.Err()
	}
	defer func() { <-a.loading }()
	if cfg, ok := a.loaded(); ok {
		return cfg, nil // another caller loaded it meanwhile
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(a.region)}
	if a.profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(a.profile))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return aws.Config{}, ctx.Err()
		}
		return aws.Config{}, authError(classify.Bedrock, redact.Secrets{}, "%s: loading the AWS configuration: %v", a.where(), err)
	}
	a.mu.Lock()
	a.cfg = &cfg
	a.mu.Unlock()
	return cfg, nil
}

// loaded is the configuration, once loaded.
func (a *awsCreds) loaded() (aws.Config, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg == nil {
		return aws.Config{}, false
	}
	return *a.cfg, true
}

// credentials are the provider's current AWS credentials, from the SDK's
// cache.
func (a *awsCreds) credentials(ctx context.Context) (aws.Credentials, error) {
	cfg, err := a.config(ctx)
	if err != nil {
		return aws.Credentials{}, err
	}
	if cfg.Credentials == nil {
		return aws.Credentials{}, authError(classify.Bedrock, redact.Secrets{}, "%s: no AWS credentials found (environment, shared files, SSO, web identity, container or instance role); set them, or give the provider an api_key", a.where())
	}
	c, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return aws.Credentials{}, ctx.Err()
		}
		return aws.Credentials{}, authError(classify.Bedrock, redact.Secrets{}, "%s: no AWS credentials: %v", a.where(), err)
	}
	return c, nil
}

// sign signs req with SigV4 for Bedrock in the provider's region at now,
// over the hash of the exact bytes of its body.
func (a *awsCreds) sign(req *http.Request, now time.Time) error {
	sum, err := bodyHash(req)
	if err != nil {
		return fmt.Errorf("cloud: bedrock provider %q: reading the body to sign: %w", a.name, err)
	}
	c, err := a.credentials(req.Context())
	if err != nil {
		return err
	}
	if err := a.signer.SignHTTP(req.Context(), c, req, sum, signingName, a.region, now); err != nil {
		s := redact.NewSecrets(c.SecretAccessKey, c.SessionToken)
		return authError(classify.Bedrock, s, "%s: signing the request: %v", a.where(), err)
	}
	return nil
}

// bodyHash is the hex SHA-256 of req's body, at most maxSignedBody bytes.
// A body with GetBody is hashed as GetBody streams it, and req keeps its
// own Body and GetBody, which give the same bytes again: the body is not
// copied. A plain Body (no GetBody) can be read only once: it is read
// into memory (bounded), hashed, and set again as a replayable body.
func bodyHash(req *http.Request) (string, error) {
	if req.Body == nil || req.Body == http.NoBody {
		setBody(req, nil)
		return hashOf(nil), nil
	}
	if req.GetBody == nil {
		b, err := readBounded(req.Body)
		req.Body.Close()
		if err != nil {
			return "", err
		}
		setBody(req, b)
		return hashOf(b), nil
	}
	rc, err := req.GetBody()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(rc, maxSignedBody+1))
	switch {
	case err != nil:
		return "", err
	case n > maxSignedBody:
		return "", tooLarge()
	case req.ContentLength > 0 && n != req.ContentLength:
		return "", fmt.Errorf("GetBody gave %d bytes, the request's ContentLength says %d", n, req.ContentLength)
	}
	req.ContentLength = n
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readBounded is all of r, at most maxSignedBody bytes.
func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSignedBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSignedBody {
		return nil, tooLarge()
	}
	return b, nil
}

func tooLarge() error {
	return fmt.Errorf("a body over %d MiB, more than spillway signs", maxSignedBody>>20)
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// setBody makes b req's body, replayable.
func setBody(req *http.Request, b []byte) {
	req.ContentLength = int64(len(b))
	if len(b) == 0 {
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// source names the credential source the chain resolved (the SDK's
// provider name in aws.Credentials.Source), never a secret.
func (a *awsCreds) source(ctx context.Context) (string, error) {
	c, err := a.credentials(ctx)
	if err != nil {
		return "", err
	}
	profile := a.profile
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	return awsSource(c.Source, profile), nil
}

// awsSource says what the SDK's source name src means, with profile the
// shared-config profile in use.
func awsSource(src, profile string) string {
	switch name, detail, _ := strings.Cut(src, ":"); name {
	case "EnvConfigCredentials":
		return "environment (AWS_ACCESS_KEY_ID)"
	case "SharedConfigCredentials":
		if detail = strings.TrimSpace(detail); detail != "" {
			return fmt.Sprintf("shared profile %s (%s)", profile, detail)
		}
		return "shared profile " + profile
	case "SSOProvider":
		return fmt.Sprintf("SSO (profile %s)", profile)
	case "WebIdentityCredentials":
		return "web identity"
	case "CredentialsEndpointProvider":
		return "container role"
	case "EC2RoleProvider":
		return "instance role"
	case "AssumeRoleProvider":
		return fmt.Sprintf("assumed role (profile %s)", profile)
	case "ProcessProvider":
		return fmt.Sprintf("credential process (profile %s)", profile)
	case "LoginProvider":
		return fmt.Sprintf("console login (profile %s)", profile)
	case "StaticCredentials":
		return "static credentials"
	case "":
		return "unknown"
	}
	return src
}
