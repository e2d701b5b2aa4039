package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
)

// claudeCodePick is Claude Code 2.1.328's choice of a Bedrock model id
// for a tier from ListInferenceProfiles' ids (those containing
// "anthropic", in the list's order): the first id with its region's
// prefix (us., eu., apac., global., us-gov.) that has the tier's model
// name (needle) not followed by more of a version (a digit, or "-" and one
// or two digits), else the first that has the name; "" for none (Claude
// Code then uses its own id).
func claudeCodePick(ids []string, needle, prefix string) string {
	names := func(id string) bool {
		for from := 0; ; {
			i := strings.Index(id[from:], needle)
			if i < 0 {
				return false
			}
			if !moreVersion.MatchString(id[from+i+len(needle):]) {
				return true
			}
			from += i + 1
		}
	}
	for _, id := range ids {
		if strings.HasPrefix(id, prefix+".") && names(id) {
			return id
		}
	}
	for _, id := range ids {
		if names(id) {
			return id
		}
	}
	return ""
}

// moreVersion is Claude Code's test of what follows a model's name in an
// id that is another model's (claude-sonnet-5 in claude-sonnet-5-5).
// (Go's regexp has no look-ahead: "-" and one or two digits, then no
// digit.)
var moreVersion = regexp.MustCompile(`^(?:\d|-\d{1,2}(?:[^\d]|$))`)

// profilesConfig is the built-in configuration with Bedrock and Vertex
// AI deployments: claude-sonnet-5-5 on Bedrock by a us. profile and by an
// eu. profile's ARN (of an account), on Vertex AI; claude-sonnet-5 (a
// name that is a prefix of another's) on the Anthropic API only;
// claude-opus-5-5 on Bedrock by a foundation model id; an OpenAI model.
func profilesConfig() *config.Config {
	cfg := config.Default()
	cfg.Providers["bedrock-east"] = config.Provider{Type: config.Bedrock, Region: "us-east-1", Auth: config.AuthKey}
	cfg.Providers["bedrock-eu"] = config.Provider{Type: config.Bedrock, Region: "eu-west-1", Auth: config.AuthKey}
	cfg.Providers["vertex"] = config.Provider{Type: config.Vertex, Region: "us-east5", Project: "p", Auth: config.AuthKey}
	m := cfg.Models["claude-sonnet-5-5"]
	m.Deployments = []config.Deployment{
		{Provider: "anthropic"},
		{Provider: "bedrock-east", Upstream: "us.anthropic.claude-sonnet-5-5-20261001-v1:0"},
		{Provider: "bedrock-eu", Upstream: "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-5-5-20261001-v1:0"},
		{Provider: "vertex", Upstream: "claude-sonnet-5-5@20261001"},
	}
	cfg.Models["claude-sonnet-5-5"] = m
	cfg.Models["claude-sonnet-5"] = config.Model{Provider: "anthropic", Tier: config.Medium}
	o := cfg.Models["claude-opus-5-5"]
	o.Deployments = []config.Deployment{{Provider: "bedrock-east", Upstream: "anthropic.claude-opus-5-5-v1:0"}}
	cfg.Models["claude-opus-5-5"] = o
	return cfg
}

type profilePage struct {
	Summaries []inferenceProfile `json:"inferenceProfileSummaries"`
	NextToken string             `json:"nextToken"`
}

// list is ListInferenceProfiles' answer to query.
func list(t *testing.T, s *Server, query string) (int, profilePage, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.inferenceProfiles(rec, s.pin(httptest.NewRequest("GET", "/bedrock/inference-profiles?"+query, nil)))
	var p profilePage
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
	}
	return rec.Code, p, rec.Body.String()
}

// ListInferenceProfiles lists, for each configured Anthropic model (the
// built-in catalog's too), an id per Bedrock prefix, each of which maps
// back to its model; Claude Code's picker, in every region, picks for
// each model name an id that maps back to that model: a deployment's own
// id where the model has one of the region's prefix.
func TestCloudInferenceProfiles(t *testing.T) {
	cfg := profilesConfig()
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	code, page, raw := list(t, s, "type=SYSTEM_DEFINED")
	if code != 200 || page.NextToken != "" || len(page.Summaries) == 0 {
		t.Fatalf("%d %s", code, raw)
	}
	var ids []string
	byID := map[string]inferenceProfile{}
	for _, p := range page.Summaries {
		if byID[p.ID].ID != "" {
			t.Errorf("id %s listed twice", p.ID)
		}
		byID[p.ID] = p
		ids = append(ids, p.ID)
		model, ok := cfg.CloudModel(p.ID)
		if !ok || !strings.Contains(p.ID, "anthropic") || p.Status != "ACTIVE" || p.Type != "SYSTEM_DEFINED" || len(p.Models) != 1 ||
			!strings.HasSuffix(p.ARN, ":inference-profile/"+p.ID) || strings.Contains(p.ARN, "123456789012") {
			t.Errorf("profile %+v (model %q)", p, model)
		}
		if m2, _ := cfg.CloudModel(p.ARN); m2 != model {
			t.Errorf("the ARN of %s maps to %q, its id to %q", p.ID, m2, model)
		}
		if foundation := p.Models[0].ARN[strings.LastIndex(p.Models[0].ARN, "/")+1:]; !strings.HasPrefix(foundation, "anthropic.") {
			t.Errorf("%s: backing model %s", p.ID, p.Models[0].ARN)
		}
	}
	if strings.Contains(raw, "gpt-") || strings.Contains(raw, "123456789012") {
		t.Errorf("the list names another vendor's model or an account: %s", raw)
	}
	for _, c := range []struct {
		model, prefix, want string
	}{
		{"claude-sonnet-5-5", "us", "us.anthropic.claude-sonnet-5-5-20261001-v1:0"},
		{"claude-sonnet-5-5", "eu", "eu.anthropic.claude-sonnet-5-5-20261001-v1:0"},
		{"claude-sonnet-5-5", "apac", "apac.anthropic.claude-sonnet-5-5"},
		{"claude-sonnet-5-5", "global", "global.anthropic.claude-sonnet-5-5"},
		{"claude-sonnet-5-5", "us-gov", "us-gov.anthropic.claude-sonnet-5-5"},
		{"claude-sonnet-5", "us", "us.anthropic.claude-sonnet-5"},
		{"claude-sonnet-5", "eu", "eu.anthropic.claude-sonnet-5"},
		{"claude-opus-5-5", "us", "us.anthropic.claude-opus-5-5"},
		{"claude-opus-5-5", "jp", "anthropic.claude-opus-5-5-v1:0"}, // (ANTHROPIC_BEDROCK_REGION_PREFIX=jp) none of its prefix: the first with the name
		{"claude-haiku-5-5", "apac", "apac.anthropic.claude-haiku-5-5"},
	} {
		got := claudeCodePick(ids, c.model, c.prefix)
		if got != c.want {
			t.Errorf("Claude Code in %s picks %q for %s, want %q", c.prefix, got, c.model, c.want)
		}
		if m, ok := cfg.CloudModel(got); !ok || m != c.model {
			t.Errorf("%s maps back to %q, want %s", got, m, c.model)
		}
	}

	t.Run("pages", func(t *testing.T) {
		var paged []string
		token := ""
		for range len(ids) {
			q := url.Values{"type": {"SYSTEM_DEFINED"}, "maxResults": {"4"}}
			if token != "" {
				q.Set("nextToken", token)
			}
			code, p, raw := list(t, s, q.Encode())
			if code != 200 || len(p.Summaries) > 4 {
				t.Fatalf("%d %s", code, raw)
			}
			for _, x := range p.Summaries {
				paged = append(paged, x.ID)
			}
			if token = p.NextToken; token == "" {
				break
			}
		}
		if strings.Join(paged, " ") != strings.Join(ids, " ") {
			t.Errorf("paged %v, want %v", paged, ids)
		}
		if _, p, _ := list(t, s, "type=APPLICATION"); len(p.Summaries) != 0 {
			t.Errorf("application profiles: %+v", p)
		}
		for _, q := range []string{"type=CUSTOM", "maxResults=0", "maxResults=x", "nextToken=zzz", "nextToken=100000"} {
			if code, _, raw := list(t, s, q); code != 400 || !strings.Contains(raw, "invalid_request_error") || !strings.Contains(raw, "spillway: ") {
				t.Errorf("%s: %d %s", q, code, raw)
			}
		}
	})

	t.Run("get", func(t *testing.T) {
		get := func(id string) (int, inferenceProfile, string) {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/bedrock/inference-profiles/"+url.PathEscape(id), nil)
			r.SetPathValue("id", id)
			s.inferenceProfile(rec, s.pin(r))
			var p inferenceProfile
			_ = json.Unmarshal(rec.Body.Bytes(), &p)
			return rec.Code, p, rec.Body.String()
		}
		for _, c := range []struct{ id, wantID, backing string }{
			{"us.anthropic.claude-sonnet-5-5-20261001-v1:0", "us.anthropic.claude-sonnet-5-5-20261001-v1:0", "anthropic.claude-sonnet-5-5-20261001-v1:0"},
			{"arn:aws:bedrock:us-east-1:000000000000:inference-profile/global.anthropic.claude-sonnet-5-5", "global.anthropic.claude-sonnet-5-5", "anthropic.claude-sonnet-5-5"},
			{"us.anthropic.claude-haiku-5-5-20261001-v1:0", "us.anthropic.claude-haiku-5-5-20261001-v1:0", "anthropic.claude-haiku-5-5-20261001-v1:0"}, // not listed, a model's
		} {
			code, p, raw := get(c.id)
			if code != 200 || p.ID != c.wantID || len(p.Models) != 1 || !strings.HasSuffix(p.Models[0].ARN, "/"+c.backing) || p.Status != "ACTIVE" {
				t.Errorf("%s: %d %s", c.id, code, raw)
			}
		}
		for _, id := range []string{"us.anthropic.claude-nonesuch-1", "gpt-6-astra"} {
			if code, _, raw := get(id); code != http.StatusNotFound || !strings.Contains(raw, "not_found_error") || !strings.Contains(raw, id) {
				t.Errorf("%s: %d %s", id, code, raw)
			}
		}
	})
}
