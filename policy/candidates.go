package policy

import (
	"slices"
	"sync"

	"github.com/spillway/spillway/config"
)

// Candidate is one place a request may be sent to: a model and, once models
// may have several, one of its deployments.
type Candidate struct {
	Model    string        // the name clients use
	Upstream string        // the name sent upstream
	Provider string        // provider name in the configuration
	Format   config.Format // the provider's wire format
	Tier     config.Tier   // "" for a model the configuration does not know
	Context  int           // 0 when unknown
	// Deployment names one of the model's deployments; empty while a model
	// has exactly one (its provider's). Weight shares healthy traffic
	// between a model's deployments.
	Deployment string
	Weight     int
	// KeyID identifies the credentials the candidate is sent with when its
	// provider sends a key of its own (auth: key): a hash, never the key.
	// Empty when the caller's credentials go through. Rate limits are per
	// key: deployments of a model that share one share its pace.
	KeyID string
	// Cloud names the cloud whose envelope and error shapes the
	// candidate's answers come in (classify.Bedrock, Vertex, Azure: the
	// provider's), "" for a vendor's own API.
	Cloud string
}

// Name is the candidate's name in routes and messages: the model, and its
// deployment when it has several ("gpt-6-astra@eu").
func (c Candidate) Name() string {
	if c.Deployment != "" {
		return c.Model + "@" + c.Deployment
	}
	return c.Model
}

// Key identifies the candidate's breaker, pacing lane and adaptive limit.
func (c Candidate) Key() string {
	if c.Deployment != "" {
		return c.Provider + "/" + c.Upstream + "@" + c.Deployment
	}
	return c.Provider + "/" + c.Upstream
}

// Candidates resolves the chain a request walks: the requested model, then
// the rest of its chain at or above the minimum tier. A sign-in's (a Claude
// login's) go only to the provider its credentials came for, or to one
// that sends spillway's own key in their place.
func (e *Engine) Candidates(r Request) []Candidate {
	out := e.candidates(r)
	if !r.SignIn || r.Via != "" || len(out) == 0 {
		return out
	}
	home := out[0].Provider
	return slices.DeleteFunc(out, func(c Candidate) bool { return c.Provider != home && c.KeyID == "" })
}

func (e *Engine) candidates(r Request) []Candidate {
	_, chain := e.cfg.ChainFor(r.Model)
	if len(r.Models) > 0 {
		chain = r.Models
	}
	if len(chain) == 0 {
		provider := string(r.Type)
		if r.Via != "" {
			provider = r.Via
		}
		return []Candidate{{Model: r.Model, Upstream: r.Model, Provider: provider, Format: r.Type}}
	}
	var out []Candidate
	for i, name := range chain {
		m, known := e.cfg.Models[name]
		if i > 0 {
			if r.NoFallback {
				break
			}
			if r.MinTier != "" && m.Tier.Rank() < r.MinTier.Rank() {
				continue
			}
		}
		if r.Via != "" { // a sign-in's namespace: the model's name, on that provider
			out = append(out, Candidate{Model: name, Upstream: name, Provider: r.Via, Format: r.Type, Tier: m.Tier, Context: m.Context, Weight: 1})
			continue
		}
		if !known {
			out = append(out, Candidate{Model: name, Upstream: name, Provider: string(r.Type), Format: r.Type, Weight: 1})
			continue
		}
		// every deployment of the model, in a row: a full one spills to
		// the next before the chain steps down a tier
		deps := e.cfg.Deployments(name)
		if r.ModelsOnly {
			deps = []config.Deployment{{Provider: deps[0].Provider, Upstream: deps[0].Upstream, Weight: 1}}
		}
		for _, d := range deps {
			f := e.cfg.DeploymentType(d)
			out = append(out, Candidate{Model: name, Upstream: d.Upstream, Provider: d.Provider, Format: f,
				Tier: m.Tier, Context: m.Context, Deployment: d.Name, Weight: d.Weight, KeyID: e.idFor(d.Provider, f, r), Cloud: e.cloudOf(d.Provider)})
		}
	}
	return out
}

// overflowCandidates are the candidates of the chain r's chain overflows
// into (config.ChainRules), for one walk after r's own chain found no room:
// from its first model at or below the requested tier, none below the
// minimum tier. A candidate goes there only with credentials it may: with
// spillway's own key (auth: key, which replaces the caller's), or on the
// provider the caller's own credentials are for (from); for a usage limit
// (forLimit) only with a key of spillway's own, since the caller's account
// is what is used up (a Claude login's too: the login never goes there);
// a sign-in route's (Via) plan has no other host, and does not overflow for
// a usage limit.
func (e *Engine) overflowCandidates(r Request, from Candidate, forLimit bool) []Candidate {
	rules := e.chainRules(r)
	if rules.Overflow == "" || r.NoFallback || len(r.Models) > 0 || forLimit && !e.limitOverflows(r) {
		return nil
	}
	asked := e.cfg.Models[r.Model].Tier.Rank()
	var out []Candidate
	for _, mn := range e.cfg.Chains[rules.Overflow] {
		m, ok := e.cfg.Models[mn]
		if !ok || asked > 0 && m.Tier.Rank() > asked || r.MinTier != "" && m.Tier.Rank() < r.MinTier.Rank() {
			continue
		}
		if r.Via != "" { // the sign-in's own backend, its namespace
			out = append(out, Candidate{Model: mn, Upstream: mn, Provider: r.Via, Format: r.Type, Tier: m.Tier, Context: m.Context, Weight: 1})
			continue
		}
		for _, d := range e.cfg.Deployments(mn) {
			// another vendor's step is sent with its provider's own key
			// whatever its auth (Call.Cross passes over one without)
			f := e.cfg.DeploymentType(d)
			// (for a usage limit only with a key it has: a step passed over
			// for none would end the request before its wait for the reset)
			cross := f != r.Type && r.Type != "" && (!forLimit || e.cfg.Providers[d.Provider].OwnCredentials())
			own := e.cfg.Providers[d.Provider].Auth == config.AuthKey || cross
			if forLimit && !own || !forLimit && !own && (d.Provider != from.Provider || r.SignIn && from.KeyID != "") {
				continue
			}
			out = append(out, Candidate{Model: mn, Upstream: d.Upstream, Provider: d.Provider, Format: f,
				Tier: m.Tier, Context: m.Context, Deployment: d.Name, Weight: d.Weight, KeyID: e.idFor(d.Provider, f, r), Cloud: e.cloudOf(d.Provider)})
		}
	}
	return out
}

// optedIn reports whether cand, a model of another format than r's, is a
// step r's configuration opts into: a model of its overflow chain, or a
// member of a chain that holds a model of r's own format (a chain of
// another vendor's models alone is not one a client of this format walks:
// a request naming one of them is not translated).
func (e *Engine) optedIn(r Request, cand Candidate) bool {
	name, walk := e.cfg.ChainFor(r.Model)
	whole := e.cfg.Chains[name] // the whole chain, not only the walk from r's model
	if len(r.Models) > 0 {
		walk, whole = r.Models, r.Models
	}
	if !slices.Contains(walk, cand.Model) {
		return true // the overflow chain's
	}
	for _, m := range whole {
		if e.cfg.ModelType(m) == r.Type {
			return true
		}
	}
	return false
}

// chainRules are the overflow settings of the chain r walks.
func (e *Engine) chainRules(r Request) config.ChainRules {
	name, _ := e.cfg.ChainFor(r.Model)
	return e.cfg.ChainRules[name]
}

// limitOverflows reports whether a usage limit of r goes on to its chain's
// overflow (on_usage_limit: overflow), which a sign-in route's plan, having
// no other host, never does.
func (e *Engine) limitOverflows(r Request) bool {
	return e.chainRules(r).OnUsageLimit == config.UsageLimitOverflow && r.Via == ""
}

// sameCredential reports candidates sent with the same credentials: a
// usage limit of one is the other's too.
func sameCredential(a, b Candidate) bool { return a.Provider == b.Provider && a.KeyID == b.KeyID }

// limitKey is what a rate limit binds: a model at one set of credentials
// (the candidate's own key, or the caller's: the same for every
// candidate of this request).
func limitKey(c Candidate) string { return c.Model + "\x00" + c.KeyID }

// balancer shares healthy traffic between a model's deployments: by fewest
// in flight for its weight, then by smooth weighted round robin (as nginx
// balances upstreams), so that sequential requests split exactly by weight.
type balancer struct {
	mu      sync.Mutex
	current map[string]int // by candidate key: the round robin's running weight
}

// pick chooses among the candidates at indexes healthy of chain and returns
// the chosen one's position in healthy. Only the deployments tied at the
// lowest load take part in the round robin: one that is busier gains no
// credit meanwhile, so it does not come back to take a run of requests in a
// row once its load falls.
func (b *balancer) pick(chain []Candidate, healthy []int, inflight func(key string) int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.current == nil {
		b.current = map[string]int{}
	}
	load := make([]float64, len(healthy))
	lowest := 0.0
	for j, h := range healthy {
		c := chain[h]
		load[j] = float64(inflight(c.Key())) / float64(max(c.Weight, 1))
		if j == 0 || load[j] < lowest {
			lowest = load[j]
		}
	}
	total, best := 0, -1
	for j, h := range healthy {
		if load[j] != lowest {
			continue
		}
		c := chain[h]
		w := max(c.Weight, 1)
		total += w
		b.current[c.Key()] += w
		if best < 0 || b.current[c.Key()] > b.current[chain[healthy[best]].Key()] {
			best = j
		}
	}
	b.current[chain[healthy[best]].Key()] -= total
	return best
}
