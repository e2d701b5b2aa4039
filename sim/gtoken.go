package sim

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The simulator's Google service account and its token endpoint: the
// simulator makes a key of its own (CloudAuth.GoogleServiceAccount), writes
// the service-account JSON a client loads (ServiceAccountJSON, token_uri
// its own /token), and grants an access token for an assertion that key
// signed (the JWT-bearer grant, RFC 7523, as Google's OAuth endpoint does).
// Vertex AI requests then need a token it granted, not expired on its
// clock.

const (
	jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	cloudPlatform  = "https://www.googleapis.com/auth/cloud-platform"
	// maxTokens bounds the access tokens held; expired ones go first.
	maxTokens = 10000
)

// serviceAccount is the simulator's Google service account.
type serviceAccount struct {
	key     *rsa.PrivateKey
	keyID   string
	email   string
	project string
}

func newServiceAccount() (*serviceAccount, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("sim: service account key: %w", err)
	}
	id := make([]byte, 20)
	_, _ = rand.Read(id)
	return &serviceAccount{key: key, keyID: hex.EncodeToString(id), email: "spillway-sim@spillway-sim.iam.gserviceaccount.com", project: "spillway-sim"}, nil
}

// ServiceAccountJSON is the service-account JSON of the simulator's Google
// service account, whose token_uri is tokenURL (the simulator's /token, once
// it listens). It holds the private key: write it to a file only its user
// reads. An error when the simulator has no service account.
func (s *Server) ServiceAccountJSON(tokenURL string) ([]byte, error) {
	sa := s.auth.sa
	if sa == nil {
		return nil, fmt.Errorf("sim: no service account: set Options.Clouds.GoogleServiceAccount")
	}
	der, err := x509.MarshalPKCS8PrivateKey(sa.key)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(map[string]string{
		"type": "service_account", "project_id": sa.project, "private_key_id": sa.keyID,
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": sa.email, "client_id": "100000000000000000001",
		"auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURL,
	}, "", "  ")
}

// tokenError answers the token endpoint's refusal, as Google's does.
func tokenError(w http.ResponseWriter, code, desc string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request", "could not read the form: "+err.Error())
		return
	}
	if g := r.PostForm.Get("grant_type"); g != jwtBearerGrant {
		tokenError(w, "unsupported_grant_type", fmt.Sprintf("Invalid grant_type: %s (the simulator grants %s)", g, jwtBearerGrant))
		return
	}
	sa := s.auth.sa
	if sa == nil {
		tokenError(w, "invalid_grant", "the simulator has no service account: start it with --gcp-service-account FILE")
		return
	}
	claims, err := verifyRS256(r.PostForm.Get("assertion"), &sa.key.PublicKey)
	if err != nil {
		tokenError(w, "invalid_grant", err.Error())
		return
	}
	switch {
	case claims.Iss != sa.email:
		tokenError(w, "invalid_grant", "Invalid JWT: iss is not the service account's client_email.")
		return
	case !strings.Contains(" "+claims.Scope+" ", " "+cloudPlatform+" "):
		tokenError(w, "invalid_scope", "Invalid OAuth scope or ID token audience provided: the simulator grants "+cloudPlatform)
		return
	}
	tok, lifetime, err := s.auth.grant(s.clock.Now())
	if err != nil {
		tokenError(w, "invalid_request", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": int(lifetime.Seconds()), "token_type": "Bearer"})
}

// jwtClaims are the claims of a JWT-bearer assertion the simulator reads.
type jwtClaims struct {
	Iss   string `json:"iss"`
	Scope string `json:"scope"`
	Aud   string `json:"aud"`
	Exp   int64  `json:"exp"`
	Iat   int64  `json:"iat"`
}

// verifyRS256 checks a compact JWS signed with RS256 by key and returns
// its claims. Written here (a split, a hash and crypto/rsa's check): the
// oauth2 module's jws package signs and verifies the same way but is
// marked not for public use. The assertion's times are the client's (real
// time), not the simulator's clock, so they are not checked.
func verifyRS256(token string, key *rsa.PublicKey) (*jwtClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("Invalid JWT: the assertion is not a JWS of three parts.")
	}
	var head struct {
		Alg string `json:"alg"`
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &head) != nil || head.Alg != "RS256" {
		return nil, fmt.Errorf("Invalid JWT: the header is not a JSON object with alg RS256.")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("Invalid JWT Signature.")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig) != nil {
		return nil, fmt.Errorf("Invalid JWT Signature.")
	}
	var c jwtClaims
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(cb, &c) != nil {
		return nil, fmt.Errorf("Invalid JWT: the claims are not a JSON object.")
	}
	return &c, nil
}

// grant issues an access token, good for the token lifetime from now (the
// simulator's clock).
func (a *cloudAuth) grant(now time.Time) (string, time.Duration, error) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "ya29.sim-" + base64.RawURLEncoding.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.tokens) >= maxTokens {
		for t, exp := range a.tokens {
			if !now.Before(exp) {
				delete(a.tokens, t)
			}
		}
	}
	if len(a.tokens) >= maxTokens {
		return "", 0, fmt.Errorf("the simulator holds %d live access tokens, its most; use one until it expires", maxTokens)
	}
	a.tokens[tok] = now.Add(a.opts.TokenLifetime)
	return tok, a.opts.TokenLifetime, nil
}

// vertex authenticates a Vertex AI request: with a service account, its
// bearer must be a token the simulator granted, not expired at now; else
// any bearer (or none) passes. key is the caller's, for the scenario's
// keys and limits: the service account, or the bearer.
func (a *cloudAuth) vertex(r *http.Request, now time.Time) (key string, ok bool) {
	tok := bearer(r)
	if a.sa == nil {
		if tok == "" {
			return "vertex", true
		}
		return tok, true
	}
	a.mu.Lock()
	exp, known := a.tokens[tok]
	a.mu.Unlock()
	if !known || !now.Before(exp) {
		return "", false
	}
	return a.sa.email, true
}
