package doctor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/doctor"
)

// A cloud provider has no key to find and no list of models to ask: doctor
// does not ask for either, and with --probe sends each of its models the
// smallest request, in the cloud's envelope.
func TestDoctorCloudProvider(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	asked := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), paths...) }
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.RequestURI)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"p"}],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer hs.Close()
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", BaseURL: hs.URL, Auth: config.AuthKey,
		APIKey: config.Secret{Ref: "env:BEDROCK_KEY", Value: "bedrock-api-key"}}
	cfg.Models = map[string]config.Model{"claude-sonnet-5-5": {Tier: config.Medium, Deployments: []config.Deployment{{Provider: "bedrock-east", Upstream: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}}}}
	cfg.Chains = map[string][]string{}
	r := run(t, cfg, nil)
	if f := find(r, "key", "bedrock-east"); f != nil && (f.Status != doctor.Healthy || strings.Contains(f.Summary, "no key to check with")) {
		t.Errorf("a cloud's credentials: %+v", f)
	}
	if p := asked(); len(p) != 0 {
		t.Errorf("without --probe nothing is asked of a cloud: %v", p)
	}
	r = run(t, cfg, func(o *doctor.Options) { o.Probe = true })
	if f := find(r, "model", "claude-sonnet-5-5"); f == nil || f.Status != doctor.Healthy {
		t.Errorf("the probe of a model on Bedrock: %+v", f)
	}
	if want, p := "POST /model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke", asked(); len(p) != 1 || p[0] != want {
		t.Errorf("asked %v, want %s", p, want)
	}
}
