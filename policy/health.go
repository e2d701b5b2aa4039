package policy

import (
	"sort"
	"time"
)

// ModelHealth is a configured model's breaker as the engine sees it now:
// for status pages (/spillway/status, the gateway's dashboard).
type ModelHealth struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Tier     string `json:"tier"`
	Context  int    `json:"context"`
	// Breaker is the model's: closed while one of its deployments' is,
	// else half-open while one is, else open.
	Breaker BreakerState `json:"breaker"`
	// NextProbe is how long until the model's soonest deployment lets a
	// request (a probe) through; 0 when one is closed.
	NextProbe   time.Duration      `json:"-"`
	Deployments []DeploymentHealth `json:"deployments,omitempty"`
}

// DeploymentHealth is one deployment of a model (models without
// deployments have one, unnamed).
type DeploymentHealth struct {
	Name      string        `json:"name"`
	Provider  string        `json:"provider"`
	Upstream  string        `json:"upstream"`
	Weight    int           `json:"weight"`
	Breaker   BreakerState  `json:"breaker"`
	NextProbe time.Duration `json:"-"`
	// Slowness, for a deployment sent with its provider's own key, is how
	// many times its pace is slowed by rate limits (Engine.Slowness);
	// 0 while it is not.
	Slowness float64 `json:"slowness,omitempty"`
}

// Health lists every configured model's breaker, by name.
func (e *Engine) Health() []ModelHealth {
	states := e.breakers.States()
	out := make([]ModelHealth, 0, len(e.cfg.Models))
	for name, m := range e.cfg.Models {
		mh := ModelHealth{Name: name, Provider: m.Provider, Tier: string(m.Tier), Context: m.Context, Breaker: StateOpen}
		for i, d := range e.cfg.Deployments(name) {
			key := Candidate{Provider: d.Provider, Upstream: d.Upstream, Deployment: d.Name}.Key()
			dh := DeploymentHealth{Name: d.Name, Provider: d.Provider, Upstream: d.Upstream, Weight: d.Weight, Breaker: states[key]}
			if dh.Breaker == "" {
				dh.Breaker = StateClosed
			}
			if keyID := e.keyID(d.Provider); keyID != "" {
				c := Candidate{Model: name, Provider: d.Provider, Upstream: d.Upstream, Deployment: d.Name, KeyID: keyID}
				if slow := e.Slowness(c, ""); slow > 1 {
					dh.Slowness = slow
				}
			}
			if dh.Breaker != StateClosed {
				dh.NextProbe = e.breakers.Wait(key)
			}
			if dh.Breaker == StateClosed || dh.Breaker == StateHalfOpen && mh.Breaker == StateOpen {
				mh.Breaker = dh.Breaker
			}
			if i == 0 || dh.NextProbe < mh.NextProbe {
				mh.NextProbe = dh.NextProbe
			}
			mh.Deployments = append(mh.Deployments, dh)
		}
		out = append(out, mh)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
