package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spillway/spillway/internal/redact"
)

// Tier ranks models by capability: heavy > medium > light.
type Tier string

// The tiers.
const (
	Heavy  Tier = "heavy"
	Medium Tier = "medium"
	Light  Tier = "light"
)

// Tiers lists the tiers from the most to the least capable.
var Tiers = []Tier{Heavy, Medium, Light}

// Rank is 3 for heavy, 2 for medium, 1 for light, 0 for anything else.
func (t Tier) Rank() int {
	switch t {
	case Heavy:
		return 3
	case Medium:
		return 2
	case Light:
		return 1
	}
	return 0
}

// ParseTier returns the named tier.
func ParseTier(s string) (Tier, error) {
	t := Tier(strings.ToLower(strings.TrimSpace(s)))
	if t.Rank() == 0 {
		return "", fmt.Errorf("unknown tier %q; allowed: heavy, medium, light", s)
	}
	return t, nil
}

// Duration is a time.Duration written in Go form (500ms, 30s, 2m).
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses the Go duration form. The loader has already checked
// the text (so that the error can name the line), this only converts it.
func (d *Duration) UnmarshalYAML(b []byte) error {
	v, err := parseDuration(strings.Trim(strings.TrimSpace(string(b)), `"'`))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML prints the Go form.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write it like 500ms, 30s, 2m or 1h30m", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative; durations must be zero or more", s)
	}
	return v, nil
}

// Secret is an API key: either env:VAR (resolved from the environment at load
// time) or, discouraged, the key itself. It never prints its value.
type Secret struct {
	Ref   string // as written: "env:OPENAI_API_KEY" or the literal
	Value string // resolved value; empty when unset
}

// IsEnv reports whether the secret is an env:VAR reference.
func (s Secret) IsEnv() bool { return strings.HasPrefix(s.Ref, "env:") }

// EnvVar is the variable name of an env:VAR reference.
func (s Secret) EnvVar() string { return strings.TrimPrefix(s.Ref, "env:") }

// String masks the value: "env:OPENAI_API_KEY (set)", "sk-**** (literal)".
func (s Secret) String() string {
	switch {
	case s.Ref == "":
		return ""
	case s.IsEnv() && s.Value != "":
		return s.Ref + " (set)"
	case s.IsEnv():
		return s.Ref + " (not set)"
	case strings.HasPrefix(s.Ref, "sha256:"), strings.HasPrefix(s.Ref, "file:"):
		return s.Ref // a hash, or where the key is: neither is the key
	default:
		return redact.Mask(s.Ref) + " (literal key in file)"
	}
}

// UnmarshalYAML reads the reference as written.
func (s *Secret) UnmarshalYAML(b []byte) error {
	s.Ref = strings.Trim(strings.TrimSpace(string(b)), `"'`)
	return nil
}

// MarshalYAML prints the masked form, never the value.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// Config is spillway's whole configuration.
type Config struct {
	Listen    string              `yaml:"listen"`
	Providers map[string]Provider `yaml:"providers"`
	Models    map[string]Model    `yaml:"models"`
	Chains    map[string][]string `yaml:"chains"`
	// ChainRules are the overflow settings of the chains written in the
	// object form ({models, overflow, on_usage_limit}), by chain.
	ChainRules map[string]ChainRules `yaml:"-"`
	Pacing     Pacing                `yaml:"pacing"`
	Retry      Retry                 `yaml:"retry"`
	Breaker    Breaker               `yaml:"breaker"`
	State      string                `yaml:"state"`
	Queue      Queue                 `yaml:"queue"`
	Events     Events                `yaml:"events"`
	Gateway    Gateway               `yaml:"gateway"`
	Timeouts   Timeouts              `yaml:"timeouts"`
	// Catalog is builtin (the models of Codex CLI, Claude Code and Gemini
	// CLI, and their chains, under the file's own) or none (only the
	// models and chains the file names).
	Catalog string `yaml:"catalog"`
	// PassthroughUnknown sends a request for a model the configuration does
	// not know to the endpoint's provider as it is (one try, no fallback).
	// Unset: yes with the built-in catalog (real clients ask for auxiliary
	// models), no with catalog: none (a typo is an error, not a surprise).
	PassthroughUnknown *bool `yaml:"passthrough_unknown,omitempty"`

	// Source is the file the configuration came from; empty for the
	// built-in defaults alone.
	Source string `yaml:"-"`
	// Blank: the file holds no setting (it is empty, or only comments):
	// the configuration is the defaults'. A gateway that started from a
	// file refuses to reload a blank one.
	Blank bool `yaml:"-"`
	// Warnings are things that work but are probably not meant.
	Warnings []string `yaml:"-"`
}

// The catalogs.
const (
	CatalogBuiltin = "builtin"
	CatalogNone    = "none"
)

// PassesUnknown reports whether a request for a model the configuration
// does not know goes upstream as named (see PassthroughUnknown).
func (c *Config) PassesUnknown() bool {
	if c.PassthroughUnknown != nil {
		return *c.PassthroughUnknown
	}
	return c.Catalog != CatalogNone
}

// Format is a provider's wire format: what its requests, answers, events
// and errors look like (internal/format holds each one's truth).
type Format string

// The wire formats.
const (
	OpenAI    Format = "openai"
	Anthropic Format = "anthropic"
	Gemini    Format = "gemini"
)

// ModelInPath reports a format whose model is a segment of the URL path,
// not a field of the body (Gemini's): its model names must fit a path.
func (f Format) ModelInPath() bool { return f == Gemini }

// Prefills reports a format whose model may be sent a partial assistant
// turn to go on from (Anthropic's Messages): a broken answer's
// continuation.
func (f Format) Prefills() bool { return f == Anthropic }

// Provider is an upstream API.
type Provider struct {
	// Type is the wire format: openai, anthropic or gemini. It defaults to
	// the provider's name when the name is one of those.
	Type    string `yaml:"type"`
	BaseURL string `yaml:"base_url"`
	APIKey  Secret `yaml:"api_key"`
	// Auth is passthrough (send the client's own key, the default) or key
	// (replace it with APIKey).
	Auth Auth `yaml:"auth"`
	// KeyHeader, with auth: key, is the header that carries APIKey when the
	// provider wants another than its wire format's (Authorization:
	// Bearer, x-api-key, x-goog-api-key): "api-key" for Azure OpenAI.
	KeyHeader string `yaml:"key_header,omitempty"`
	// Query is added to every request's URL, e.g. api-version=2024-10-21.
	Query string `yaml:"query,omitempty"`

	// Region is a cloud provider's region (type bedrock: us-east-1; type
	// vertex: us-east5, or global). A region is a provider: a model's
	// deployments name one provider per region.
	Region string `yaml:"region,omitempty"`
	// Project is a Vertex AI provider's Google Cloud project.
	Project string `yaml:"project,omitempty"`
	// Profile is a Bedrock provider's AWS shared-config profile (the
	// default chain's when empty).
	Profile string `yaml:"profile,omitempty"`
	// CredentialsFile is a Vertex AI provider's Google credentials JSON (a
	// service account's or a user's); Application Default Credentials
	// when empty.
	CredentialsFile string `yaml:"credentials_file,omitempty"`
}

// ChainRules are a chain's overflow: where a request goes when one walk of
// the chain's own models found no room, and what a usage limit does.
type ChainRules struct {
	// Overflow is the chain walked next (once, not transitively), from its
	// first model at or below the requested tier.
	Overflow string
	// OnUsageLimit is overflow (a plan's usage limit goes to the overflow
	// chain, on providers with spillway's own key) or fail (it is passed on;
	// the default).
	OnUsageLimit string
}

// The values of on_usage_limit.
const (
	UsageLimitFail     = "fail"
	UsageLimitOverflow = "overflow"
)

// ChatGPT is the built-in provider of a ChatGPT plan's Codex backend
// (https://chatgpt.com/backend-api/codex): Codex signed in with ChatGPT
// sends its own token there. The gateway serves it under
// /backend-api/codex/.
const ChatGPT = "chatgpt"

// CodeAssist is the built-in provider of the Code Assist API
// (https://cloudcode-pa.googleapis.com), which Gemini CLI signed in with
// Google calls at CODE_ASSIST_ENDPOINT. The gateway serves it under
// /v1internal.
const CodeAssist = "codeassist"

// IsSignIn reports a provider that carries a person's own sign-in (a plan's
// token, not an API key): passthrough only, never given a key, never used by
// a model's deployments, a probe or a check of spillway's own, and refused
// on a gateway that serves others (beyond loopback, or with gateway.keys).
func IsSignIn(provider string) bool { return provider == ChatGPT || provider == CodeAssist }

// Model is one model, served by one provider or by several deployments.
type Model struct {
	// Provider serves the model when it has no Deployments.
	Provider string `yaml:"provider,omitempty"`
	Tier     Tier   `yaml:"tier"`
	// Context is the context window in tokens; 0 when unknown (the model
	// is then never picked as a larger window after a context_length).
	Context int `yaml:"context,omitempty"`
	// Chain names the chain a request for the model walks, when the model
	// is in more than one.
	Chain string `yaml:"chain,omitempty"`
	// HeaderTimeout overrides timeouts.header for this model.
	HeaderTimeout Duration `yaml:"header_timeout,omitempty"`
	// FirstTokenTimeout overrides timeouts.first_token for this model: how
	// long its stream may take, after its headers, to send its first
	// output (0, the default: no limit; reasoning models think for
	// minutes).
	FirstTokenTimeout Duration `yaml:"first_token_timeout,omitempty"`
	// Hedge, with a first-token limit, starts the next model when the
	// limit passes instead of giving this one up: whichever sends output
	// first answers, and the other is cancelled.
	Hedge bool `yaml:"hedge,omitempty"`
	// Hold keeps a stream's output from the client until it is sure: a
	// break, a stall or a malformed frame within the window restarts
	// cleanly on the same or the next model.
	Hold Hold `yaml:"hold,omitempty"`
	// Prefill: false says the model refuses a partial assistant turn, so
	// a broken answer is never continued on it.
	Prefill *bool `yaml:"prefill,omitempty"`
	// Tools, Images and Reasoning are what the model takes: tool
	// definitions and calls, image input, a reasoning (thinking) budget or
	// effort. Unset means it takes it; false says it does not. A
	// cross-vendor step (to a model of another wire format than the
	// request's) that needs what the target model does not take is
	// skipped.
	Tools     *bool `yaml:"tools,omitempty"`
	Images    *bool `yaml:"images,omitempty"`
	Reasoning *bool `yaml:"reasoning,omitempty"`
	// Upstream is the name sent to the provider when it differs from the
	// name clients use (an alias). Empty means the same name.
	Upstream string `yaml:"upstream,omitempty"`
	// Deployments, when set, are the places the model is served (another
	// region, key or account, Azure as well as the vendor): a request
	// tries them, balanced by weight, before the next model of its chain.
	Deployments []Deployment `yaml:"deployments,omitempty"`
}

// TakesTools reports whether the model takes tool definitions and tool
// calls (tools: false says no; unset says yes).
func (m Model) TakesTools() bool { return takes(m.Tools) }

// TakesImages reports whether the model takes image input (images: false
// says no; unset says yes).
func (m Model) TakesImages() bool { return takes(m.Images) }

// TakesReasoning reports whether the model takes a reasoning (thinking)
// budget or effort (reasoning: false says no; unset says yes).
func (m Model) TakesReasoning() bool { return takes(m.Reasoning) }

// takes is an optional capability: unset means the model has it.
func takes(b *bool) bool { return b == nil || *b }

// Hold is a hold window: output is kept back until Tokens pieces of the
// answer have come or Duration has passed since the first (whichever is
// first). Zero is no hold.
type Hold struct {
	Tokens   int      `yaml:"tokens,omitempty"`
	Duration Duration `yaml:"duration,omitempty"`
}

// On reports a hold window.
func (h Hold) On() bool { return h.Tokens > 0 || h.Duration > 0 }

// Deployment is one place a model is served.
type Deployment struct {
	// Name tells deployments apart in routes, logs and metrics; the
	// provider's name when empty.
	Name     string `yaml:"name,omitempty"`
	Provider string `yaml:"provider"`
	// Upstream is the model's name at this deployment; the model's
	// upstream (or name) when empty.
	Upstream string `yaml:"upstream,omitempty"`
	// Weight shares healthy traffic between the deployments (1 when 0).
	Weight int `yaml:"weight,omitempty"`
}

// Deployments are where the model called name is served, with every default
// filled in: its deployments (each named, with its upstream name and a
// weight), or the one its provider serves, unnamed. nil for a model the
// configuration does not know.
func (c *Config) Deployments(name string) []Deployment {
	m, ok := c.Models[name]
	if !ok {
		return nil
	}
	upstream := name
	if m.Upstream != "" {
		upstream = m.Upstream
	}
	if len(m.Deployments) == 0 {
		return []Deployment{{Provider: m.Provider, Upstream: upstream, Weight: 1}}
	}
	out := make([]Deployment, len(m.Deployments))
	for i, d := range m.Deployments {
		if d.Name == "" {
			d.Name = d.Provider
		}
		if d.Upstream == "" {
			d.Upstream = upstream
		}
		if d.Weight <= 0 {
			d.Weight = 1
		}
		out[i] = d
	}
	return out
}

// Loopback reports whether a listen address (HOST:PORT) is reachable from
// this machine only: localhost or a loopback IP. An empty host (every
// interface) or one that does not parse is not.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SecretValues are the secrets the configuration holds, to be redacted
// wherever text goes: the providers' keys, the gateway keys it knows the
// value of, the admin and metrics keys, and the passwords of its URLs
// (base URLs, state, queue.db).
func (c *Config) SecretValues() []string {
	var out []string
	urls := []string{c.State, c.Queue.DB}
	for _, p := range c.Providers {
		out = append(out, p.APIKey.Value)
		urls = append(urls, p.BaseURL)
	}
	for _, k := range c.Gateway.Keys {
		out = append(out, k.Key.Value)
	}
	out = append(out, c.Gateway.AdminKey.Value, c.Gateway.MetricsKey.Value)
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			}
		}
	}
	return out
}

// ModelType is the wire format of the model called name (its first
// deployment's provider's), "" for a model the configuration does not know.
func (c *Config) ModelType(name string) Format {
	if d := c.Deployments(name); len(d) > 0 {
		return c.DeploymentType(d[0])
	}
	return ""
}

// Pacing spaces requests to one model.
type Pacing struct {
	MinGap         Duration `yaml:"min_gap"`
	Jitter         Duration `yaml:"jitter"`
	MaxConcurrency int      `yaml:"max_concurrency"`
	// When is when spacing and the concurrency limit apply: pressure (once
	// a model or key answered capacity or rate_limit, until Relax passes
	// without either), always (from the first request), or auto: the
	// gateway under pressure, the library and the queue (batch work)
	// always.
	When string `yaml:"when"`
	// Relax is how long a model or key must stay free of capacity and
	// rate-limit answers before pacing under pressure lets go (0: a
	// minute).
	Relax Duration `yaml:"relax"`
}

// The values of Pacing.When.
const (
	PaceAuto     = "auto"
	PacePressure = "pressure"
	PaceAlways   = "always"
)

// Retry sets the waits of the policy engine.
type Retry struct {
	// Ladder is the long-wait ladder used once every model of a chain is at
	// capacity (exec and queue); after its last rung: "global outage".
	Ladder         []Duration `yaml:"ladder"`
	NetworkRetries int        `yaml:"network_retries"`
	NetworkGap     Duration   `yaml:"network_gap"`
	// RateLimitRetries is how many times a rate-limited model is tried
	// again (after its Retry-After, or backoff) before the next model.
	RateLimitRetries int `yaml:"rate_limit_retries"`
	// TimeoutRetries is how many times a model that timed out (no headers,
	// no first output, a stall before output) is tried again before the
	// next model.
	TimeoutRetries int `yaml:"timeout_retries"`
	// Budget is the most one request may take before an answer starts:
	// every wait (backoff, Retry-After, pacing, a ladder rung) and every
	// HTTP attempt that failed count against it, on the clock.
	Budget      Duration `yaml:"budget"`
	BackoffBase Duration `yaml:"backoff_base"`
	BackoffMax  Duration `yaml:"backoff_max"`
}

// Breaker sets the per-(provider, model) circuit breakers.
type Breaker struct {
	Failures int      `yaml:"failures"`
	Window   Duration `yaml:"window"`
	// Consecutive opens the breaker after that many capacity errors in a
	// row with no answer between, whatever the window holds (0: off).
	Consecutive int      `yaml:"consecutive"`
	Cooldown    Duration `yaml:"cooldown"`
	// MaxCooldown caps the cooldown, which doubles each time the probe
	// after a cooldown finds the model still full (a pool full for hours
	// is not probed every cooldown); it resets when a probe gets through.
	// Never below Cooldown: a file that raises cooldown past it raises it.
	MaxCooldown Duration `yaml:"max_cooldown"`
}

// Queue sets the task queue.
type Queue struct {
	// DB is "sqlite" (a file under the data dir), "sqlite:PATH" or a
	// postgres:// URL.
	DB          string `yaml:"db"`
	Concurrency int    `yaml:"concurrency"` // tasks at once, per runner
	// GlobalConcurrency is tasks at once across every `queue run` on the
	// database (0: no limit beyond each runner's concurrency).
	GlobalConcurrency int      `yaml:"global_concurrency"`
	GapMin            Duration `yaml:"gap_min"`
	GapMax            Duration `yaml:"gap_max"`
}

// Gateway sets the limits of `spillway serve`.
type Gateway struct {
	// MaxBodyMB is the largest request body accepted; larger gets 413.
	MaxBodyMB int `yaml:"max_body_mb"`
	// MaxInflightMB bounds the bytes the gateway holds at once: request
	// bodies and whole answers being read. Past it a request waits up to
	// a second for room, then gets 503 spillway_busy with Retry-After: 1.
	MaxInflightMB int `yaml:"max_inflight_mb"`
	// ReadTimeout bounds reading a request, headers and body (a client
	// that sends headers and no body is cut off); KeepaliveTimeout closes
	// a keep-alive connection idle that long. No write timeout: it would
	// cut streams (the relay has write deadlines of its own).
	ReadTimeout      Duration `yaml:"read_timeout"`
	KeepaliveTimeout Duration `yaml:"keepalive_timeout"`
	// MaxConnections caps the connections a gateway that listens beyond
	// loopback holds at once (default 1024); past it a new connection is
	// closed at once. MaxConnectionsPerAddress caps those from one client
	// address (0, the default: no cap; a gateway behind a load balancer
	// sees one address).
	MaxConnections           int `yaml:"max_connections"`
	MaxConnectionsPerAddress int `yaml:"max_connections_per_address"`
	// AllowedHosts are the names the gateway answers to (the Host header),
	// besides 127.0.0.1, localhost and [::1]: on loopback, no other name
	// is answered (a DNS rebinding name is refused); beyond loopback, none
	// listed means any.
	AllowedHosts []string `yaml:"allowed_hosts,omitempty"`
	// AllowedOrigins are the web pages (https://app.example) that may call
	// the gateway from a browser besides its own; any other site's page is
	// refused.
	AllowedOrigins []string `yaml:"allowed_origins,omitempty"`
	// MetricsKey guards GET /metrics beyond loopback (a bearer token for
	// it alone), unless PublicMetrics.
	MetricsKey    Secret `yaml:"metrics_key,omitempty"`
	PublicMetrics bool   `yaml:"public_metrics,omitempty"`
	// AdminKey guards the gateway's own pages and actions over HTTP (POST
	// /spillway/reload; the dashboard and /spillway/status when set, and
	// always beyond loopback): env:VAR or the key; none when empty.
	AdminKey Secret `yaml:"admin_key,omitempty"`
	// Keys are the gateway keys. With any, every API request must carry
	// one (where its SDK sends the provider's key), and the gateway sends
	// the providers their own keys (auth: key). A listen address beyond
	// loopback requires them.
	Keys []GatewayKey `yaml:"keys,omitempty"`
	// FirstToken and Idle are read from files written before timeouts had
	// a section of their own; they move there, with a warning.
	FirstToken Duration `yaml:"first_token_timeout,omitempty"`
	Idle       Duration `yaml:"idle_timeout,omitempty"`
}

// Timeouts are the watchdogs of every HTTP attempt, whichever front end
// sends it (the gateway, the library, the queue's prompts). 0 turns one off.
type Timeouts struct {
	// Header is how long a stream may take to send its response headers
	// (a healthy provider sends them at once); models.*.header_timeout
	// overrides it per model.
	Header Duration `yaml:"header"`
	// Request is how long a whole (not streamed) answer may take to send
	// its headers, which come only once the answer is written.
	Request Duration `yaml:"request"`
	// FirstToken is how long a stream may take, once its headers came, to
	// send its first output; off (0) unless set.
	FirstToken Duration `yaml:"first_token"`
	// Idle is how long an answer may stay silent: a whole answer's body
	// before it is complete, a stream once its output has started (then it
	// is cut, and the caller gets the protocol's error).
	Idle Duration `yaml:"idle"`
}

// OwnSecretVars are the environment variables the configuration reads
// spillway's own keys from (env:VAR of the admin key, the metrics key and
// the gateway keys): a child spillway starts (the agent under exec, a
// queue's command) gets its environment without them. The providers' keys
// are the user's own and pass through.
func (c *Config) OwnSecretVars() []string {
	refs := []Secret{c.Gateway.AdminKey, c.Gateway.MetricsKey}
	for _, k := range c.Gateway.Keys {
		refs = append(refs, k.Key)
	}
	var out []string
	for _, s := range refs {
		if s.IsEnv() && s.EnvVar() != "" && !slices.Contains(out, s.EnvVar()) {
			out = append(out, s.EnvVar())
		}
	}
	return out
}

// Events sets the JSONL event log.
type Events struct {
	// Path of the log; empty means the default under the state dir.
	Path      string `yaml:"path"`
	MaxSizeMB int    `yaml:"max_size_mb"`
	Keep      int    `yaml:"keep"`
}

// GatewayKey is one client's key to the gateway.
type GatewayKey struct {
	Name string `yaml:"name"`
	// Key is "sha256:HEX" (the key's SHA-256, so the file holds no key),
	// env:VAR or file:PATH (the key itself, read at load).
	Key Secret `yaml:"key"`
	// Chains the key may use (a request's model must be in one); all when
	// empty.
	Chains []string `yaml:"chains,omitempty"`
	// Concurrency caps the key's requests in flight (0: no cap); one more
	// is refused with 429 and Retry-After: 1.
	Concurrency int `yaml:"concurrency,omitempty"`
	// DailyTokens caps the tokens (input and output) the key's requests
	// may use per UTC day (0: none); kept in the queue's database, so that
	// it survives a restart (and a fleet on Postgres shares it).
	DailyTokens int64 `yaml:"daily_tokens,omitempty"`
	// Hash is the key's SHA-256 (hex), resolved at load.
	Hash string `yaml:"-"`
}

// ChainModel is one model of a chain declared in code (Config.AddChain).
type ChainModel struct {
	Name     string // the name clients use
	Provider string // a configured provider (Config.Providers)
	Tier     Tier
	Context  int    // the context window in tokens; 0 when unknown
	Upstream string // the name sent upstream, when it differs from Name
}

// AddChain declares a chain in code, as a `chains:` entry and its
// `models:` would in a file: it adds (or replaces) each model and sets the
// chain to their names, in order (a request for any of them walks on from
// its position). A model walks one chain: AddChain takes its models out of
// any chain they were in. It checks what `spillway config check` checks of
// a chain: every model has a tier and a configured provider; on a mistake
// it changes nothing. The models may speak different wire formats (another
// vendor's model is a cross-vendor step, translated, with its provider's
// own api_key).
//
//	cfg := config.Default()
//	err := cfg.AddChain("mine",
//		config.ChainModel{Name: "gpt-6-astra", Provider: "openai", Tier: config.Heavy},
//		config.ChainModel{Name: "gpt-6-luna", Provider: "openai", Tier: config.Light})
func (c *Config) AddChain(name string, models ...ChainModel) error {
	if name == "" || len(models) == 0 {
		return fmt.Errorf("config: a chain needs a name and at least one model")
	}
	for i, m := range models {
		where := fmt.Sprintf("config: chains.%s[%d]", name, i)
		if m.Name == "" {
			return fmt.Errorf("%s: a model needs a name", where)
		}
		if m.Tier.Rank() == 0 {
			return fmt.Errorf("%s: model %s: unknown tier %q; allowed: heavy, medium, light", where, m.Name, m.Tier)
		}
		if _, ok := c.Providers[m.Provider]; !ok || IsSignIn(m.Provider) {
			return fmt.Errorf("%s: model %s: provider %q is not configured; configured: %s", where, m.Name, m.Provider, strings.Join(modelProviders(c), ", "))
		}
	}
	if c.Models == nil {
		c.Models = map[string]Model{}
	}
	if c.Chains == nil {
		c.Chains = map[string][]string{}
	}
	names := make([]string, len(models))
	for i, m := range models {
		c.Models[m.Name] = Model{Provider: m.Provider, Tier: m.Tier, Context: m.Context, Upstream: m.Upstream}
		names[i] = m.Name
	}
	for other, chain := range c.Chains {
		kept := slices.DeleteFunc(slices.Clone(chain), func(m string) bool { return slices.Contains(names, m) })
		if len(kept) == 0 {
			delete(c.Chains, other)
			delete(c.ChainRules, other)
		} else {
			c.Chains[other] = kept
		}
	}
	c.Chains[name] = names
	return nil
}

// FirstToken is how long a stream of model may take, after its headers, to
// send its first output: its own first_token_timeout, else
// timeouts.first_token; 0 for no limit.
func (c *Config) FirstToken(model string) time.Duration {
	if m, ok := c.Models[model]; ok && m.FirstTokenTimeout > 0 {
		return m.FirstTokenTimeout.D()
	}
	return c.Timeouts.FirstToken.D()
}

// Prefills reports whether model may be sent a partial assistant turn to
// continue (prefill: false says no).
func (c *Config) Prefills(model string) bool {
	m, ok := c.Models[model]
	return !ok || m.Prefill == nil || *m.Prefill
}

// ChainFor returns the chain a request for model walks (from that model's
// position on), and the chain's name: the chain the model names, else the
// one chain it is in (a file cannot put it in two without naming one; in
// code, the first by name). A model in no chain is a chain of one.
func (c *Config) ChainFor(model string) (name string, chain []string) {
	names := make([]string, 0, len(c.Chains))
	for n := range c.Chains {
		names = append(names, n)
	}
	sortStrings(names)
	if m, ok := c.Models[model]; ok && m.Chain != "" {
		names = append([]string{m.Chain}, names...)
	}
	for _, n := range names {
		for i, m := range c.Chains[n] {
			if m == model {
				return n, c.Chains[n][i:]
			}
		}
	}
	if _, ok := c.Models[model]; ok {
		return "", []string{model}
	}
	return "", nil
}

// ProviderType is the wire format of the named provider.
func (c *Config) ProviderType(name string) Format {
	p, ok := c.Providers[name]
	if !ok {
		return ""
	}
	switch p.Type {
	case Bedrock:
		return Anthropic // InvokeModel carries Anthropic's models only
	case Vertex:
		return "" // each deployment's model says (DeploymentType)
	case "":
		return Format(name)
	}
	return Format(p.Type)
}

// CrossVendor reports whether any request can be answered by another
// vendor's model under c: a chain whose models speak more than one wire
// format, or whose overflow chain speaks another.
func (c *Config) CrossVendor() bool {
	for name, chain := range c.Chains {
		for _, m := range chain {
			if c.ModelType(m) != c.ModelType(chain[0]) {
				return true
			}
		}
		if o := c.ChainRules[name].Overflow; o != "" && len(c.Chains[o]) > 0 && len(chain) > 0 && c.ModelType(c.Chains[o][0]) != c.ModelType(chain[0]) {
			return true
		}
	}
	return false
}
