package sim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

func TestCloudRegionsHavePoolsOfTheirOwn(t *testing.T) {
	t.Parallel()
	// the Anthropic API full, Bedrock us-east-1 full, us-west-2 free,
	// Vertex AI free
	scn, err := sim.LoadScenario("../testdata/sim/cloud_pools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, base := newCloudSim(t, sim.Options{Scenario: scn, Regions: []string{"us-east-1", "us-west-2", "us-east5"}})
	bedrock := bedrockPath("us.anthropic.claude-sonnet-5-5-v1:0", false)
	messages := `{"model":"claude-sonnet-5-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name, url, body string
		header          map[string]string
		status          int
	}{
		{"Anthropic API", base + "/v1/messages", messages, antKey, 529},
		{"Bedrock us-east-1", base + "/us-east-1" + bedrock, bedrockBody, nil, 503},
		{"Bedrock us-west-2", base + "/us-west-2" + bedrock, bedrockBody, nil, 200},
		{"Bedrock without a region", base + bedrock, bedrockBody, nil, 200},
		{"Vertex AI us-east5", base + vertexPath("us-east5", "anthropic", "claude-sonnet-5-5@20260101", "rawPredict"), vertexMessages, nil, 200},
		{"Vertex AI global", base + vertexPath("global", "anthropic", "claude-sonnet-5-5@20260101", "rawPredict"), vertexMessages, nil, 200},
		{"Vertex AI us-east5 by prefix", base + "/us-east5" + vertexPath("us-east5", "anthropic", "claude-sonnet-5-5@20260101", "rawPredict"), vertexMessages, nil, 200},
		// the location is not a region of the simulator's: the prefix's pools
		{"Vertex AI through us-east-1", base + "/us-east-1" + vertexPath("europe-west1", "anthropic", "claude-sonnet-5-5", "rawPredict"), vertexMessages, nil, 200},
	}
	for _, c := range cases {
		resp, b := post(t, c.url, reqSpec{name: c.name, body: c.body, header: c.header})
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, clip(b), c.status)
		}
	}
	served := func(s *sim.Server, pool string) int {
		if st := s.Snapshot().Models[pool]; st != nil {
			return st.Served
		}
		return 0
	}
	for _, want := range []struct {
		where  string
		s      *sim.Server
		pool   string
		served int
	}{
		{"us-west-2", srv.Region("us-west-2"), "bedrock/claude-sonnet-5-5", 1},
		{"root", srv, "bedrock/claude-sonnet-5-5", 1},
		{"us-east5 (its location and its prefix)", srv.Region("us-east5"), "vertex/claude-sonnet-5-5", 2},
		{"root (global)", srv, "vertex/claude-sonnet-5-5", 1},
		{"us-east-1", srv.Region("us-east-1"), "vertex/claude-sonnet-5-5", 1},
	} {
		if got := served(want.s, want.pool); got != want.served {
			t.Errorf("%s: %s served %d, want %d", want.where, want.pool, got, want.served)
		}
	}
	if st := srv.Region("us-east-1").Snapshot().Models["bedrock/claude-sonnet-5-5"]; st == nil || st.Rejected["capacity"] != 1 {
		t.Errorf("us-east-1's Bedrock pool: %+v, want one capacity rejection", st)
	}
	// faults address a region's pool through its control API
	resp, b := post(t, base+"/us-west-2/_sim/faults", reqSpec{name: "fault", body: `{"model":"bedrock/claude-sonnet-5-5","fault":"capacity"}`})
	if resp.StatusCode != 201 {
		t.Fatalf("fault: %d %s", resp.StatusCode, b)
	}
	if resp, _ := post(t, base+"/us-west-2"+bedrock, reqSpec{name: "us-west-2 faulted", body: bedrockBody}); resp.StatusCode != 503 {
		t.Errorf("us-west-2 with its fault: %d", resp.StatusCode)
	}
}

func TestScenarioRegionsChecked(t *testing.T) {
	t.Parallel()
	// a region the simulator does not run
	scn, err := sim.LoadScenario("../testdata/sim/cloud_pools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.New(sim.Options{Scenario: scn, Regions: []string{"us-west-2"}}); err == nil || !strings.Contains(err.Error(), "regions.us-east-1") || !strings.Contains(err.Error(), "--regions") {
		t.Errorf("unknown region: %v", err)
	}
	// a region may not take a path the clouds use
	for _, name := range []string{"model", "token"} {
		if _, err := sim.New(sim.Options{Regions: []string{name}}); err == nil {
			t.Errorf("a region named %s was accepted", name)
		}
	}
	// a bad pool in a region, told with its field
	_, err = sim.ParseScenario("bad.yaml", []byte("regions:\n  eu:\n    models:\n      bedrock/claude-sonnet-5-5: {pool: 0}\n    outages:\n      - for: 0s\n"))
	var ce *config.Error
	if err == nil || !strings.Contains(err.Error(), "regions.eu.models.bedrock/claude-sonnet-5-5.pool") || !strings.Contains(err.Error(), "regions.eu.outages[0].for") {
		t.Errorf("bad region pool: %v (%T %v)", err, err, ce)
	}
	// the scenario, as /_sim/scenario shows it, keeps its regions
	_, base := newCloudSim(t, sim.Options{Scenario: scn, Regions: []string{"us-east-1"}})
	resp, b := get(t, base+"/_sim/scenario")
	var got sim.Scenario
	if err := json.Unmarshal(b, &got); resp.StatusCode != 200 || err != nil || got.Regions["us-east-1"].Models["bedrock/claude-sonnet-5-5"].Size != 1 {
		t.Errorf("scenario: %d %s", resp.StatusCode, clip(b))
	}
}

// Cloud deployments in the configuration add their models to the clouds'
// pools, named by the vendor's model.
func TestCloudDeploymentsFromConfig(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1"}
	cfg.Providers["vertex-global"] = config.Provider{Type: config.Vertex, Project: "p", Region: "global"}
	m := cfg.Models["claude-opus-5-5"]
	cfg.Models["claude-cloud-only"] = config.Model{Tier: m.Tier, Context: 1000, Deployments: []config.Deployment{
		{Provider: "bedrock-east", Upstream: "anthropic.claude-cloud-only-20260101-v1:0"},
		{Provider: "vertex-global", Upstream: "claude-cloud-only@20260101"},
	}}
	srv, base := newCloudSim(t, sim.Options{Config: cfg})
	if resp, b := post(t, base+bedrockPath("us.anthropic.claude-cloud-only-20260101-v1:0", false), reqSpec{name: "bedrock", body: bedrockBody}); resp.StatusCode != 200 {
		t.Errorf("bedrock: %d %s", resp.StatusCode, clip(b))
	}
	if resp, b := post(t, base+vertexPath("global", "anthropic", "claude-cloud-only@20260101", "rawPredict"), reqSpec{name: "vertex", body: vertexMessages}); resp.StatusCode != 200 {
		t.Errorf("vertex: %d %s", resp.StatusCode, clip(b))
	}
	// not an Anthropic API model
	if resp, _ := post(t, base+"/v1/messages", reqSpec{name: "api", body: `{"model":"anthropic.claude-cloud-only-20260101-v1:0","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, header: antKey}); resp.StatusCode != 404 {
		t.Errorf("the Bedrock id on the Anthropic API: %d", resp.StatusCode)
	}
	snap := srv.Snapshot().Models
	if snap["bedrock/claude-cloud-only-20260101"] == nil || snap["vertex/claude-cloud-only"] == nil {
		t.Errorf("pools %v", keys(snap))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
