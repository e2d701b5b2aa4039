package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/policy"
)

func itoa(n int) string { return strconv.Itoa(n) }

// provider is a configured provider that some model uses.
type provider struct {
	name, typ, base string
	cloud           string // bedrock, vertex: the provider's cloud (config.Provider.Cloud)
	key, keyFrom    string // the key to check with, and where it came from (never the key)
	keyMissing      string // auth: key with no key: what the configuration says
	models          []policy.Candidate
}

// keyVars are the variables the agents and SDKs read the key from.
var keyVars = map[string][]string{"openai": {"OPENAI_API_KEY"}, "anthropic": {"ANTHROPIC_API_KEY"}, "gemini": {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}

// usedProviders lists the providers the configured models use, with
// their models and the key to check with: the provider's own (auth: key),
// else the one the agents would send (OPENAI_API_KEY, …).
func usedProviders(cfg *config.Config) []provider {
	byName := map[string]*provider{}
	for _, model := range slices.Sorted(maps.Keys(cfg.Models)) {
		for _, d := range cfg.Deployments(model) {
			p := byName[d.Provider]
			if p == nil {
				pc := cfg.Providers[d.Provider]
				p = &provider{name: d.Provider, typ: string(cfg.ProviderType(d.Provider)), base: pc.BaseURL, cloud: pc.Cloud()}
				byName[d.Provider] = p
			}
			up := d.Upstream
			if up == "" {
				up = model
			}
			if !slices.ContainsFunc(p.models, func(c policy.Candidate) bool { return c.Upstream == up }) {
				p.models = append(p.models, policy.Candidate{Model: model, Upstream: up, Provider: d.Provider, Format: cfg.DeploymentType(d), Cloud: p.cloud})
			}
		}
	}
	var out []provider
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out
}

func (p *provider) findKey(o Options) {
	pc := o.Config.Providers[p.name]
	if pc.Auth == config.AuthKey && pc.APIKey.Value == "" {
		p.keyMissing = pc.APIKey.String() // the gateway sends its own key, and has none
		return
	}
	if pc.APIKey.Value != "" { // the configured key (env:VAR, or written in)
		p.key, p.keyFrom = pc.APIKey.Value, "providers."+p.name+".api_key"
		if pc.APIKey.IsEnv() {
			p.keyFrom = pc.APIKey.EnvVar()
		}
		return
	}
	for _, v := range keyVars[p.typ] {
		if k := o.Getenv(v); k != "" {
			p.key, p.keyFrom = k, v
			return
		}
	}
}

// checkProvider asks the provider for its models with the key (free), and
// with o.Probe sends each model the smallest request. It returns the
// findings and how many probes it sent.
func checkProvider(ctx context.Context, o Options, rt http.RoundTripper, p provider) ([]Finding, int) {
	if p.cloud != "" {
		return checkCloud(ctx, o, rt, p)
	}
	p.findKey(o)
	if p.keyMissing != "" {
		return []Finding{{Area: "key", Subject: p.name, Status: Broken, Class: string(classify.Auth),
			Summary: "auth: key without a key (api_key " + p.keyMissing + "): every request through spillway to " + p.name + " fails; set it"}}, 0
	}
	if p.key == "" {
		vars := strings.Join(keyVars[p.typ], " or ")
		why := "no key to check with: set " + vars + " (as the agents read it), or give the provider auth: key and api_key"
		if p.typ == "openai" {
			why += "; Codex with a ChatGPT login has no API key: its usage windows are under agent"
		}
		return []Finding{{Area: "key", Subject: p.name, Status: Unknown, Summary: why}}, 0
	}
	h := http.Header{}
	formats.Envelope(config.Format(p.typ)).SetKey(h, p.key)
	var fs []Finding
	lctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ans, err := send.ListModels(lctx, rt, o.Config, p.name, h)
	path := formats.Envelope(config.Format(p.typ)).ModelsPath()
	if err != nil {
		v := classify.Err(err)
		return []Finding{{Area: "key", Subject: p.name, Status: Broken, Class: string(v.Class),
			Summary: "no answer to GET " + path + ": " + string(v.Class) + " (see network)", Evidence: err.Error()}}, 0
	}
	v := classify.Classify(classify.Input{Status: ans.Status, Header: ans.Header, Body: ans.Body, Provider: classify.Provider(p.typ)})
	evidence := fmt.Sprintf("GET %s with %s: %d in %s", path, p.keyFrom, ans.Status, ms(ans.Elapsed))
	if v.Code != "" || v.Message != "" {
		evidence += ": " + strings.TrimSpace(v.Code+" "+v.Message)
	}
	accepted := ans.Status/100 == 2
	switch {
	case accepted:
		fs = append(fs, Finding{Area: "key", Subject: p.name, Status: Healthy, Summary: "key accepted", Evidence: evidence})
		fs = append(fs, listed(p, ans.Body)...)
	case v.Class == classify.Auth:
		fs = append(fs, Finding{Area: "key", Subject: p.name, Status: Broken, Class: string(v.Class),
			Summary: strings.TrimSpace(fmt.Sprintf("key rejected (%d %s", ans.Status, v.Code)) + ")", Evidence: evidence})
	case v.Class == classify.Quota:
		fs = append(fs, Finding{Area: "quota", Subject: p.name, Status: Broken, Class: string(v.Class),
			Summary: "quota used up: " + strings.TrimSpace(v.Summary+" "+v.Action), Evidence: evidence})
	case v.Class == classify.UsageLimit:
		fs = append(fs, Finding{Area: "usage", Subject: p.name, Status: Degraded, Class: string(v.Class),
			Summary: "the plan's usage window is used up" + resetText(v), Evidence: evidence})
	case v.Class == classify.RateLimit:
		fs = append(fs, Finding{Area: "rate", Subject: p.name, Status: Degraded, Class: string(v.Class),
			Summary: "rate-limited" + waitText(v.Wait), Evidence: evidence})
	default:
		fs = append(fs, Finding{Area: "key", Subject: p.name, Status: Degraded, Class: string(v.Class),
			Summary: "the model list did not answer: " + string(v.Class), Evidence: evidence})
	}
	if lim := limits(ans.Header); lim != "" {
		fs = append(fs, Finding{Area: "rate", Subject: p.name, Status: Healthy, Summary: "rate limits", Evidence: lim})
	}
	if !o.Probe || (!accepted && v.Class != classify.RateLimit) {
		return fs, 0
	}
	n := 0
	for _, cand := range p.models {
		f, sent := probe(ctx, o, rt, cand, h)
		if sent {
			n++
		}
		fs = append(fs, f)
	}
	// a key the provider echoes back in an error never reaches the report
	for i := range fs {
		fs[i].Evidence = strings.ReplaceAll(fs[i].Evidence, p.key, "***")
		fs[i].Summary = strings.ReplaceAll(fs[i].Summary, p.key, "***")
	}
	return fs, n
}

// probe sends one model the smallest request, within o.Timeout, and judges
// its answer; sent reports whether the request went out (it may cost).
func probe(ctx context.Context, o Options, rt http.RoundTripper, cand policy.Candidate, h http.Header) (f Finding, sent bool) {
	f = Finding{Area: "model", Subject: cand.Model}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ans, err := send.Probe(ctx, rt, o.Config, cand, h)
	if err != nil {
		v := classify.Err(err)
		// a slow or silent model is degraded, not a mistake in the
		// configuration; a refused connection is the network's (see network)
		f.Status, f.Class, f.Evidence = Degraded, string(v.Class), err.Error()
		f.Summary = "no answer within --timeout " + o.Timeout.String()
		if v.Class != classify.Timeout {
			f.Status, f.Summary = Broken, "no answer: "+string(v.Class)+" (see network)"
		}
		return f, v.Class == classify.Timeout
	}
	sent = true
	prov := classify.Provider(cand.Format)
	if cand.Cloud != "" {
		prov = classify.Provider(cand.Cloud) // the cloud's error shapes
	}
	v := classify.Classify(classify.Input{Status: ans.Status, Header: ans.Header, Body: ans.Body, Provider: prov})
	f.Evidence = fmt.Sprintf("1-token request: %d in %s", ans.Status, ms(ans.Elapsed))
	if v.Code != "" || v.Message != "" {
		f.Evidence += ": " + strings.TrimSpace(v.Code+" "+v.Message)
	}
	if lim := limits(ans.Header); lim != "" {
		f.Evidence += "; " + lim
	}
	switch {
	case ans.Status/100 == 2:
		f.Status, f.Summary = Healthy, "answers"
	case v.Class == classify.Capacity:
		f.Status, f.Summary = Degraded, "at capacity right now"+waitText(v.Wait)
	case v.Class == classify.RateLimit:
		f.Status, f.Summary = Degraded, "rate-limited"+waitText(v.Wait)
	case v.Class == classify.UsageLimit:
		f.Status, f.Summary = Degraded, "the plan's usage window is used up"+resetText(v)
	case v.Class == classify.Auth, v.Class == classify.Quota, v.Class == classify.ModelNotFound, v.Class == classify.BadRequest:
		f.Status, f.Summary = Broken, string(v.Class)+": "+v.Summary
	default:
		f.Status, f.Summary = Degraded, string(v.Class)
	}
	if ans.Status/100 != 2 {
		f.Class = string(v.Class)
	}
	return f, sent
}

func waitText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return " (the provider says: wait " + d.Round(time.Second).String() + ")"
}

// listed compares the provider's model list with the configured models.
func listed(p provider, body []byte) []Finding {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &list) != nil {
		return nil
	}
	var more struct {
		HasMore bool   `json:"has_more"`      // Anthropic
		Next    string `json:"nextPageToken"` // Gemini
	}
	_ = json.Unmarshal(body, &more)
	paged := more.HasMore || more.Next != ""
	have := map[string]bool{}
	for _, m := range list.Data {
		have[m.ID] = true
	}
	for _, m := range list.Models {
		have[strings.TrimPrefix(m.Name, "models/")] = true
	}
	if len(have) == 0 {
		return nil
	}
	var missing, present []string
	for _, c := range p.models {
		if have[c.Upstream] {
			present = append(present, c.Model)
		} else {
			missing = append(missing, c.Model)
		}
	}
	var fs []Finding
	if len(present) > 0 {
		fs = append(fs, Finding{Area: "models", Subject: p.name, Status: Healthy, Summary: "listed: " + strings.Join(present, ", ")})
	}
	if paged && len(missing) > 0 {
		// the first page only: a model on a later page is not missing
		return append(fs, Finding{Area: "models", Subject: p.name, Status: Unknown,
			Summary: "not on the listing's first page: " + strings.Join(missing, ", ") + " (--probe asks them)"})
	}
	for _, m := range missing {
		fs = append(fs, Finding{Area: "model", Subject: m, Status: Degraded, Class: string(classify.ModelNotFound),
			Summary:  "not in " + p.name + "'s list of models: a misspelt name in the configuration, or no access to it",
			Evidence: "GET " + formats.Envelope(config.Format(p.typ)).ModelsPath() + " lists " + itoa(len(have)) + " models"})
	}
	return fs
}

// limits reads the rate-limit headers: what is left and when it resets.
func limits(h http.Header) string {
	var parts []string
	for _, k := range []struct{ remaining, reset, what string }{
		{"X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", "requests"},
		{"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", "tokens"},
		{"Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", "requests"},
		{"Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset", "tokens"},
		{"Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", "input tokens"},
	} {
		if r := h.Get(k.remaining); r != "" {
			s := r + " " + k.what + " left"
			if reset := h.Get(k.reset); reset != "" {
				s += ", resets " + reset
			}
			parts = append(parts, s)
		}
	}
	if ra := h.Get("Retry-After"); ra != "" {
		parts = append(parts, "Retry-After "+ra)
	}
	return strings.Join(parts, "; ")
}

// resetText says when a usage limit resets, when it is known.
func resetText(v classify.Verdict) string {
	if v.ResetsAt.IsZero() {
		return " (its reset time not said)"
	}
	return "; it resets at " + v.ResetsAt.UTC().Format("2006-01-02 15:04 UTC") + waitText(v.Wait)
}
