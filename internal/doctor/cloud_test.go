package doctor_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/doctor"
	"github.com/spillway/spillway/sim"
)

// The test's AWS credentials (the simulator's Bedrock verifies SigV4
// against them) and a Bedrock API key.
const (
	awsKeyID    = "AKIDDOCTORTEST"
	awsSecret   = "doctor-aws-secret-canary"
	bedrockKey  = "ABSK-doctor-key-canary"
	claudeOnAWS = "us.anthropic.claude-sonnet-5-5-v1:0"
)

// awsEnv isolates the AWS SDK from the machine: the environment's
// credentials are keyID and secret, no shared files, no instance role.
func awsEnv(t *testing.T, keyID, secret string) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "", "AWS_ROLE_ARN": "",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"GOOGLE_APPLICATION_CREDENTIALS": "",
	} {
		t.Setenv(k, v)
	}
}

// cloudWorld is the simulator with its clouds' credentials checked (the
// test's AWS credentials, the Bedrock API key, its own service account),
// and a configuration whose models are deployed on Bedrock (signed, and
// with the API key) and Vertex AI (Claude and Gemini), with the service
// account's credentials file.
func cloudWorld(t *testing.T) (*sim.Server, *config.Config, string) {
	t.Helper()
	scn, _ := sim.Builtin("calm")
	srv, err := sim.New(sim.Options{Scenario: scn, Seed: 1, Clouds: sim.CloudAuth{
		AWS: &sim.AWSCredentials{AccessKeyID: awsKeyID, SecretAccessKey: awsSecret}, BedrockAPIKey: bedrockKey, GoogleServiceAccount: true}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	js, err := srv.ServiceAccountJSON(hs.URL + "/token")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, js, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: hs.URL, Auth: config.AuthKey}
	cfg.Providers["bedrock-key"] = config.Provider{Type: config.Bedrock, Region: "us-west-2", BaseURL: hs.URL, Auth: config.AuthKey,
		APIKey: config.Secret{Ref: "env:AWS_BEARER_TOKEN_BEDROCK", Value: bedrockKey}}
	cfg.Providers["vertex-global"] = config.Provider{Type: config.Vertex, Project: "doctor-proj", Region: "global", BaseURL: hs.URL, Auth: config.AuthKey, CredentialsFile: file}
	cfg.Providers["vertex-eu"] = config.Provider{Type: config.Vertex, Project: "doctor-proj", Region: "europe-west1", BaseURL: hs.URL, Auth: config.AuthKey, CredentialsFile: file}
	cfg.Models = map[string]config.Model{
		"claude-sonnet-5-5": {Tier: config.Medium, Deployments: []config.Deployment{
			{Name: "east", Provider: "bedrock-east", Upstream: claudeOnAWS},
			{Name: "west", Provider: "bedrock-key", Upstream: claudeOnAWS},
			{Name: "vertex", Provider: "vertex-global", Upstream: "claude-sonnet-5-5@20261001"}}},
		"gemini-3-pro": {Tier: config.Heavy, Deployments: []config.Deployment{
			{Name: "vertex", Provider: "vertex-global", Upstream: "gemini-3-pro"},
			{Name: "vertex-eu", Provider: "vertex-eu", Upstream: "gemini-3-pro"}}}, // Gemini's countTokens
	}
	cfg.Chains = map[string][]string{}
	return srv, cfg, file
}

// Without --probe, doctor names each cloud provider's credential source
// and checks it with one token count (which costs nothing): Bedrock's
// CountTokens, signed (and with its API key), Anthropic's count-tokens on
// Vertex AI with a token from the service account. No model's pool is
// asked, and no secret reaches the report.
func TestDoctorCloudCredentials(t *testing.T) {
	awsEnv(t, awsKeyID, awsSecret)
	srv, cfg, file := cloudWorld(t)
	r := run(t, cfg, nil)
	for _, c := range []struct{ provider, source string }{
		{"bedrock-east", "bedrock credentials (environment"},
		{"bedrock-key", "bedrock credentials (api_key)"},
		{"vertex-global", "vertex credentials (service account "},
	} {
		f := find(r, "key", c.provider)
		if f == nil || f.Status != doctor.Healthy || !strings.HasPrefix(f.Summary, c.source) || !strings.Contains(f.Summary, " accepted: a token count of claude-sonnet-5-5 (") ||
			!strings.Contains(f.Summary, "input tokens") {
			t.Errorf("%s: %+v, want healthy, %q…, accepted by a token count", c.provider, f, c.source)
		}
	}
	if f := find(r, "key", "vertex-global"); f != nil && !strings.Contains(f.Summary, "(file "+file+")") {
		t.Errorf("vertex: the credentials file is not named: %s", f.Summary)
	}
	for provider, call := range map[string]string{
		"bedrock-east":  "POST /model/us.anthropic.claude-sonnet-5-5-v1%3A0/count-tokens for claude-sonnet-5-5: 200",
		"vertex-global": "POST /v1/projects/doctor-proj/locations/global/publishers/anthropic/models/count-tokens:rawPredict for claude-sonnet-5-5: 200",
		"vertex-eu":     "POST /v1/projects/doctor-proj/locations/europe-west1/publishers/google/models/gemini-3-pro:countTokens for gemini-3-pro: 200",
	} {
		if f := find(r, "key", provider); f == nil || f.Status != doctor.Healthy || !strings.HasPrefix(f.Evidence, call) {
			t.Errorf("%s: %+v, want the evidence %q", provider, f, call)
		}
	}
	if r.ExitCode() != doctor.ExitHealthy || !strings.HasPrefix(r.Cost, "nothing") {
		t.Errorf("exit %d, cost %q", r.ExitCode(), r.Cost)
	}
	for name, st := range srv.Snapshot().Models {
		if st.Received != 0 {
			t.Errorf("a count is no request to a pool, but %s received %d", name, st.Received)
		}
	}
	noSecrets(t, r)
}

// With credentials the cloud refuses, doctor says so, names the source,
// and says what to check (the classifier's advice, and what the count
// needs), without the secret; the verdict puts it first.
func TestDoctorCloudCredentialsRejected(t *testing.T) {
	awsEnv(t, awsKeyID, "not-the-secret-canary")
	_, cfg, _ := cloudWorld(t)
	// the service account of another simulator: its token endpoint refuses
	other, err := sim.New(sim.Options{Seed: 1, Clouds: sim.CloudAuth{GoogleServiceAccount: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	vp := cfg.Providers["vertex-global"]
	js, err := other.ServiceAccountJSON(vp.BaseURL + "/token")
	if err != nil {
		t.Fatal(err)
	}
	vp.CredentialsFile = filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(vp.CredentialsFile, js, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Providers["vertex-global"] = vp
	bk := cfg.Providers["bedrock-key"]
	bk.APIKey.Value = "ABSK-wrong-key-canary"
	cfg.Providers["bedrock-key"] = bk

	r := run(t, cfg, nil)
	for _, c := range []struct{ provider, want string }{
		{"bedrock-east", "bedrock credentials (environment (AWS_ACCESS_KEY_ID)) are rejected (403 InvalidSignatureException): "},
		{"bedrock-key", "bedrock credentials (api_key) are rejected (403 UnrecognizedClientException): "},
		{"vertex-global", "vertex credentials (service account "},
	} {
		f := find(r, "key", c.provider)
		if f == nil || f.Status != doctor.Broken || f.Class != "auth" || !strings.HasPrefix(f.Summary, c.want) {
			t.Errorf("%s: %+v, want broken auth, %q…", c.provider, f, c.want)
			continue
		}
		for _, advice := range map[string][]string{
			"bedrock-east":  {"bedrock:InvokeModel", "bedrock:CountTokens", "clock"},
			"bedrock-key":   {"Bedrock API key", "bedrock:CountTokens"},
			"vertex-global": {"roles/aiplatform.user", "credentials_file", "The project is doctor-proj"},
		}[c.provider] {
			if !strings.Contains(f.Summary, advice) {
				t.Errorf("%s: the advice names no %q: %s", c.provider, advice, f.Summary)
			}
		}
	}
	const verdict = "Your bedrock-east bedrock credentials (environment (AWS_ACCESS_KEY_ID)) are rejected (403 InvalidSignatureException): capacity is not the problem. Check the AWS credentials"
	if r.ExitCode() != doctor.ExitBroken || !strings.HasPrefix(r.Verdict, verdict) {
		t.Errorf("exit %d, verdict %q", r.ExitCode(), r.Verdict)
	}
	noSecrets(t, r, "not-the-secret-canary", "ABSK-wrong-key-canary")
}

// With --probe, each model on a cloud also gets the smallest request, in
// the cloud's envelope, signed.
func TestDoctorCloudProbe(t *testing.T) {
	awsEnv(t, awsKeyID, awsSecret)
	srv, cfg, _ := cloudWorld(t)
	r := run(t, cfg, func(o *doctor.Options) { o.Probe = true })
	for _, m := range []string{"claude-sonnet-5-5", "gemini-3-pro"} {
		if f := find(r, "model", m); f == nil || f.Status != doctor.Healthy {
			t.Errorf("the probe of %s: %+v", m, f)
		}
	}
	st := srv.Snapshot().Models
	if b, v := st["bedrock/claude-sonnet-5-5"], st["vertex/gemini-3-pro"]; b == nil || b.Served != 2 || v == nil || v.Served != 2 {
		t.Errorf("served on Bedrock %+v, Gemini on Vertex %+v: want one probe per deployment", b, v)
	}
	if r.ExitCode() != doctor.ExitHealthy {
		t.Errorf("exit %d", r.ExitCode())
	}
	noSecrets(t, r)
}

// A model the cloud does not know: the credentials passed (the cloud
// answered past them), the model is the trouble.
func TestDoctorCloudModelUnknown(t *testing.T) {
	awsEnv(t, awsKeyID, awsSecret)
	_, cfg, _ := cloudWorld(t)
	cfg.Models = map[string]config.Model{"claude-sonnet-5-5": {Tier: config.Medium, Deployments: []config.Deployment{
		{Name: "east", Provider: "bedrock-east", Upstream: "anthropic.claude-nonesuch-v1:0"}}}}
	r := run(t, cfg, nil)
	if f := find(r, "key", "bedrock-east"); f == nil || f.Status != doctor.Healthy || !strings.Contains(f.Summary, "accepted") {
		t.Errorf("the credentials: %+v", f)
	}
	f := find(r, "model", "claude-sonnet-5-5")
	if f == nil || f.Status == doctor.Healthy || !strings.Contains(f.Evidence, "400") {
		t.Errorf("the model: %+v", f)
	}
	if r.ExitCode() == doctor.ExitHealthy {
		t.Errorf("exit %d", r.ExitCode())
	}
}

// noSecrets fails t when a cloud secret (or one of more) is in r.
func noSecrets(t *testing.T, r doctor.Report, more ...string) {
	t.Helper()
	b, _ := json.Marshal(r)
	for _, s := range append([]string{awsSecret, bedrockKey, "PRIVATE KEY", "ya29."}, more...) {
		if strings.Contains(string(b), s) {
			t.Errorf("%q reached the report", s)
		}
	}
}
