package gateway

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// planLimits keeps the plan rate-limit headers the upstreams sent last, by
// host: a ChatGPT plan's x-codex-* (its usage windows' percentages and
// resets), a Claude plan's anthropic-ratelimit-unified-*. What a plan's
// windows stand at, with no credential: /spillway/status shows it and
// spillway doctor reads it.
type planLimits struct {
	mu  sync.Mutex
	by  map[string]PlanLimit
	now func() time.Time
}

// PlanLimit is what one host said of its plan's limits, when last seen.
type PlanLimit struct {
	Host    string            `json:"host"`
	Seen    time.Time         `json:"seen"`
	Headers map[string]string `json:"headers"`
}

// planHeader reports a header that tells a plan's usage.
func planHeader(lower string) bool {
	return strings.HasPrefix(lower, "x-codex-") || strings.HasPrefix(lower, "anthropic-ratelimit-unified-")
}

// observe keeps h's plan headers for host (at most 32, of 64 bytes each; at
// most 16 hosts, the oldest dropped).
func (p *planLimits) observe(host string, h http.Header) {
	var got map[string]string
	for k, vs := range h {
		lk := strings.ToLower(k)
		if len(vs) == 0 || !planHeader(lk) || len(got) >= 32 {
			continue
		}
		if got == nil {
			got = map[string]string{}
		}
		got[lk] = vs[0][:min(len(vs[0]), 64)]
	}
	if got == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string]PlanLimit{}
	}
	if _, ok := p.by[host]; !ok && len(p.by) >= 16 {
		oldest := ""
		for k, v := range p.by {
			if oldest == "" || v.Seen.Before(p.by[oldest].Seen) {
				oldest = k
			}
		}
		delete(p.by, oldest)
	}
	p.by[host] = PlanLimit{Host: host, Seen: p.now().UTC(), Headers: got}
}

// list is every host's, by host.
func (p *planLimits) list() []PlanLimit {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PlanLimit, 0, len(p.by))
	for _, v := range p.by {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b PlanLimit) int { return strings.Compare(a.Host, b.Host) })
	return out
}
