package dash

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/report"
	"github.com/spillway/spillway/policy"
)

// State is everything the page shows; a page gets it first, and every
// two seconds after.
type State struct {
	Now           time.Time  `json:"now"`
	Requests      int64      `json:"requests"`
	Inflight      int64      `json:"inflight"`
	Fallbacks     int64      `json:"fallbacks"`
	WindowMin     int        `json:"window_min"`
	Chains        []Chain    `json:"chains"`
	ProvidersDown []string   `json:"providers_down"`
	Flow          []any      `json:"flow"` // Attempt and Switch, by "kind"
	Failures      []Failure  `json:"failures"`
	Queue         *QueueView `json:"queue"`
	// Heat is the heatmap; in the stream's later states only when the
	// page does not have this one yet (it keeps the one it has)
	Heat    *Heat `json:"heat,omitempty"`
	heatVer int
}

// Chain is a chain's models in order (heavy first); models in no chain
// are listed under "other models".
type Chain struct {
	Name   string  `json:"name"`
	Models []Model `json:"models"`
}

// Model is one model's health.
type Model struct {
	Name        string              `json:"name"`
	Tier        string              `json:"tier"`
	Provider    string              `json:"provider"`
	Breaker     policy.BreakerState `json:"breaker"`
	NextProbeS  float64             `json:"next_probe_s"`
	Status      string              `json:"status"`
	Rolling     Rolling             `json:"rolling"`
	Deployments []Deployment        `json:"deployments,omitempty"`
}

// Deployment is one named deployment's health.
type Deployment struct {
	Name       string              `json:"name"`
	Provider   string              `json:"provider"`
	Breaker    policy.BreakerState `json:"breaker"`
	NextProbeS float64             `json:"next_probe_s"`
	Status     string              `json:"status"`
	Rolling    Rolling             `json:"rolling"`
}

// Heat is the report's heatmap and per-model table.
type Heat struct {
	From     time.Time           `json:"from"`
	Since    string              `json:"since"` // From's day in TZ, as 2026-12-06 (never the browser's locale)
	TZ       string              `json:"tz"`
	Metric   string              `json:"metric"`
	Cells    [7][24]report.Cell  `json:"cells"`
	Fills    [7][24]string       `json:"fills"` // the report's colours; "" with no attempts
	Weekdays []string            `json:"weekdays"`
	Quiet    *report.Window      `json:"quiet"`
	Peak     *report.Window      `json:"peak"`
	Models   []report.ModelStats `json:"models"`
	Reading  bool                `json:"reading"` // the event log is still being read
}

// State is the board now. The queue is asked within ctx.
func (b *Board) State(ctx context.Context) State {
	eng := b.o.Engine()
	cfg := eng.Config()
	now := b.clock.Now()
	health := eng.Health()
	downs := nonNil(eng.ProvidersDown())
	down := map[string]bool{}
	for _, p := range downs {
		down[p] = true
	}
	total, inflight := b.o.Counts()
	st := State{Now: now.UTC(), Requests: total, Inflight: inflight, WindowMin: int(window / time.Minute), ProvidersDown: downs}
	var q *QueueView
	if b.o.Queue != nil {
		v, err := b.o.Queue.Snapshot(ctx)
		switch {
		case errors.Is(err, ErrNoQueue):
		case err != nil:
			q = &QueueView{Counts: map[string]int{}, Running: []QueueTask{}, Error: redact.String(err.Error())}
		default:
			q = &v
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	models := map[string]Model{}
	for _, h := range health {
		m := Model{Name: h.Name, Tier: h.Tier, Provider: h.Provider, Breaker: h.Breaker, NextProbeS: h.NextProbe.Seconds(),
			Rolling: b.stats[h.Name].rolling(now)}
		m.Status = status(h.Breaker, down[h.Provider], m.Rolling)
		for _, d := range h.Deployments {
			if d.Name == "" {
				continue
			}
			r := b.stats[h.Name+"@"+d.Name].rolling(now)
			m.Deployments = append(m.Deployments, Deployment{Name: d.Name, Provider: d.Provider, Breaker: d.Breaker,
				NextProbeS: d.NextProbe.Seconds(), Status: status(d.Breaker, down[d.Provider], r), Rolling: r})
		}
		models[h.Name] = m
	}
	listed := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Chains)) {
		c := Chain{Name: name}
		for _, mn := range cfg.Chains[name] {
			if m, ok := models[mn]; ok {
				c.Models = append(c.Models, m)
				listed[mn] = true
			}
		}
		st.Chains = append(st.Chains, c)
	}
	other := Chain{Name: "other models"}
	for _, h := range health {
		if !listed[h.Name] {
			other.Models = append(other.Models, models[h.Name])
		}
	}
	if len(other.Models) > 0 {
		st.Chains = append(st.Chains, other)
	}
	st.Fallbacks = b.fallbacks
	st.Flow = nonNil(slices.Clone(b.flow))
	st.Failures = nonNil(slices.Clone(b.failures))
	st.Queue = q
	if b.heat == nil { // the first page: the log's week is read now
		b.seedLocked()
	}
	h := b.heatLocked()
	st.Heat, st.heatVer = &h, b.heatVer
	return st
}

// heatLocked is the heatmap, from the last result while no attempt
// changed it.
func (b *Board) heatLocked() Heat {
	if b.heat == nil { // the log is being read for the first time
		return Heat{Weekdays: report.Weekdays[:], Models: []report.ModelStats{}, Reading: true}
	}
	if b.heatRes == nil {
		r := b.heat.Result(nil)
		b.heatRes = &r
	}
	r := b.heatRes
	return Heat{From: b.heatFrom.UTC(), Since: b.heatFrom.In(b.o.Location).Format("2006-01-02"), TZ: r.TZ, Metric: r.Metric, Cells: r.Heatmap, Fills: report.Fills(*r),
		Weekdays: report.Weekdays[:], Quiet: r.Quiet, Peak: r.Peak, Models: nonNil(r.Models), Reading: b.seeding}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
