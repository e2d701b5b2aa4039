// Package doctor is `spillway doctor`: is it the account, the quota, the
// network, or the provider's capacity? It asks each configured provider
// what costs nothing (its list of models, with the user's key), reads what
// the agents already know (Codex's usage windows, recent failures in their
// files), the providers' public status pages and the network path, and,
// with Probe, one smallest request per model. Every finding is healthy,
// degraded or broken with its evidence; the verdict comes first.
package doctor

import (
	"cmp"
	"context"
	"crypto/tls"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/words"
)

// Status is a finding's weight.
type Status string

// The statuses, from best to worst; Unknown is a check that could not be
// made (it weighs nothing).
const (
	Healthy  Status = "healthy"
	Degraded Status = "degraded"
	Broken   Status = "broken"
	Unknown  Status = "unknown"
)

func worse(a, b Status) Status {
	rank := map[Status]int{Unknown: 0, Healthy: 1, Degraded: 2, Broken: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Finding is one check's result.
type Finding struct {
	// Area is what was checked: key, quota, models, model, rate, network,
	// status, agent, proxy.
	Area     string `json:"area"`
	Subject  string `json:"subject"` // a provider, a model, a host, an agent
	Status   Status `json:"status"`
	Summary  string `json:"summary"`
	Evidence string `json:"evidence,omitempty"`
	// Class is the failure class behind a finding that is not healthy.
	Class string `json:"class,omitempty"`

	latency time.Duration // a host's median connect, for the baseline
	// advice is what to do about a broken finding, for the verdict (a
	// cloud's credentials: what to check)
	advice string
}

// Report is doctor's answer.
type Report struct {
	Verdict  string    `json:"verdict"`
	Status   Status    `json:"status"`
	Findings []Finding `json:"findings"`
	// Unreached are the verdicts this run could not reach, and why.
	Unreached []string `json:"unreached,omitempty"`
	// Cost is what the run spent (requests that cost tokens).
	Cost string `json:"cost"`
}

// Options say what doctor checks.
type Options struct {
	Config *config.Config
	Getenv func(string) string
	// Probe sends one smallest request (one output token) to each
	// configured model: the only way to see capacity and rate-limit
	// headers.
	Probe bool
	// Offline skips the status pages.
	Offline bool
	// StatusPages maps a provider to its status page (a Statuspage site:
	// /api/v2/summary.json under it); nil: OpenAI's and Anthropic's.
	StatusPages map[string]string
	// Samples is how many TCP connects measure each host (default 20).
	Samples int
	// Timeout bounds each network step and request (default 10 s).
	Timeout time.Duration
	// StateDir keeps the network baseline ("" : none kept).
	StateDir string
	// CodexHome, ClaudeHome: the agents' directories ("" : their defaults).
	CodexHome, ClaudeHome string
	// GeminiHome is Gemini CLI's directory ("": its default).
	GeminiHome string
	// Gateway is the local gateway's URL, whose /spillway/status holds the
	// plan rate-limit headers it saw last; "" : http://<listen> when the
	// configuration listens on loopback. Nothing is sent when none runs.
	Gateway string
	// TLS is the client TLS configuration (tests trust their own CA).
	TLS *tls.Config
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultStatusPages are the providers' public status pages.
var DefaultStatusPages = map[string]string{"openai": "https://status.openai.com", "anthropic": "https://status.anthropic.com"}

func (o *Options) defaults() {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Samples <= 0 {
		o.Samples = 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.StatusPages == nil {
		o.StatusPages = DefaultStatusPages
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

func (o Options) transport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if o.TLS != nil {
		t.TLSClientConfig = o.TLS.Clone() // the transport writes to its own (HTTP/2 protocols)
	}
	t.ResponseHeaderTimeout = o.Timeout
	// a cloud provider's probes are signed with spillway's own cloud
	// credentials as they leave
	return cloud.NewTransport(t, nowFunc(o.Now))
}

// nowFunc is a clock of a time function (Options.Now).
type nowFunc func() time.Time

// Now is f's time.
func (f nowFunc) Now() time.Time { return f() }

// Run checks everything and returns the report.
func Run(ctx context.Context, o Options) Report {
	o.defaults()
	rt := o.transport()
	var (
		mu       sync.Mutex
		findings []Finding
		wg       sync.WaitGroup
	)
	add := func(fs ...Finding) {
		mu.Lock()
		defer mu.Unlock()
		findings = append(findings, fs...)
	}
	var r Report
	provs := usedProviders(o.Config)
	probes := 0
	hosts := map[string]bool{} // each host measured once, whatever serves on it
	for _, p := range provs {
		wg.Go(func() {
			fs, n := checkProvider(ctx, o, rt, p)
			add(fs...)
			mu.Lock()
			probes += n
			mu.Unlock()
		})
		if h := hostOf(p.base); !hosts[h] {
			hosts[h] = true
			wg.Go(func() { add(checkNetwork(ctx, o, p)...) })
		}
	}
	if !o.Offline {
		for _, name := range slices.Sorted(maps.Keys(o.StatusPages)) {
			if !slices.ContainsFunc(provs, func(p provider) bool { return p.typ == name && official(name, p.base, o.StatusPages) }) {
				continue // a page for a provider not configured (or not the official API)
			}
			wg.Go(func() { add(checkStatusPage(ctx, o, rt, name, o.StatusPages[name])...) })
		}
	} else {
		r.Unreached = append(r.Unreached, "the providers' status pages (--offline)")
	}
	wg.Go(func() { add(checkAgents(o)...) })
	wg.Go(func() { add(checkGateway(o)...) })
	add(checkProxy(o)...)
	wg.Wait()
	if !o.Probe {
		r.Unreached = append(r.Unreached, "whether each model has capacity right now, and the rate-limit headers of a real request: run with --probe (one request of one output token per model)")
	}
	if probes > 0 {
		r.Cost = words.Count(probes, "request") + " of one output token (about ten input tokens each)"
	} else {
		r.Cost = "nothing: listings, token counts and connects cost no tokens"
	}
	order := map[Status]int{Broken: 0, Degraded: 1, Unknown: 2, Healthy: 3}
	slices.SortStableFunc(findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(order[a.Status], order[b.Status]), cmp.Compare(a.Area, b.Area), cmp.Compare(a.Subject, b.Subject))
	})
	for i := range findings {
		findings[i].Evidence = redact.String(findings[i].Evidence)
		findings[i].Summary = redact.String(findings[i].Summary)
	}
	r.Findings = findings
	r.Status, r.Verdict = verdict(findings, o.Probe, func(model string) string { return alternative(o.Config, model, findings) })
	if r.Status == Healthy && o.StateDir != "" {
		saveBaseline(o, findings)
	}
	return r
}

// hostOf is a base URL's scheme and host (what a network check measures).
func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	return u.Scheme + "://" + u.Host
}

// alternative is the model to switch to from one at capacity: the next in
// its chain that answered the probe, else any that answered in the chain.
func alternative(cfg *config.Config, model string, fs []Finding) string {
	ok := map[string]bool{}
	for _, f := range fs {
		if f.Area == "model" && f.Status == Healthy {
			ok[f.Subject] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Chains)) {
		chain := cfg.Chains[name]
		i := slices.Index(chain, model)
		if i < 0 {
			continue
		}
		for _, m := range append(slices.Clone(chain[i+1:]), chain[:i]...) {
			if ok[m] {
				return m
			}
		}
	}
	return ""
}

// official reports whether a provider at base is the one the status page
// covers: the provider's own API host for the built-in pages (OpenAI's page
// says nothing of Azure or a local server); any, for a page the user named.
func official(name, base string, pages map[string]string) bool {
	if pages[name] != DefaultStatusPages[name] {
		return true
	}
	host := map[string]string{"openai": "api.openai.com", "anthropic": "api.anthropic.com"}[name]
	u, err := url.Parse(base)
	return err == nil && host != "" && u.Hostname() == host
}
