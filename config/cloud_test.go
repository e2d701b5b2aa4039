package config

import (
	"strings"
	"testing"
)

func TestCloudProviders(t *testing.T) {
	c, err := Load("../testdata/config/good/clouds_all.yaml", env(map[string]string{"BEDROCK_KEY": "bk"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, base string
		auth       Auth
	}{
		{"bedrock-east", "https://bedrock-runtime.us-east-1.amazonaws.com", AuthKey},
		{"bedrock-west", "https://bedrock-runtime.us-west-2.amazonaws.com", AuthKey},
		{"vertex-east", "https://us-east5-aiplatform.googleapis.com", AuthKey},
		{"vertex-global", "http://127.0.0.1:9/", AuthKey}, // base_url overrides the host
	} {
		p := c.Providers[tc.name]
		if p.BaseURL != tc.base || p.Auth != tc.auth || !p.OwnCredentials() || p.Cloud() == "" {
			t.Errorf("%s: %+v; want base %s, auth %s, own credentials", tc.name, p, tc.base, tc.auth)
		}
	}
	if got := CloudBaseURL(Vertex, "global"); got != "https://aiplatform.googleapis.com" {
		t.Errorf("vertex global base = %s", got)
	}
	if c.Providers["anthropic"].OwnCredentials() {
		t.Error("anthropic without a key has no credentials of its own")
	}
	if c.Providers["bedrock-west"].APIKey.Value != "bk" {
		t.Error("bedrock api_key not resolved")
	}
	if got := c.ModelType("gemini-3-pro"); got != Gemini {
		t.Errorf("gemini on vertex speaks %q", got)
	}
	for _, d := range c.Deployments("claude-sonnet-5-5") {
		if got := c.DeploymentType(d); got != Anthropic {
			t.Errorf("%s speaks %q", d.Name, got)
		}
	}
}

func TestCloudWarnings(t *testing.T) {
	c, err := Parse("w.yaml", []byte(`providers:
  vertex-x:
    type: vertex
    project: p
    region: europe-west1
    credentials_file: /nonexistent/sa.json
  openai:
    region: us-east-1
  bedrock-private:
    type: bedrock
    region: us-east-1
    base_url: http://bedrock.internal.example:8080
  bedrock-local:
    type: bedrock
    region: us-east-1
    base_url: http://127.0.0.1:9000
  vertex-local:
    type: vertex
    project: p
    region: global
    base_url: http://localhost:9001
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(c.Warnings, "\n")
	for _, want := range []string{"w.yaml:6: providers.vertex-x.credentials_file: /nonexistent/sa.json cannot be read here", "w.yaml:8: providers.openai.region: is read only for type bedrock or vertex",
		"w.yaml:12: providers.bedrock-private.base_url: http://bedrock.internal.example:8080 is plain http beyond this machine"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	// plain http on loopback (the simulator, a test) is not warned of
	for _, name := range []string{"bedrock-local", "vertex-local"} {
		if strings.Contains(all, "providers."+name+".base_url") {
			t.Errorf("a loopback base_url is warned of:\n%s", all)
		}
	}
}

func TestCloudRegionReportedOnce(t *testing.T) {
	_, err := Load("../testdata/config/bad/clouds.yaml", env(nil))
	if err == nil || strings.Contains(err.Error(), ".base_url:") {
		t.Fatalf("a missing or bad region is reported once, not as a base_url too:\n%v", err)
	}
}
