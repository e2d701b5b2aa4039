package config

import (
	"strings"
	"testing"
)

// A cloud client's model id names the configured model it stands for: by
// name, by a deployment's upstream id, by the same vendor model (a name
// before a deployment's id), and only then without dates.
func TestCloudModel(t *testing.T) {
	c := Default()
	c.Providers["bedrock-east"] = Provider{Type: Bedrock, Region: "us-east-1"}
	c.Providers["vertex"] = Provider{Type: Vertex, Project: "p", Region: "global"}
	c.Models["a-fast"] = Model{Tier: Light, Deployments: []Deployment{{Provider: "bedrock-east", Upstream: "us.anthropic.claude-sonnet-5-5-20261001-v1:0"}}}
	c.Models["b-main"] = Model{Tier: Medium, Deployments: []Deployment{{Provider: "bedrock-east", Upstream: "us.anthropic.claude-sonnet-5-5-20261001-v1:0"}}}
	c.Models["claude-3-5-sonnet-20240620"] = Model{Provider: "anthropic", Tier: Medium}
	c.Models["opus-on-vertex"] = Model{Tier: Heavy, Deployments: []Deployment{{Provider: "vertex", Upstream: "claude-opus-9@20270101"}}}
	for _, tt := range []struct {
		id, want string
	}{
		{"claude-sonnet-5-5", "claude-sonnet-5-5"},                  // 1: its name
		{"us.anthropic.claude-sonnet-5-5-20261001-v1:0", "a-fast"},  // 2: two models share the id: the first by name
		{"global.anthropic.claude-sonnet-5-5", "claude-sonnet-5-5"}, // 3: the model called so, before a deployment's
		{"us.anthropic.claude-sonnet-5-5", "claude-sonnet-5-5"},     // Claude Code's id
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-haiku-5-5-v1:0", "claude-haiku-5-5"},
		{"claude-opus-9@20270101", "opus-on-vertex"},                                // 2
		{"claude-opus-9@20270202", "opus-on-vertex"},                                // 3: a deployment's vendor name
		{"anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet-20240620"}, // 3: dated, exact
		{"anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-20240620"}, // 4: only without dates
		{"anthropic.claude-sonnet-5-5-20270101-v1:0", "claude-sonnet-5-5"},          // 4: a name before a deployment's
		{"us.anthropic.claude-opus-4-7", ""},
		{"", ""},
	} {
		got, ok := c.CloudModel(tt.id)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("CloudModel(%q) = %q, %v; want %q", tt.id, got, ok, tt.want)
		}
	}
}

// Two models deployed as the same cloud id: the one a cloud client asking
// for that id does not reach is warned of, at its field, and naming both.
func TestCloudIDOfTwoModelsIsWarnedOf(t *testing.T) {
	c, err := Parse("two.yaml", []byte(`providers:
  bedrock-east: {type: bedrock, region: us-east-1}
models:
  a-fast:
    tier: light
    deployments:
      - {provider: bedrock-east, upstream: "us.anthropic.claude-sonnet-5-5-20261001-v1:0"}
  b-main:
    tier: medium
    deployments:
      - {provider: bedrock-east, upstream: "us.anthropic.claude-sonnet-5-5-20261001-v1:0"}
  c-own:
    tier: medium
    deployments:
      - {provider: bedrock-east, upstream: "us.anthropic.claude-haiku-5-5-20261001-v1:0"}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(c.Warnings, "\n")
	want := "two.yaml:11: models.b-main.deployments[0].upstream: us.anthropic.claude-sonnet-5-5-20261001-v1:0 is also the upstream id of a deployment of a-fast: a Bedrock or Vertex AI client asking for us.anthropic.claude-sonnet-5-5-20261001-v1:0 is answered from a-fast's chain, never from b-main's"
	if !strings.Contains(all, want) {
		t.Errorf("warnings lack\n%s\nin:\n%s", want, all)
	}
	for _, not := range []string{"models.a-fast.deployments", "models.c-own.deployments"} {
		if strings.Contains(all, not) {
			t.Errorf("warned of %s, which a cloud client reaches:\n%s", not, all)
		}
	}
}
