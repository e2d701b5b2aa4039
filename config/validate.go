package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// validate checks a decoded configuration's values, section by section, in
// the order its problems have always been found: a problem the file does
// not place (line 0) keeps that order in the report, and so do warnings.
func (l *loader) validate(c *Config) {
	l.listen(c)
	l.gatewayKeys(c)
	l.providers(c)
	modelNames := sortedKeys(c.Models)
	l.models(c, modelNames)
	l.cloudIDs(c, modelNames)
	l.chainOwners(c, modelNames)
	l.chainRules(c)
	l.chains(c, modelNames)
	l.pacing(c)
	l.catalog(c)
	l.retry(c)
	l.breaker(c)
	l.state(c)
	l.queue(c)
	l.events(c)
	l.gatewayLimits(c)
	l.movedWatchdogs(c)
}

// listen checks listen: a host:port, and a gateway beyond loopback only
// with gateway.keys.
func (l *loader) listen(c *Config) {
	if host, port, err := net.SplitHostPort(c.Listen); err != nil {
		l.at("listen", fmt.Sprintf("%q is not host:port; write it like 127.0.0.1:8787", c.Listen))
	} else {
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			l.at("listen", fmt.Sprintf("port %q must be a number from 0 to 65535", port))
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && len(c.Gateway.Keys) == 0 {
			l.at("listen", fmt.Sprintf("%s is reachable from other machines: set gateway.keys (the keys clients must send) before listening beyond 127.0.0.1", c.Listen))
		}
	}
}

// gatewayKeys checks gateway.keys: named, given, told apart, and naming
// defined chains; and warns of keys without an admin_key.
func (l *loader) gatewayKeys(c *Config) {
	seenKeys := map[string]string{}
	for i, k := range c.Gateway.Keys {
		fk := fmt.Sprintf("gateway.keys[%d]", i)
		switch {
		case k.Name == "":
			l.at(fk+".name", "every gateway key needs a name (it names the key in logs and limits)")
		case k.Hash == "":
			l.at(fk+".key", "give the key as sha256:HEX (spillway config hash-key prints it), env:VAR or file:PATH; the variable or file is empty or missing")
		case len(k.Hash) != 64 || strings.Trim(k.Hash, "0123456789abcdef") != "":
			l.at(fk+".key", "sha256: takes the key's SHA-256 as 64 hex digits")
		case seenKeys[k.Hash] != "":
			l.at(fk+".key", "the same key as "+seenKeys[k.Hash])
		}
		seenKeys[k.Hash] = k.Name
		for j := 0; j < i; j++ {
			if k.Name != "" && c.Gateway.Keys[j].Name == k.Name {
				l.at(fk+".name", fmt.Sprintf("%q is also the name of gateway.keys[%d]; names tell keys apart in limits and logs", k.Name, j))
			}
		}
		for _, ch := range k.Chains {
			if _, ok := c.Chains[ch]; !ok {
				l.at(fk+".chains", fmt.Sprintf("chain %q is not defined; defined chains: %s", ch, strings.Join(sortedKeys(c.Chains), ", ")))
			}
		}
	}
	if len(c.Gateway.Keys) > 0 && c.Gateway.AdminKey.Ref == "" {
		l.warn("gateway.admin_key", "gateway.keys without an admin_key: beyond loopback the dashboard and GET /spillway/status answer 401 to everyone (on loopback they are open), and reloading over HTTP is off")
	}
}

// providers checks each provider, by name.
func (l *loader) providers(c *Config) {
	for _, name := range sortedKeys(c.Providers) {
		l.provider(name, c.Providers[name])
	}
}

// provider checks a provider: its type, base_url, auth and key, query.
func (l *loader) provider(name string, p Provider) {
	fp := "providers." + name
	if !slices.Contains(providerTypes, p.Type) {
		if p.Type == "" {
			l.at(fp+".type", fmt.Sprintf("provider %q needs a type; allowed: %s", name, strings.Join(providerTypes, ", ")))
		} else {
			l.at(fp+".type", fmt.Sprintf("unknown type %q; allowed: %s", p.Type, strings.Join(providerTypes, ", ")))
		}
	}
	_, baseWritten := l.pos[fp+".base_url"]
	if p.Cloud() != "" && !baseWritten {
		// a cloud's base URL comes from its region, which l.cloud checks
	} else if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.at(fp+".base_url", fmt.Sprintf("%q is not an http(s) URL; write it like https://api.openai.com/v1", p.BaseURL))
	}
	l.cloud(name, p)
	switch p.Auth {
	case AuthPassthrough:
		if p.Cloud() != "" {
			l.at(fp+".auth", fmt.Sprintf("a %s provider is always sent spillway's own cloud credentials (a caller's never go to a cloud): leave auth out, or write auth: key", p.Type))
		}
	case AuthKey:
		if p.Cloud() != "" {
			break // the cloud's credentials: l.cloud checked them
		}
		if IsSignIn(name) {
			l.at(fp+".auth", fmt.Sprintf("provider %q carries the caller's own sign-in: only auth: passthrough", name))
			break
		}
		if p.APIKey.Ref == "" {
			l.at(fp+".api_key", "auth: key needs an api_key (env:VARIABLE)")
		} else if p.APIKey.Value == "" {
			l.warn(fp+".api_key", fmt.Sprintf("%s is not set in this environment; requests to %s will fail with auth", p.APIKey.EnvVar(), name))
		}
	default:
		l.at(fp+".auth", fmt.Sprintf("unknown auth %q; allowed: passthrough (send the client's key), key (send api_key)", p.Auth))
	}
	if p.KeyHeader != "" && p.Auth != AuthKey {
		l.warn(fp+".key_header", "is used only with auth: key (it names the header that carries api_key); with auth: passthrough the client's own header is sent")
	}
	if _, err := url.ParseQuery(p.Query); err != nil {
		l.at(fp+".query", fmt.Sprintf("%q is not a URL query (write it like api-version=2024-10-21): %v", p.Query, err))
	}
	if p.APIKey.Ref != "" && !p.APIKey.IsEnv() {
		l.warn(fp+".api_key", "a key written in the file; prefer env:VARIABLE so the file can be shared")
	}
}

// region is what a cloud's region may be: it goes in a host name.
var region = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// cloud checks a cloud provider's own fields (region, project, profile,
// credentials_file, and the api_key only Bedrock takes), and that a
// provider of another type sets none of them.
func (l *loader) cloud(name string, p Provider) {
	fp := "providers." + name
	if p.Cloud() == "" {
		for _, f := range []struct{ field, v string }{{"region", p.Region}, {"project", p.Project}, {"profile", p.Profile}, {"credentials_file", p.CredentialsFile}} {
			if f.v != "" {
				l.warn(fp+"."+f.field, fmt.Sprintf("is read only for type bedrock or vertex; a provider of type %s ignores it", p.Type))
			}
		}
		return
	}
	switch {
	case p.Region == "":
		example := "us-east-1"
		if p.Type == Vertex {
			example = "us-east5, or global"
		}
		l.at(fp+".region", fmt.Sprintf("a %s provider needs a region (a region is a provider: name one per region), like %s", p.Type, example))
	case !region.MatchString(p.Region):
		l.at(fp+".region", fmt.Sprintf("%q is not a region name: lowercase letters, digits and '-', like us-east-1", p.Region))
	}
	if p.KeyHeader != "" {
		l.at(fp+".key_header", fmt.Sprintf("a %s provider is sent its cloud's own credentials, in the cloud's own header: leave key_header out", p.Type))
	}
	if u, err := url.Parse(p.BaseURL); err == nil && strings.EqualFold(u.Scheme, "http") && !Loopback(net.JoinHostPort(u.Hostname(), "0")) {
		l.warn(fp+".base_url", fmt.Sprintf("%s is plain http beyond this machine: the %s credentials spillway sends (a bearer token, a signature) cross the network in clear text; use https", p.BaseURL, p.Type))
	}
	switch p.Type {
	case Bedrock:
		for _, f := range []struct{ field, v string }{{"project", p.Project}, {"credentials_file", p.CredentialsFile}} {
			if f.v != "" {
				l.at(fp+"."+f.field, "is a vertex provider's setting; a bedrock provider takes region, profile, api_key (a Bedrock API key) and base_url")
			}
		}
		if p.APIKey.IsEnv() && p.APIKey.Value == "" {
			l.warn(fp+".api_key", fmt.Sprintf("%s is not set in this environment; requests to %s will fail with auth", p.APIKey.EnvVar(), name))
		}
	case Vertex:
		if p.Project == "" {
			l.at(fp+".project", "a vertex provider needs the Google Cloud project its requests are billed to (project: my-project)")
		}
		if p.APIKey.Ref != "" {
			l.at(fp+".api_key", "a vertex provider takes no api_key: it signs in with Google's Application Default Credentials, or credentials_file (a service account's JSON)")
		}
		if p.Profile != "" {
			l.at(fp+".profile", "is a bedrock provider's setting (an AWS profile); a vertex provider takes project, region, credentials_file and base_url")
		}
		if p.CredentialsFile != "" {
			if _, err := os.Stat(p.CredentialsFile); err != nil {
				l.warn(fp+".credentials_file", fmt.Sprintf("%s cannot be read here (%v); requests to %s will fail with auth", p.CredentialsFile, errors.Unwrap(err), name))
			}
		}
	}
}

// models checks each model, by name.
func (l *loader) models(c *Config, modelNames []string) {
	for _, name := range modelNames {
		l.model(c, name)
	}
}

// model checks a model: its name, its provider or deployments, tier,
// context, hedge, hold, the names it goes upstream as, and its chain.
func (l *loader) model(c *Config, name string) {
	m := c.Models[name]
	fp := "models." + name
	if err := CheckModelName(name); err != nil {
		l.at(fp, err.Error())
	}
	_, providerSet := l.pos[fp+".provider"]
	switch {
	case len(m.Deployments) > 0 && providerSet:
		l.at(fp+".provider", "a model with deployments names a provider in each deployment, not here")
	case len(m.Deployments) > 0:
		m.Provider = "" // a built-in model's, which its deployments replace
		c.Models[name] = m
		l.deployments(c, name, m)
	default:
		if _, ok := c.Providers[m.Provider]; !ok || IsSignIn(m.Provider) {
			l.at(fp+".provider", modelProviderProblem(c, m.Provider))
		}
	}
	if m.Tier.Rank() == 0 {
		l.at(fp+".tier", fmt.Sprintf("unknown tier %q; allowed: heavy, medium, light", m.Tier))
	}
	if m.Context < 0 {
		l.at(fp+".context", fmt.Sprintf("context window must be a number of tokens (or left out when unknown), not %d", m.Context))
	}
	if m.Hedge && c.FirstToken(name) <= 0 {
		l.warn(fp+".hedge", "has no effect without a first-token limit (first_token_timeout here, or timeouts.first_token): the hedge starts when that limit passes")
	}
	if m.Hold.Tokens < 0 {
		l.at(fp+".hold.tokens", fmt.Sprintf("must be 0 (no token limit) or more, not %d", m.Hold.Tokens))
	}
	l.upstreamNames(c, name, m, fp)
	if m.Chain != "" && !slices.Contains(c.Chains[m.Chain], name) {
		l.at(fp+".chain", fmt.Sprintf("%q is not a chain that holds %s; chains holding it: %s", m.Chain, name, orNone(chainsOf(c, name))))
	}
}

// upstreamNames checks the names a model's deployments go upstream as: a
// Gemini model's name goes in the URL's path (CheckPathModel).
func (l *loader) upstreamNames(c *Config, name string, m Model, fp string) {
	for i, d := range c.Deployments(name) {
		field := fp
		switch {
		case len(m.Deployments) > 0 && m.Deployments[i].Upstream != "":
			field = fmt.Sprintf("%s.deployments[%d].upstream", fp, i)
		case m.Upstream != "":
			field = fp + ".upstream"
		}
		if p, ok := c.Providers[d.Provider]; ok && p.Type == Vertex {
			// Vertex AI serves a model under its publisher, in the path
			if err := checkVertexModel(d.Upstream, d.Provider); err != nil {
				l.at(field, err.Error())
			}
			continue
		}
		// a Gemini model's name goes in the URL's path
		if !c.DeploymentType(d).ModelInPath() {
			continue
		}
		if err := CheckPathModel(d.Upstream); err != nil {
			l.at(field, err.Error())
		}
	}
}

// cloudIDs warns of a model id that deployments of more than one model go
// upstream as on Bedrock or Vertex AI: a cloud client asking for that id
// (Claude Code in its Bedrock mode names one) is answered from one of
// them only (CloudModel's), which the warning names on the others.
func (l *loader) cloudIDs(c *Config, modelNames []string) {
	type use struct{ model, field string }
	byID := map[string][]use{}
	var ids []string
	for _, name := range modelNames {
		m := c.Models[name]
		for i, d := range m.Deployments {
			p, ok := c.Providers[d.Provider]
			if !ok || d.Upstream == "" || (p.Type != Bedrock && p.Type != Vertex) {
				continue
			}
			if len(byID[d.Upstream]) == 0 {
				ids = append(ids, d.Upstream)
			}
			if !slices.ContainsFunc(byID[d.Upstream], func(u use) bool { return u.model == name }) {
				byID[d.Upstream] = append(byID[d.Upstream], use{name, fmt.Sprintf("models.%s.deployments[%d].upstream", name, i)})
			}
		}
	}
	for _, id := range ids {
		uses := byID[id]
		if len(uses) < 2 {
			continue
		}
		chosen, _ := c.CloudModel(id)
		for _, u := range uses {
			if u.model != chosen {
				l.warn(u.field, fmt.Sprintf("%s is also the upstream id of a deployment of %s: a Bedrock or Vertex AI client asking for %s is answered from %s's chain, never from %s's", id, chosen, id, chosen, u.model))
			}
		}
	}
}

// chainOwners checks that a model in more than one chain names the one a
// request for it walks (models.NAME.chain).
func (l *loader) chainOwners(c *Config, modelNames []string) {
	for _, name := range modelNames {
		if in := chainsOf(c, name); len(in) > 1 && c.Models[name].Chain == "" {
			at := "models." + name
			if _, written := l.pos[at]; !written {
				at = "chains." + in[len(in)-1]
				for _, c := range in { // the chain the file wrote, not a built-in one
					if _, written := l.pos["chains."+c]; written {
						at = "chains." + c
						break
					}
				}
			}
			l.at(at, fmt.Sprintf("model %s is in chains %s; a request for it walks one: name it with models.%s.chain: %s", name, strings.Join(in, " and "), name, in[0]))
		}
	}
}

// chainRules checks each chain's overflow and on_usage_limit.
func (l *loader) chainRules(c *Config) {
	for _, name := range sortedKeys(c.ChainRules) {
		r, fp := c.ChainRules[name], "chains."+name
		switch r.OnUsageLimit {
		case "", UsageLimitFail, UsageLimitOverflow:
		default:
			l.at(fp+".on_usage_limit", fmt.Sprintf("unknown value %q; allowed: overflow (a usage limit goes to the overflow chain), fail (it is passed on; the default)", r.OnUsageLimit))
		}
		if r.OnUsageLimit == UsageLimitOverflow && r.Overflow == "" {
			l.at(fp+".on_usage_limit", "on_usage_limit: overflow needs an overflow: chain to go to")
		}
		if r.Overflow == "" {
			continue
		}
		y, ok := c.Chains[r.Overflow]
		switch {
		case !ok:
			l.at(fp+".overflow", fmt.Sprintf("chain %q is not defined; defined chains: %s", r.Overflow, strings.Join(sortedKeys(c.Chains), ", ")))
		case r.Overflow == name:
			l.at(fp+".overflow", "a chain cannot overflow into itself")
		case c.ChainRules[r.Overflow].Overflow == name:
			l.at(fp+".overflow", fmt.Sprintf("chains %s and %s overflow into each other: a cycle (overflow is not transitive; give one of them none)", name, r.Overflow))
		default:
			// an overflow chain may speak another wire format: its
			// models are cross-vendor steps of this chain's walks
			l.crossVendor(c, c.Chains[name], y, fp+".overflow")
		}
	}
}

// chains checks each chain: defined models, each once, heavy to light, and
// its cross-vendor steps.
func (l *loader) chains(c *Config, modelNames []string) {
	for _, name := range sortedKeys(c.Chains) {
		chain := c.Chains[name]
		fp := "chains." + name
		if len(chain) == 0 {
			l.at(fp, "a chain needs at least one model")
			continue
		}
		seen := map[string]bool{}
		for i, m := range chain {
			ip := fmt.Sprintf("%s[%d]", fp, i)
			model, ok := c.Models[m]
			if !ok {
				l.at(ip, fmt.Sprintf("model %q is not defined; defined models: %s", m, strings.Join(modelNames, ", ")))
				continue
			}
			if seen[m] {
				l.at(ip, fmt.Sprintf("model %q appears twice in the chain", m))
			}
			seen[m] = true
			if i > 0 {
				if prev, ok := c.Models[chain[i-1]]; ok && model.Tier.Rank() > prev.Tier.Rank() {
					l.warn(ip, fmt.Sprintf("%s (%s) comes after %s (%s): chains usually go heavy → medium → light", m, model.Tier, chain[i-1], prev.Tier))
				}
			}
		}
		// a chain may mix wire formats: a step to another vendor's model
		// is translated, with that provider's own key
		for j := 1; j < len(chain); j++ {
			l.crossVendor(c, chain[:j], chain[j:j+1], fmt.Sprintf("%s[%d]", fp, j))
		}
	}
}

func (l *loader) pacing(c *Config) {
	if c.Pacing.MaxConcurrency < 1 {
		l.at("pacing.max_concurrency", fmt.Sprintf("must be at least 1, not %d", c.Pacing.MaxConcurrency))
	}
	if !slices.Contains([]string{PaceAuto, PacePressure, PaceAlways}, c.Pacing.When) {
		l.at("pacing.when", fmt.Sprintf("unknown %q; allowed: auto (the gateway under pressure, the library and the queue always), pressure, always", c.Pacing.When))
	}
	if c.Pacing.Relax <= 0 {
		l.at("pacing.relax", "must be more than 0s")
	}
}

func (l *loader) catalog(c *Config) {
	if c.Catalog != CatalogBuiltin && c.Catalog != CatalogNone {
		l.at("catalog", fmt.Sprintf("unknown %q; allowed: builtin (the Codex CLI, Claude Code and Gemini CLI models), none (only this file's)", c.Catalog))
	}
	if c.Catalog == CatalogNone && len(c.Models) == 0 {
		l.at("catalog", "catalog: none needs models: of the file's own")
	}
}

func (l *loader) retry(c *Config) {
	for _, r := range []struct {
		key string
		n   int
	}{{"retry.network_retries", c.Retry.NetworkRetries}, {"retry.rate_limit_retries", c.Retry.RateLimitRetries}, {"retry.timeout_retries", c.Retry.TimeoutRetries}} {
		if r.n < 0 || r.n > 20 {
			l.at(r.key, fmt.Sprintf("must be from 0 to 20, not %d", r.n))
		}
	}
	for i := 1; i < len(c.Retry.Ladder); i++ {
		if c.Retry.Ladder[i] < c.Retry.Ladder[i-1] {
			l.warn(fmt.Sprintf("retry.ladder[%d]", i), "the ladder usually grows: each rung waits longer than the one before")
		}
	}
	if c.Retry.BackoffMax < c.Retry.BackoffBase {
		l.at("retry.backoff_max", fmt.Sprintf("must be at least backoff_base (%s)", c.Retry.BackoffBase.D()))
	}
}

func (l *loader) breaker(c *Config) {
	if c.Breaker.Failures < 1 {
		l.at("breaker.failures", fmt.Sprintf("must be at least 1, not %d", c.Breaker.Failures))
	}
	if c.Breaker.Consecutive < 0 {
		l.at("breaker.consecutive", fmt.Sprintf("must be 0 (off) or more, not %d", c.Breaker.Consecutive))
	}
	if c.Breaker.Window <= 0 {
		l.at("breaker.window", "must be more than 0s")
	}
	if c.Breaker.Cooldown <= 0 {
		l.at("breaker.cooldown", "must be more than 0s")
	}
}

// state checks state: memory, or a Redis URL for a fleet.
func (l *loader) state(c *Config) {
	switch u, err := url.Parse(c.State); {
	case c.State == "memory":
	case err == nil && (u.Scheme == "redis" || u.Scheme == "rediss") && u.Host != "":
		// the gateways of a fleet share their breakers' evidence (internal/fleet)
	default:
		l.at("state", fmt.Sprintf("%q: allowed: memory, or redis://HOST:PORT[/DB] for a fleet of gateways that share their breakers", c.State))
	}
}

func (l *loader) queue(c *Config) {
	switch db := c.Queue.DB; {
	case db == "sqlite", strings.HasPrefix(db, "sqlite:") && len(db) > len("sqlite:"):
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		if _, err := url.Parse(db); err != nil {
			l.at("queue.db", "not a valid postgres:// URL")
		}
	default:
		l.at("queue.db", fmt.Sprintf("%q: allowed: sqlite, sqlite:PATH, or a postgres:// URL", db))
	}
	if c.Queue.GlobalConcurrency < 0 {
		l.at("queue.global_concurrency", fmt.Sprintf("must be 0 (no limit) or more, not %d", c.Queue.GlobalConcurrency))
	}
	if c.Queue.Concurrency < 1 || c.Queue.Concurrency > 64 {
		l.at("queue.concurrency", fmt.Sprintf("must be from 1 to 64, not %d", c.Queue.Concurrency))
	}
	if c.Queue.GapMax < c.Queue.GapMin {
		l.at("queue.gap_max", fmt.Sprintf("must be at least gap_min (%s)", c.Queue.GapMin.D()))
	}
}

func (l *loader) events(c *Config) {
	if c.Events.MaxSizeMB < 1 {
		l.at("events.max_size_mb", fmt.Sprintf("must be at least 1, not %d", c.Events.MaxSizeMB))
	}
	if c.Events.Keep < 0 {
		l.at("events.keep", fmt.Sprintf("must be 0 or more, not %d", c.Events.Keep))
	}
}

// gatewayLimits checks the gateway's bounds: body sizes, timeouts,
// connections and allowed origins.
func (l *loader) gatewayLimits(c *Config) {
	if c.Gateway.MaxBodyMB < 1 || c.Gateway.MaxBodyMB > 1024 {
		l.at("gateway.max_body_mb", fmt.Sprintf("must be from 1 to 1024, not %d", c.Gateway.MaxBodyMB))
	}
	if c.Gateway.MaxInflightMB < 1 {
		l.at("gateway.max_inflight_mb", fmt.Sprintf("must be at least 1, not %d", c.Gateway.MaxInflightMB))
	} else if c.Gateway.MaxBodyMB > c.Gateway.MaxInflightMB {
		l.at("gateway.max_body_mb", fmt.Sprintf("%d MiB is more than gateway.max_inflight_mb (%d): a request that large could never be taken", c.Gateway.MaxBodyMB, c.Gateway.MaxInflightMB))
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"gateway.read_timeout", c.Gateway.ReadTimeout}, {"gateway.keepalive_timeout", c.Gateway.KeepaliveTimeout}} {
		if d.v <= 0 {
			l.at(d.key, "must be more than 0s: without it a client that sends nothing holds its connection forever")
		}
	}
	if c.Gateway.MaxConnections < 1 {
		l.at("gateway.max_connections", fmt.Sprintf("must be at least 1, not %d: the connections a gateway beyond loopback holds at once (default 1024)", c.Gateway.MaxConnections))
	}
	if c.Gateway.MaxConnectionsPerAddress < 0 {
		l.at("gateway.max_connections_per_address", fmt.Sprintf("must be 0 (no cap, the default) or more, not %d", c.Gateway.MaxConnectionsPerAddress))
	}
	for i, o := range c.Gateway.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" && u.Path != "/" {
			l.at(fmt.Sprintf("gateway.allowed_origins[%d]", i), fmt.Sprintf("%q is not an origin; write it like https://app.example or http://localhost:3000", o))
		}
	}
}

// movedWatchdogs reads gateway.first_token_timeout and gateway.idle_timeout
// as timeouts.first_token and timeouts.idle, where they have moved.
func (l *loader) movedWatchdogs(c *Config) {
	// the watchdogs had no section of their own before; a file that sets
	// them under gateway: still works
	for _, old := range []struct {
		key, now string
		from     Duration
		to       *Duration
	}{
		{"gateway.first_token_timeout", "timeouts.first_token", c.Gateway.FirstToken, &c.Timeouts.FirstToken},
		{"gateway.idle_timeout", "timeouts.idle", c.Gateway.Idle, &c.Timeouts.Idle},
	} {
		if _, set := l.pos[old.key]; set {
			if _, both := l.pos[old.now]; both {
				l.at(old.key, "is also set as "+old.now+"; keep only "+old.now)
				continue
			}
			*old.to = old.from
			l.warn(old.key, "has moved to "+old.now+" (it applies to the library and the queue too); spillway reads it there")
		}
	}
	c.Gateway.FirstToken, c.Gateway.Idle = 0, 0
}

// modelProviderProblem says why a model or deployment cannot name provider:
// it is not defined, or it is a sign-in provider (whose models are the
// chains' own, reached only on the sign-in's route).
func modelProviderProblem(c *Config, provider string) string {
	if IsSignIn(provider) {
		return fmt.Sprintf("provider %q carries a person's own sign-in and serves the chains' models on its own route (/backend-api/codex/, /v1internal); a model cannot name it", provider)
	}
	return fmt.Sprintf("provider %q is not defined; defined providers: %s", provider, strings.Join(modelProviders(c), ", "))
}

// modelProviders are the providers a model may name, sorted.
func modelProviders(c *Config) []string {
	var out []string
	for _, n := range sortedKeys(c.Providers) {
		if !IsSignIn(n) {
			out = append(out, n)
		}
	}
	return out
}

// crossVendor warns about the cross-vendor steps from the models of from to
// those of to: a model of to whose wire format differs from that of a model
// of from that a walk reaches it from. Such a step is translated and sent
// with its provider's own api_key (never the caller's credentials), so a
// provider without one makes it always skipped; and a request that needs
// what the target does not take (tools: false, images: false) skips it.
// The warnings name field, where to is written.
func (l *loader) crossVendor(c *Config, from, to []string, at string) {
	for _, target := range to {
		m, ok := c.Models[target]
		if !ok {
			continue
		}
		format := c.ModelType(target)
		var others []string // the models of from of another format
		for _, f := range from {
			if t := c.ModelType(f); t != "" && format != "" && t != format {
				others = append(others, f)
			}
		}
		if len(others) == 0 {
			continue
		}
		if none := keyless(c, target); none != "" {
			l.warn(at, fmt.Sprintf("%s is another vendor's (%s) model: a cross-vendor step uses its provider's own api_key, and %s, so this step is always skipped", target, format, none))
		}
		for _, lack := range []struct {
			what string
			has  func(Model) bool
		}{{"tools", Model.TakesTools}, {"images", Model.TakesImages}} {
			if lack.has(m) {
				continue
			}
			for _, f := range others {
				if lack.has(c.Models[f]) {
					l.warn(at, fmt.Sprintf("%s is another vendor's (%s) model with %s: false, and %s takes %s: a cross-vendor step to it loses %s, so a request with %s skips it", target, format, lack.what, f, lack.what, lack.what, lack.what))
					break
				}
			}
		}
	}
}

// keyless says, of a model none of whose deployments' providers has an
// api_key (none written, or an env:VAR not set), "provider anthropic has
// none" (with the variable that is not set); "" when one has a key.
func keyless(c *Config, model string) string {
	var names []string
	for _, d := range c.Deployments(model) {
		if c.Providers[d.Provider].OwnCredentials() {
			return ""
		}
		if !slices.Contains(names, d.Provider) {
			names = append(names, d.Provider)
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("provider %s has none%s", names[0], unsetEnv(c.Providers[names[0]].APIKey))
	}
	return fmt.Sprintf("none of its providers (%s) has one", strings.Join(names, ", "))
}

// unsetEnv says why an env:VAR key is empty: " (VAR is not set in this
// environment)"; "" for a key not written.
func unsetEnv(s Secret) string {
	if s.IsEnv() {
		return fmt.Sprintf(" (%s is not set in this environment)", s.EnvVar())
	}
	return ""
}

// deployments checks a model's deployments: names told apart and fit to
// print, weights from 1 to maxWeight, defined providers, one wire format.
func (l *loader) deployments(c *Config, name string, m Model) {
	seen := map[string]int{}
	var format Format
	for i, d := range c.Deployments(name) {
		dp := fmt.Sprintf("models.%s.deployments[%d]", name, i)
		if j, dup := seen[d.Name]; dup {
			l.at(dp+".name", fmt.Sprintf("%q is also the name of deployments[%d]; give each a name of its own", d.Name, j))
		}
		seen[d.Name] = i
		if !deploymentName.MatchString(d.Name) {
			field, what := dp+".name", fmt.Sprintf("%q", d.Name)
			if m.Deployments[i].Name == "" {
				field, what = dp+".provider", fmt.Sprintf("the provider's name %q (the deployment's name when it has none)", d.Name)
			}
			l.at(field, fmt.Sprintf("%s cannot name a deployment: routes and metrics write it as model@name, so use letters, digits, '.', '_' and '-' (or give the deployment a name:)", what))
		}
		if w := m.Deployments[i].Weight; w < 0 || w > maxWeight {
			l.at(dp+".weight", fmt.Sprintf("must be 1 to %d (0 means 1), not %d", maxWeight, w))
		}
		if _, ok := c.Providers[d.Provider]; !ok || IsSignIn(d.Provider) {
			l.at(dp+".provider", modelProviderProblem(c, d.Provider))
			continue
		}
		if t := c.DeploymentType(d); t == "" {
			continue // a model Vertex AI has no publisher for: upstreamNames says so
		} else if format == "" {
			format = t
		} else if t != format {
			l.at(dp+".provider", fmt.Sprintf("%s speaks %s but the model's first deployment speaks %s; a model's deployments share one wire format", d.Provider, t, format))
		}
	}
}

// maxWeight bounds a deployment's weight: shares finer than 1 in 1000 mean
// nothing to a balancer that sees a few requests a second.
const maxWeight = 1000

// chainsOf names the chains that hold model, sorted.
func chainsOf(c *Config, model string) []string {
	var in []string
	for _, n := range sortedKeys(c.Chains) {
		if slices.Contains(c.Chains[n], model) {
			in = append(in, n)
		}
	}
	return in
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
