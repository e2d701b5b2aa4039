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
	Breaker string `json:"breaker"`
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
	Breaker   string        `json:"breaker"`
	NextProbe time.Duration `json:"-"`
}

// Health lists every configured model's breaker, by name.
func (e *Engine) Health() []ModelHealth {
	states := e.breakers.States()
	out := make([]ModelHealth, 0, len(e.cfg.Models))
	for name, m := range e.cfg.Models {
		mh := ModelHealth{Name: name, Provider: m.Provider, Tier: string(m.Tier), Context: m.Context, Breaker: "open"}
		for i, d := range e.cfg.Deployments(name) {
			key := Candidate{Provider: d.Provider, Upstream: d.Upstream, Deployment: d.Name}.Key()
			dh := DeploymentHealth{Name: d.Name, Provider: d.Provider, Upstream: d.Upstream, Weight: d.Weight, Breaker: states[key]}
			if dh.Breaker == "" {
				dh.Breaker = "closed"
			}
			if dh.Breaker != "closed" {
				dh.NextProbe = e.breakers.Wait(key)
			}
			if dh.Breaker == "closed" || dh.Breaker == "half-open" && mh.Breaker == "open" {
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
