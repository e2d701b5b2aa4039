package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultsValid(t *testing.T) {
	c, err := Load("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	l := &loader{pos: nil}
	l.validate(c)
	if len(l.problems) > 0 {
		t.Fatalf("defaults invalid: %v", (&Error{l.problems}).Error())
	}
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} {
		if _, ok := c.Models[m]; !ok {
			t.Errorf("default model %s missing", m)
		}
	}
	name, chain := c.ChainFor("gpt-6.1-sol")
	if name != "codex" || !reflect.DeepEqual(chain, []string{"gpt-6.1-sol", "gpt-6-luna"}) {
		t.Errorf("ChainFor(gpt-6.1-sol) = %s %v", name, chain)
	}
}

func TestBadFiles(t *testing.T) {
	cases := []struct {
		file string
		want []string // substrings of the error, in order: location, field, advice
	}{
		{"unknown_tier.yaml", []string{"unknown_tier.yaml:4:11", "models.my-model.tier", `unknown tier "huge"; allowed: heavy, medium, light`}},
		{"undefined_chain_model.yaml", []string{"undefined_chain_model.yaml:4:7", "chains.codex[1]", `model "gpt-7-nova" is not defined; defined models: `, "gpt-6-astra"}},
		{"negative_duration.yaml", []string{"negative_duration.yaml:3:16", "retry.network_gap", "is negative"}},
		{"unknown_field.yaml", []string{"unknown_field.yaml:2:1", "chians", `unknown field "chians"; allowed here: `, "chains"}},
		{"bad_duration.yaml", []string{"bad_duration.yaml:2:12", "pacing.min_gap", "not a duration; write it like 500ms"}},
		{"undefined_provider.yaml", []string{"undefined_provider.yaml:2:", "models.local-llama.provider", `provider "ollama" is not defined; defined providers: anthropic, gemini, openai`}},
		{"wrong_type.yaml", []string{"wrong_type.yaml:2:", "models.gpt-6-astra.context", `must be a whole number, not "lots"`}},
		{"syntax.yaml", []string{"syntax.yaml:3:", "YAML:"}},
		{"bad_url.yaml", []string{"bad_url.yaml:3:15", "providers.openai.base_url", "is not an http(s) URL"}},
		{"bad_state.yaml", []string{"bad_state.yaml:1:", "state", "allowed: memory, or redis://HOST:PORT[/DB]", "queue.db", "queue.concurrency"}},
		{"deployments.yaml", []string{"deployments.yaml:3:", "providers.openai us.query", `"api-version=%zz" is not a URL query`,
			"deployments.yaml:6:", "models.gpt-6-astra.provider", "names a provider in each deployment, not here",
			"models.gpt-6.1-sol.deployments[1].provider", `provider "nowhere" is not defined`,
			"models.gpt-6.1-sol.deployments[2].name", `"openai" is also the name of deployments[0]`,
			"models.gpt-6.1-sol.deployments[3].provider", "anthropic speaks anthropic but the model's first deployment speaks openai",
			"models.gpt-6.1-sol.deployments[4].weight", "must be 1 to 1000 (0 means 1), not -1",
			"models.gpt-6.1-sol.deployments[5].weight", "not 5000",
			"models.gpt-6.1-sol.deployments[6].name", `"eu west" cannot name a deployment`, "letters, digits",
			"models.gpt-6.1-sol.deployments[7].provider", `the provider's name "openai us"`}},
		{"timeout_twice.yaml", []string{"timeout_twice.yaml:2:", "gateway.first_token_timeout", "is also set as timeouts.first_token"}},
		{"zero_breaker.yaml", []string{"breaker.failures", "must be at least 1", "breaker.cooldown", "must be more than 0s"}},
		{"key_auth_without_key.yaml", []string{"key_auth_without_key.yaml:2:", "providers.mine.api_key", "auth: key needs an api_key"}},
		{"open_listen.yaml", []string{"open_listen.yaml:1:", "listen", "0.0.0.0:8787 is reachable from other machines: set gateway.keys"}},
		{"gateway_limits.yaml", []string{"gateway.max_body_mb", "64 MiB is more than gateway.max_inflight_mb (32)",
			"gateway.read_timeout", "must be more than 0s", "gateway.allowed_origins[0]", `"app.example" is not an origin`,
			"gateway_limits.yaml:6:", "gateway.max_connections", "must be at least 1, not 0",
			"gateway_limits.yaml:7:", "gateway.max_connections_per_address", "must be 0 (no cap, the default) or more, not -1"}},
		{"gemini_upstream.yaml", []string{"gemini_upstream.yaml:2:", "models.gemini-escape.upstream", `"../../v1/files#"`,
			"gemini_upstream.yaml:6:", "models.gemini-3-pro.deployments[1].upstream", `the model name "models/x?key=y" cannot go in a URL`}},
		// one check lists every mistake, whatever stage finds it (an
		// unknown field, a value of the wrong type, a range, a reference),
		// in the order of the lines, each value quoted once
		{"every_stage.yaml", []string{"every_stage.yaml:2:1: bogus: unknown field \"bogus\"",
			"every_stage.yaml:4:20: pacing.max_concurrency: must be a whole number, not \"three\"\n",
			"every_stage.yaml:6:13: breaker.failures: must be at least 1, not -2\n",
			"every_stage.yaml:8:24: chains.codex[1]: model \"nosuch-model\" is not defined",
			"every_stage.yaml:10:11: retry.budget: \"5x\" is not a duration"}},
		{"model_names.yaml", []string{"model_names.yaml:2:", `models.-rf: model name "-rf" starts with "-"`, "reads it as a flag",
			"model_names.yaml:3:", `models.gpt 6: model name "gpt 6" holds whitespace or a control character (U+0020)`,
			"model_names.yaml:4:", `models.tab\tname: model name "tab\tname" holds`,
			"model_names.yaml:5:", `models.bell\aname: model name "bell\aname" holds`,
			"model_names.yaml:6:", `model name "nbsp\u00a0name" holds whitespace or a control character (U+00A0)`}},
		{"clouds.yaml", []string{"clouds.yaml:2:3: providers.bedrock-east.region: a bedrock provider needs a region",
			"clouds.yaml:4:11: providers.bedrock-east.auth: a bedrock provider is always sent spillway's own cloud credentials",
			"clouds.yaml:7:13: providers.bedrock-bad.region: \"US East 1\" is not a region name",
			"clouds.yaml:8:14: providers.bedrock-bad.project: is a vertex provider's setting",
			"clouds.yaml:9:3: providers.vertex-p.project: a vertex provider needs the Google Cloud project",
			"clouds.yaml:12:14: providers.vertex-p.api_key: a vertex provider takes no api_key",
			"clouds.yaml:13:14: providers.vertex-p.profile: is a bedrock provider's setting",
			"clouds.yaml:21:19: models.claude-on-clouds.deployments[1].upstream: \"llama-4-maverick\" is not a model spillway knows a Vertex AI publisher for (provider vertex-p)",
			"clouds.yaml:23:19: models.claude-on-clouds.deployments[2].provider: openai speaks openai but the model's first deployment speaks anthropic",
			"clouds.yaml:27:15: models.vertex-solo.upstream: the model id \"claude haiku\" cannot go in a Vertex AI URL"}},
		{"gateway_keys.yaml", []string{"gateway.keys[0].key", "sha256: takes the key's SHA-256 as 64 hex digits",
			"gateway.keys[1].name", "every gateway key needs a name", "gateway.keys[2].chains", `chain "nowhere" is not defined`,
			"gateway.keys[3].name", `"alice" is also the name of gateway.keys[0]`}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("..", "testdata", "config", "bad", c.file)
			_, err := Load(path, env(nil))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("want *config.Error, got %v", err)
			}
			msg := err.Error()
			rest := msg
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error lacks %q (in order):\n%s", w, msg)
				}
				rest = rest[i+len(w):]
			}
			if !strings.Contains(msg, path) {
				t.Fatalf("error does not name the file %s:\n%s", path, msg)
			}
		})
	}
	files, _ := filepath.Glob("../testdata/config/bad/*.yaml")
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("bad config %s has no test case", f)
		}
	}
}

func TestGoodFileMergesOverDefaults(t *testing.T) {
	c, err := Load("../testdata/config/good/custom.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9787" {
		t.Errorf("listen = %s", c.Listen)
	}
	if got := c.Providers["openai"]; got.BaseURL != "http://127.0.0.1:8790/v1" || got.Auth != "passthrough" || got.APIKey.Ref != "env:OPENAI_API_KEY" {
		t.Errorf("openai provider not merged field by field: %+v", got)
	}
	if got := c.Models["gpt-6-astra"]; got.Context != 400000 || got.Tier != Heavy || got.Provider != "openai" {
		t.Errorf("gpt-6-astra not merged: %+v", got)
	}
	if _, ok := c.Models["claude-opus-5-5"]; !ok {
		t.Error("default models dropped")
	}
	if got := c.Retry.Budget.D(); got != 10*time.Second {
		t.Errorf("budget = %v", got)
	}
	if got := c.Retry.NetworkGap.D(); got != 2*time.Second {
		t.Errorf("network_gap default lost: %v", got)
	}
	if !reflect.DeepEqual(c.Chains["codex"], []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-mini"}) {
		t.Errorf("codex chain = %v", c.Chains["codex"])
	}
}

func TestStarterIsValidAndMatchesDefaults(t *testing.T) {
	c, err := Parse("starter.yaml", Starter, env(nil))
	if err != nil {
		t.Fatalf("starter file invalid: %v", err)
	}
	d := Default()
	d.resolve(env(nil))
	c.Source = ""
	c.Warnings = nil
	if !reflect.DeepEqual(c, d) {
		a, _ := c.Effective()
		b, _ := d.Effective()
		t.Fatalf("starter differs from defaults:\n%s\n---\n%s", a, b)
	}
}

func TestSecretsMasked(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte("providers:\n  openai: { api_key: env:MY_KEY, auth: key }\n  anthropic: { api_key: sk-ant-literal-0123456789 }\n"), 0o600)
	c, err := Load(p, env(map[string]string{"MY_KEY": "sk-proj-SECRETSECRETSECRET"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Providers["openai"].APIKey.Value != "sk-proj-SECRETSECRETSECRET" {
		t.Fatal("env secret not resolved")
	}
	out, err := c.Effective()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("SECRETSECRET")) || bytes.Contains(out, []byte("literal-0123456789")) {
		t.Fatalf("secret printed:\n%s", out)
	}
	if !bytes.Contains(out, []byte("env:MY_KEY (set)")) {
		t.Fatalf("masked form missing:\n%s", out)
	}
	if len(c.Warnings) == 0 || !strings.Contains(strings.Join(c.Warnings, "\n"), "a key written in the file") {
		t.Fatalf("literal key not warned about: %v", c.Warnings)
	}
}

func TestKeyHeaderWithoutKeyAuthIsWarnedAbout(t *testing.T) {
	c, err := Parse("kh.yaml", []byte("providers:\n  azure: { type: openai, base_url: \"https://a.example/v1\", auth: passthrough, key_header: api-key }\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings, "\n"); !strings.Contains(w, "kh.yaml:2: providers.azure.key_header: is used only with auth: key") {
		t.Fatalf("warnings %q", c.Warnings)
	}
}

func TestQuotedNamesLoseTheirQuotes(t *testing.T) {
	c, err := Parse("q.yaml", []byte("providers:\n  \"my openai\": { type: openai, base_url: \"https://a.example/v1\" }\nmodels:\n  'my-model': { provider: \"my openai\", tier: light, context: 1000 }\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Providers["my openai"]; !ok {
		t.Fatalf("providers %v", sortedKeys(c.Providers))
	}
	if m, ok := c.Models["my-model"]; !ok || m.Provider != "my openai" {
		t.Fatalf("models %v", sortedKeys(c.Models))
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	p, err := Find("", env(map[string]string{"HOME": dir}))
	if err != nil || p != "" {
		t.Fatalf("no file: got %q %v", p, err)
	}
	cfgDir := filepath.Join(dir, ".config", "spillway")
	os.MkdirAll(cfgDir, 0o755)
	os.WriteFile(filepath.Join(cfgDir, "spillway.yaml"), []byte("listen: 127.0.0.1:1\n"), 0o644)
	p, err = Find("", env(map[string]string{"HOME": dir}))
	if err != nil || p != filepath.Join(cfgDir, "spillway.yaml") {
		t.Fatalf("home file: got %q %v", p, err)
	}
	if _, err := Find("", env(map[string]string{"SPILLWAY_CONFIG": filepath.Join(dir, "nope.yaml")})); err == nil {
		t.Fatal("SPILLWAY_CONFIG naming a missing file must fail")
	}
}

func TestEmptyAndCommentOnlyFiles(t *testing.T) {
	for _, body := range []string{"", "# nothing\n", "---\n"} {
		c, err := Parse("e.yaml", []byte(body), env(nil))
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if c.Listen != "127.0.0.1:8787" {
			t.Fatalf("%q: defaults lost", body)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Starter)
	f.Add([]byte("models: {a: {provider: openai, tier: heavy, context: 1}}\nchains: {x: [a]}\n"))
	f.Add([]byte("retry: {ladder: [1s, -1s]}\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("chains:\n  claude: {models: [claude-opus-5-5], overflow: codex, on_usage_limit: overflow}\n  codex: {models: [gpt-6-astra], overflow: claude}\n"))
	f.Add([]byte("chains:\n  x: {models: 3, overflow: [1]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data, env(nil))
		if err == nil && c == nil {
			t.Fatal("nil config without error")
		}
		var ce *Error
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
	})
}

// The watchdogs moved from gateway: to timeouts:; old files still work, with
// a warning, and 0 turns a watchdog off.
func TestTimeouts(t *testing.T) {
	c, err := Parse("old.yaml", []byte("gateway:\n  max_body_mb: 8\n  first_token_timeout: 30s\n  idle_timeout: 45s\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeouts.FirstToken.D() != 30*time.Second || c.Timeouts.Idle.D() != 45*time.Second || c.Gateway.FirstToken != 0 || c.Gateway.MaxBodyMB != 8 {
		t.Fatalf("%+v %+v", c.Timeouts, c.Gateway)
	}
	if len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], "old.yaml:3: gateway.first_token_timeout: has moved to timeouts.first_token") {
		t.Fatalf("warnings %q", c.Warnings)
	}
	c, err = Parse("new.yaml", []byte("timeouts:\n  first_token: 0\n  idle: 0s\n"), env(nil))
	if err != nil || c.Timeouts.FirstToken != 0 || c.Timeouts.Idle != 0 || len(c.Warnings) != 0 {
		t.Fatalf("%v %+v %q", err, c.Timeouts, c.Warnings)
	}
	if d := Default(); d.Timeouts.Header.D() != 30*time.Second || d.Timeouts.Request.D() != 10*time.Minute || d.Timeouts.FirstToken != 0 || d.Timeouts.Idle.D() != 120*time.Second {
		t.Fatalf("defaults %+v", d.Timeouts)
	}
}

func TestAddChain(t *testing.T) {
	c := Default()
	err := c.AddChain("mine",
		ChainModel{Name: "gpt-6-astra", Provider: "openai", Tier: Heavy, Context: 272000},
		ChainModel{Name: "my-small", Provider: "openai", Tier: Light, Upstream: "gpt-6-luna"})
	if err != nil {
		t.Fatal(err)
	}
	if name, chain := c.ChainFor("gpt-6-astra"); name != "mine" || strings.Join(chain, ",") != "gpt-6-astra,my-small" {
		t.Fatalf("chain for gpt-6-astra: %s %v", name, chain)
	}
	if strings.Join(c.Chains["codex"], ",") != "gpt-6.1-sol,gpt-6-luna" || c.Models["my-small"].Upstream != "gpt-6-luna" {
		t.Fatalf("codex %v, models %+v", c.Chains["codex"], c.Models["my-small"])
	}
	// a chain may mix wire formats: another vendor's model is a
	// cross-vendor step
	if err := c.AddChain("mixed",
		ChainModel{Name: "gpt-x", Provider: "openai", Tier: Heavy},
		ChainModel{Name: "claude-y", Provider: "anthropic", Tier: Light, Upstream: "claude-haiku-5-5"}); err != nil {
		t.Fatalf("a mixed chain: %v", err)
	}
	if name, chain := c.ChainFor("gpt-x"); name != "mixed" || strings.Join(chain, ",") != "gpt-x,claude-y" || c.ModelType("claude-y") != "anthropic" {
		t.Fatalf("chain for gpt-x: %s %v", name, chain)
	}
	for _, bad := range []struct {
		models []ChainModel
		want   string
	}{
		{[]ChainModel{{Name: "x", Provider: "openai", Tier: "huge"}}, `chains.bad[0]: model x: unknown tier "huge"`},
		{[]ChainModel{{Name: "x", Provider: "ollama", Tier: Light}}, `provider "ollama" is not configured; configured: anthropic, gemini, openai`},
		{nil, "at least one model"},
	} {
		before := len(c.Models)
		if err := c.AddChain("bad", bad.models...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v", bad.models, err)
		}
		if len(c.Models) != before || c.Chains["bad"] != nil {
			t.Errorf("a failed AddChain changed the configuration")
		}
	}
}

func TestDeploymentsFile(t *testing.T) {
	c, err := Load("../testdata/config/good/deployments.yaml", env(map[string]string{"AZURE_OPENAI_API_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Deployments("gpt-6-astra")
	want := []Deployment{{Name: "openai", Provider: "openai", Upstream: "gpt-6-astra", Weight: 3}, {Name: "azure", Provider: "azure", Upstream: "astra-prod", Weight: 1}}
	if !reflect.DeepEqual(got, want) || c.ModelType("gpt-6-astra") != "openai" {
		t.Fatalf("%+v", got)
	}
	if p := c.Providers["azure"]; p.Query != "api-version=2024-10-21" || p.KeyHeader != "api-key" {
		t.Fatalf("%+v", p)
	}
	// a model without the list keeps its one, unnamed deployment
	if d := c.Deployments("gpt-6-luna"); len(d) != 1 || d[0].Name != "" || d[0].Provider != "openai" || d[0].Upstream != "gpt-6-luna" {
		t.Fatalf("%+v", d)
	}
}

func TestCatalogNone(t *testing.T) {
	file := "catalog: none\nproviders:\n  local: { type: openai, base_url: \"http://127.0.0.1:9000/v1\" }\nmodels:\n  big: { provider: local, tier: heavy }\n  small: { provider: local, tier: light, context: 32000 }\nchains:\n  mine: [big, small]\n"
	c, err := Parse("plain.yaml", []byte(file), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(c.Models); strings.Join(got, ",") != "big,small" || len(c.Chains) != 1 {
		t.Fatalf("models %v chains %v: the built-in catalog came along", got, c.Chains)
	}
	if c.PassesUnknown() {
		t.Fatal("catalog: none passes unknown models through by default")
	}
	if c.Models["big"].Context != 0 {
		t.Fatal("an unknown context window must stay 0")
	}
	c, err = Parse("plain.yaml", []byte(file+"passthrough_unknown: true\n"), env(nil))
	if err != nil || !c.PassesUnknown() {
		t.Fatalf("%v: passthrough_unknown: true ignored", err)
	}
	if d := Default(); !d.PassesUnknown() {
		t.Fatal("the built-in catalog must pass unknown models through")
	}
}

func TestAModelInTwoChains(t *testing.T) {
	two := "chains:\n  mine: [gpt-6-astra, gpt-6-luna]\n"
	_, err := Parse("two.yaml", []byte(two), env(nil))
	if err == nil || !strings.Contains(err.Error(), "chains.mine: model gpt-6-astra is in chains codex and mine; a request for it walks one: name it with models.gpt-6-astra.chain: codex") {
		t.Fatalf("%v", err)
	}
	c, err := Parse("two.yaml", []byte(two+"models:\n  gpt-6-astra: { chain: mine }\n  gpt-6-luna: { chain: codex }\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if name, chain := c.ChainFor("gpt-6-astra"); name != "mine" || strings.Join(chain, ",") != "gpt-6-astra,gpt-6-luna" {
		t.Fatalf("%s %v", name, chain)
	}
	if name, _ := c.ChainFor("gpt-6-luna"); name != "codex" {
		t.Fatalf("gpt-6-luna walks %s", name)
	}
	_, err = Parse("bad.yaml", []byte("models:\n  gpt-6-astra: { chain: claude }\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), `models.gpt-6-astra.chain: "claude" is not a chain that holds gpt-6-astra; chains holding it: codex`) {
		t.Fatalf("%v", err)
	}
}

func TestPolicyKnobs(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"pacing: { when: sometimes }\n", `pacing.when: unknown "sometimes"; allowed: auto`},
		{"pacing: { relax: 0s }\n", "pacing.relax: must be more than 0s"},
		{"retry: { rate_limit_retries: -1 }\n", "retry.rate_limit_retries: must be from 0 to 20, not -1"},
		{"retry: { timeout_retries: 50 }\n", "retry.timeout_retries: must be from 0 to 20, not 50"},
		{"catalog: some\n", `catalog: unknown "some"; allowed: builtin`},
		{"catalog: none\n", "catalog: none needs models: of the file's own"},
		{"models:\n  gpt-6-astra: { context: -5 }\n", "models.gpt-6-astra.context: context window must be a number of tokens"},
		{"passthrough_unknown: maybe\n", `passthrough_unknown: must be true or false, not "maybe"`},
	} {
		if _, err := Parse("k.yaml", []byte(c.file), env(nil)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v", c.file, err)
		}
	}
	c, err := Parse("k.yaml", []byte("timeouts: { header: 20s }\nmodels:\n  gpt-6-astra: { header_timeout: 2m }\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Models["gpt-6-astra"].HeaderTimeout.D() != 2*time.Minute || c.Timeouts.Header.D() != 20*time.Second {
		t.Fatalf("%v %v", c.Models["gpt-6-astra"].HeaderTimeout, c.Timeouts.Header)
	}
}

// The error points at the chain the file wrote, even when it sorts first.
func TestTwoChainsPointsAtTheFile(t *testing.T) {
	_, err := Parse("two.yaml", []byte("chains:\n  alpha: [gpt-6-astra, gpt-6-luna]\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "two.yaml:2:3: chains.alpha: model gpt-6-astra is in chains alpha and codex") {
		t.Fatalf("%v", err)
	}
}

func TestStreamSettingsPerModel(t *testing.T) {
	c, err := Parse("s.yaml", []byte("timeouts: { first_token: 20s }\nmodels:\n  claude-opus-5-5: { first_token_timeout: 45s, hedge: true, hold: { tokens: 20, duration: 2s } }\n  claude-haiku-5-5: { prefill: false }\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Models["claude-opus-5-5"]
	if c.FirstToken("claude-opus-5-5") != 45*time.Second || c.FirstToken("claude-sonnet-5-5") != 20*time.Second || !m.Hedge ||
		m.Hold != (Hold{Tokens: 20, Duration: Duration(2 * time.Second)}) || !m.Hold.On() {
		t.Fatalf("%+v", m)
	}
	if c.Prefills("claude-haiku-5-5") || !c.Prefills("claude-opus-5-5") || !c.Prefills("unknown-model") {
		t.Fatal("prefill")
	}
	c, err = Parse("h.yaml", []byte("models:\n  claude-opus-5-5: { hedge: true }\n"), env(nil))
	if err != nil || !strings.Contains(strings.Join(c.Warnings, "\n"), "h.yaml:2: models.claude-opus-5-5.hedge: has no effect without a first-token limit") {
		t.Fatalf("%v %q", err, c.Warnings)
	}
	if _, err := Parse("b.yaml", []byte("models:\n  claude-opus-5-5: { hold: { tokens: -1 } }\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "models.claude-opus-5-5.hold.tokens: must be 0") {
		t.Fatalf("%v", err)
	}
}

// A file with no setting (empty, or only comments) is the defaults, said
// as a warning and marked Blank (a gateway refuses to reload one).
func TestBlankFile(t *testing.T) {
	for _, body := range []string{"", "# a comment\n\n# another\n", "---\n"} {
		c, err := Parse("blank.yaml", []byte(body), env(nil))
		if err != nil || !c.Blank || len(c.Warnings) == 0 || !strings.Contains(c.Warnings[len(c.Warnings)-1], "blank.yaml holds no setting") {
			t.Fatalf("%q: %v, blank %v, warnings %q", body, err, c != nil && c.Blank, c.Warnings)
		}
	}
	if c, err := Parse("set.yaml", []byte("listen: 127.0.0.1:9000\n"), env(nil)); err != nil || c.Blank {
		t.Fatalf("a file with a setting: %v blank %v", err, c.Blank)
	}
}

// A chain's object form: models, overflow and on_usage_limit; the list
// form stays valid; what cannot work is refused with its field and line.
func TestChainObjectForm(t *testing.T) {
	const extra = "providers:\n  anthropic-b: { type: anthropic, base_url: \"https://b.example\", auth: key, api_key: env:B_KEY }\n" +
		"models:\n  claude-sonnet-5-5-b: { provider: anthropic-b, tier: medium, upstream: claude-sonnet-5-5 }\n"
	c, err := Parse("o.yaml", []byte(extra+"chains:\n  claude:\n    models: [claude-opus-5-5, claude-sonnet-5-5]\n    overflow: claude-b\n    on_usage_limit: overflow\n  claude-b: [claude-sonnet-5-5-b]\n"), env(map[string]string{"B_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Chains["claude"]; !reflect.DeepEqual(got, []string{"claude-opus-5-5", "claude-sonnet-5-5"}) {
		t.Fatalf("models %v", got)
	}
	if r := c.ChainRules["claude"]; r.Overflow != "claude-b" || r.OnUsageLimit != UsageLimitOverflow {
		t.Fatalf("rules %+v", r)
	}
	if _, ok := c.ChainRules["claude-b"]; ok || len(c.Chains["codex"]) != 3 {
		t.Fatalf("the list form and the defaults: %+v %v", c.ChainRules, c.Chains["codex"])
	}
	for _, bad := range []struct{ body, want string }{
		{"chains:\n  claude: { models: [claude-opus-5-5], overflow: nowhere }\n", `b.yaml:6:`},
		{"chains:\n  claude: { models: [claude-opus-5-5], overflow: nowhere }\n", `chains.claude.overflow: chain "nowhere" is not defined`},
		{"chains:\n  claude: { models: [claude-opus-5-5], overflow: claude }\n", "cannot overflow into itself"},
		{"chains:\n  claude: { models: [claude-opus-5-5], overflow: claude-b }\n  claude-b: { models: [claude-sonnet-5-5-b], overflow: claude }\n", "overflow into each other: a cycle"},
		{"chains:\n  claude: { models: [claude-opus-5-5], on_usage_limit: overflow }\n", "on_usage_limit: overflow needs an overflow: chain"},
		{"chains:\n  claude: { models: [claude-opus-5-5], on_usage_limit: wait }\n", `unknown value "wait"; allowed: overflow`},
		{"chains:\n  claude: { model: [claude-opus-5-5] }\n", `chains.claude.model: unknown field "model"; allowed here: models, on_usage_limit, overflow`},
		{"chains:\n  claude: { overflow: claude-b }\n", "a chain written as an object needs models"},
	} {
		_, err := Parse("b.yaml", []byte(extra+bad.body), env(map[string]string{"B_KEY": "k"}))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.body, err, bad.want)
		}
	}
}

// Issue 36: a chain may hold another vendor's models, and overflow into a
// chain of another wire format; both load, and each cross-vendor step is
// warned about only when it cannot work (its provider has no api_key, or
// it takes no tools or images where the walk did).
func TestCrossVendorChainsLoad(t *testing.T) {
	keys := map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a", "GEMINI_API_KEY": "g"}
	for _, c := range []struct {
		name, body string
		env        map[string]string
		chain      string
		models     []string
		overflow   string
		warnings   []string // substrings, each in some warning; none when empty
	}{
		{name: "mixed chain", body: "models:\n  gpt-6-astra: { chain: mixed }\nchains:\n  mixed: [gpt-6-astra, claude-sonnet-5-5]\n  claude: [claude-opus-5-5, claude-haiku-5-5]\n",
			env: keys, chain: "mixed", models: []string{"gpt-6-astra", "claude-sonnet-5-5"}},
		{name: "three formats", body: "catalog: none\nmodels:\n  a: { provider: openai, tier: heavy }\n  b: { provider: anthropic, tier: medium }\n  c: { provider: gemini, tier: light }\nchains:\n  all: [a, b, c]\n",
			env: keys, chain: "all", models: []string{"a", "b", "c"}},
		{name: "overflow into another format", body: "chains:\n  claude: { models: [claude-opus-5-5, claude-sonnet-5-5], overflow: codex, on_usage_limit: overflow }\n",
			env: keys, chain: "claude", models: []string{"claude-opus-5-5", "claude-sonnet-5-5"}, overflow: "codex"},
		{name: "openai overflows into claude", body: "chains:\n  codex: { models: [gpt-6-astra, gpt-6.1-sol, gpt-6-luna], overflow: claude }\n",
			env: keys, chain: "codex", models: []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"}, overflow: "claude"},
		{name: "mixed chain, no key", body: "models:\n  gpt-6-astra: { chain: mixed }\nchains:\n  mixed: [gpt-6-astra, claude-sonnet-5-5]\n  claude: [claude-opus-5-5, claude-haiku-5-5]\n",
			env: map[string]string{"OPENAI_API_KEY": "sk-o"}, chain: "mixed", models: []string{"gpt-6-astra", "claude-sonnet-5-5"},
			warnings: []string{"x.yaml:4: chains.mixed[1]: claude-sonnet-5-5 is another vendor's (anthropic) model: a cross-vendor step uses its provider's own api_key, and provider anthropic has none (ANTHROPIC_API_KEY is not set in this environment), so this step is always skipped"}},
		{name: "overflow, no key", body: "chains:\n  codex:\n    models: [gpt-6-astra]\n    overflow: claude\n",
			env: nil, chain: "codex", models: []string{"gpt-6-astra"}, overflow: "claude",
			warnings: []string{"x.yaml:4: chains.codex.overflow: claude-opus-5-5 is another vendor's (anthropic) model", "chains.codex.overflow: claude-haiku-5-5 is another vendor's (anthropic) model"}},
		{name: "loses tools and images", body: "models:\n  gpt-6-astra: { chain: mixed }\n  claude-sonnet-5-5: { tools: false, images: false }\nchains:\n  mixed: [gpt-6-astra, claude-sonnet-5-5]\n  claude: [claude-opus-5-5, claude-haiku-5-5]\n",
			env: keys, chain: "mixed", models: []string{"gpt-6-astra", "claude-sonnet-5-5"},
			warnings: []string{"x.yaml:5: chains.mixed[1]: claude-sonnet-5-5 is another vendor's (anthropic) model with tools: false, and gpt-6-astra takes tools: a cross-vendor step to it loses tools, so a request with tools skips it",
				"chains.mixed[1]: claude-sonnet-5-5 is another vendor's (anthropic) model with images: false, and gpt-6-astra takes images: a cross-vendor step to it loses images, so a request with images skips it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("x.yaml", []byte(c.body), env(c.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Chains[c.chain]; !reflect.DeepEqual(got, c.models) {
				t.Fatalf("chain %s = %v", c.chain, got)
			}
			if got := cfg.ChainRules[c.chain].Overflow; got != c.overflow {
				t.Fatalf("overflow %q", got)
			}
			all := strings.Join(cfg.Warnings, "\n")
			for _, w := range c.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
			if len(c.warnings) == 0 && strings.Contains(all, "another vendor's") {
				t.Errorf("a cross-vendor warning where every step can work:\n%s", all)
			}
		})
	}
	// a model's deployments still share one wire format
	_, err := Parse("d.yaml", []byte("models:\n  gpt-6-astra:\n    deployments:\n      - { provider: openai }\n      - { provider: anthropic }\n"), env(keys))
	if err == nil || !strings.Contains(err.Error(), "models.gpt-6-astra.deployments[1].provider: anthropic speaks anthropic but the model's first deployment speaks openai; a model's deployments share one wire format") {
		t.Fatalf("%v", err)
	}
	// the built-in chains are each of one vendor: nothing to warn about
	if cfg, err := Load("", env(nil)); err != nil || strings.Contains(strings.Join(cfg.Warnings, "\n"), "another vendor's") {
		t.Fatalf("%v %q", err, cfg.Warnings)
	}
	cfg, err := Load("../testdata/config/good/cross_vendor.yaml", env(keys))
	if err != nil || cfg.ChainRules["openai"].Overflow != "claude" || cfg.ModelType(cfg.Chains["claude"][0]) != "anthropic" {
		t.Fatalf("cross_vendor.yaml: %v", err)
	}
}

// What a model takes: tools, images and reasoning, each true unless the
// file says false; the walk checks them like any bool.
func TestWhatAModelTakes(t *testing.T) {
	c, err := Parse("t.yaml", []byte("models:\n  claude-haiku-5-5: { tools: false, images: false, reasoning: false }\n  gpt-6-luna: { tools: true, reasoning: false }\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name                  string
		tools, images, reason bool
	}{
		{"claude-haiku-5-5", false, false, false},
		{"gpt-6-luna", true, true, false},
		{"gpt-6-astra", true, true, true},
	} {
		got := c.Models[m.name]
		if got.TakesTools() != m.tools || got.TakesImages() != m.images || got.TakesReasoning() != m.reason {
			t.Errorf("%s: tools %v images %v reasoning %v", m.name, got.TakesTools(), got.TakesImages(), got.TakesReasoning())
		}
	}
	if got := (Model{}); !got.TakesTools() || !got.TakesImages() || !got.TakesReasoning() {
		t.Error("an unset capability must mean the model takes it")
	}
	if c.Models["claude-haiku-5-5"].Tier != Light || c.Models["claude-haiku-5-5"].Provider != "anthropic" {
		t.Errorf("the built-in entry was not merged: %+v", c.Models["claude-haiku-5-5"])
	}
	for _, bad := range []struct{ body, want string }{
		{"models:\n  gpt-6-astra: { tools: maybe }\n", `t.yaml:2:25: models.gpt-6-astra.tools: must be true or false, not "maybe"`},
		{"models:\n  gpt-6-astra: { images: [png] }\n", `models.gpt-6-astra.images: must be true or false`},
		{"models:\n  gpt-6-astra: { reasoning: 1 }\n", `models.gpt-6-astra.reasoning: must be true or false, not "1"`},
		{"models:\n  gpt-6-astra: { tool: false }\n", `models.gpt-6-astra.tool: unknown field "tool"; allowed here: `},
	} {
		_, err := Parse("t.yaml", []byte(bad.body), env(nil))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.body, err, bad.want)
		}
	}
	_, err = Parse("t.yaml", []byte("models:\n  gpt-6-astra: { tool: false }\n"), env(nil))
	for _, f := range []string{"images", "reasoning", "tools"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("the allowed fields lack %s: %v", f, err)
		}
	}
}
