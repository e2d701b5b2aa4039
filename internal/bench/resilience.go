package bench

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/serve"
	"github.com/spillway/spillway/sim"
)

// Client names, in the order they are reported.
const (
	Naive           = "naive"
	Field           = "field"
	SpillwayGateway = "spillway-gateway"
	SpillwayQueue   = "spillway-queue"
)

// ClientNames are every client of the resilience bench.
var ClientNames = []string{Naive, Field, SpillwayGateway, SpillwayQueue}

// ResilienceOptions configure Resilience.
type ResilienceOptions struct {
	Tasks    int
	Scenario *sim.Scenario // peak when nil
	Seed     int64
	// Clock is the simulator's clock, "real" or "fast:X". Every client's
	// waits (backoff, pacing gaps, ladders, budgets) are divided by X too,
	// so that each behaves in simulated time as it would in real time.
	Clock       string
	Concurrency int           // tasks each client works at once (3)
	Timeout     time.Duration // per client, real time; unfinished tasks count as not completed
	Clients     []string      // a subset of ClientNames; all when empty
	Chain       string        // the configured chain the tasks use (codex)
	DataDir     string        // where the queue keeps its database (a temporary directory)
	// EventsDir, when set, receives each spillway client's event log
	// (spillway-gateway.jsonl, spillway-queue.jsonl): every attempt, for
	// `spillway report --events` or a look at where the attempts went.
	EventsDir string
	// Cooldown and MaxCooldown, when set, replace spillway's probe
	// schedule (breaker.cooldown, breaker.max_cooldown), in simulated time.
	Cooldown, MaxCooldown time.Duration
	Progress              func(format string, a ...any)
}

// ClientResult is one client's line of the report. Pointers are null when
// no task completed (a rate of nothing is not a number).
type ClientResult struct {
	Name            string         `json:"name"`
	Tasks           int            `json:"tasks"`
	Completed       int            `json:"completed"`
	CompletionRate  float64        `json:"completion_rate"`
	Attempts        int            `json:"attempts"`
	AttemptsPerTask *float64       `json:"attempts_per_task"`
	Rejected        int            `json:"rejected"`
	RejectedShare   float64        `json:"rejected_share"`
	MakespanS       float64        `json:"makespan_s"`
	LowerBoundS     float64        `json:"lower_bound_s"`
	MakespanRatio   *float64       `json:"makespan_ratio"`
	P50S            *float64       `json:"p50_s"`
	P95S            *float64       `json:"p95_s"`
	BelowTier       float64        `json:"below_tier"`
	BelowTierTasks  int            `json:"below_tier_tasks"`
	ServedBy        map[string]int `json:"served_by"`
	// Models are the simulator's counts per model.
	Models map[string]ModelUse `json:"models"`
	// Failures counts why tasks were not done (the last failure of each).
	Failures map[string]int `json:"failures,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// ModelUse is what one client asked of one model.
type ModelUse struct {
	Attempts int `json:"attempts"`
	Rejected int `json:"rejected"`
}

// ResilienceReport is the whole run.
type ResilienceReport struct {
	Scenario    string         `json:"scenario"`
	Clock       string         `json:"clock"`
	SimStart    time.Time      `json:"sim_start"`
	Tasks       int            `json:"tasks"`
	MinTiers    map[string]int `json:"min_tiers"`
	Seed        int64          `json:"seed"`
	Concurrency int            `json:"concurrency"`
	// Cooldown and MaxCooldown are spillway's probe schedule, simulated time.
	Cooldown    string         `json:"cooldown"`
	MaxCooldown string         `json:"max_cooldown"`
	Clients     []ClientResult `json:"clients"`
}

// outcome is what became of one task.
type outcome struct {
	done  bool
	model string
	why   string        // the last failure of a task not done
	at    time.Duration // since the batch started
}

// world is one client's own simulator and what the client needs to know.
type world struct {
	sim     *sim.Server
	simURL  string // http://127.0.0.1:PORT
	cfg     *config.Config
	factor  float64
	chain   []string
	conc    int
	dataDir string
	events  string // EventsDir
	t0      time.Time
	http    *http.Client
}

// real turns a simulated wait into the real time a client waits.
func (w *world) real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / w.factor)
}

type runner func(ctx context.Context, w *world, tasks []Task) ([]outcome, error)

// Resilience runs the same batch through every client, each against its
// own simulator (same scenario, seed and simulated start, so the same
// world), all at once, and reports how each fared.
func Resilience(ctx context.Context, o ResilienceOptions) (*ResilienceReport, error) {
	if o.Tasks < 1 {
		return nil, fmt.Errorf("bench: --tasks must be at least 1")
	}
	o.defaults()
	names := o.Clients
	if len(names) == 0 {
		names = ClientNames
	}
	runners := map[string]runner{Naive: runNaive, Field: runField, SpillwayGateway: runGateway, SpillwayQueue: runQueue}
	for _, n := range names {
		if runners[n] == nil {
			return nil, fmt.Errorf("bench: no client %q (allowed: %v)", n, ClientNames)
		}
	}
	base := config.Default()
	chain := base.Chains[o.Chain]
	if len(chain) == 0 {
		return nil, fmt.Errorf("bench: no chain %q", o.Chain)
	}
	start := time.Now()
	if o.Scenario.Start != "" {
		if t, err := time.Parse(time.RFC3339, o.Scenario.Start); err == nil {
			start = t
		}
	}
	tasks := Tasks(o.Tasks, o.Seed)
	rep := &ResilienceReport{Scenario: o.Scenario.Name, Clock: o.Clock, SimStart: start, Tasks: o.Tasks, Seed: o.Seed,
		Concurrency: o.Concurrency, MinTiers: map[string]int{}}
	for _, t := range tasks {
		rep.MinTiers[string(t.MinTier)]++
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	worlds, closeWorlds, err := startWorlds(ctx, o, len(names), start, chain)
	if err != nil {
		return nil, err
	}
	defer closeWorlds()

	probe := spillwayConfig("", 1, o.Cooldown, o.MaxCooldown).Breaker
	rep.Cooldown, rep.MaxCooldown = probe.Cooldown.D().String(), probe.MaxCooldown.D().String()
	results := make([]ClientResult, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = worlds[i].runClient(ctx, o, name, runners[name], tasks)
		}()
	}
	wg.Wait()
	rep.Clients = results
	return rep, ctx.Err()
}

// defaults fills in the options left zero.
func (o *ResilienceOptions) defaults() {
	if o.Scenario == nil {
		o.Scenario, _ = sim.Builtin("peak")
	}
	if o.Clock == "" {
		o.Clock = "fast:60"
	}
	if o.Concurrency < 1 {
		o.Concurrency = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Chain == "" {
		o.Chain = "codex"
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
}

// startWorlds starts n simulators alike (same scenario, seed and simulated
// start), a world for each client; the func closes them.
func startWorlds(ctx context.Context, o ResilienceOptions, n int, start time.Time, chain []string) ([]*world, func(), error) {
	worlds := make([]*world, n)
	var sims []*sim.Server
	closeAll := func() {
		for i := len(sims) - 1; i >= 0; i-- {
			sims[i].Close()
		}
	}
	for i := range n {
		clock, err := sim.ParseClock(o.Clock, start)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		srv, err := sim.New(sim.Options{Scenario: o.Scenario, Seed: o.Seed, Clock: clock, TokenRate: -1})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		sims = append(sims, srv)
		addr, err := serve.Background(ctx, srv.Handler(), serve.Options{OnStop: srv.Close})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		w := &world{sim: srv, simURL: "http://" + addr, factor: clock.Factor(), chain: chain, conc: o.Concurrency, dataDir: o.DataDir, events: o.EventsDir,
			http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
		w.cfg = spillwayConfig(w.simURL, w.factor, o.Cooldown, o.MaxCooldown)
		worlds[i] = w
	}
	return worlds, closeAll, nil
}

// runClient runs the tasks through the client named name in w, within
// o.Timeout, and scores it.
func (w *world) runClient(ctx context.Context, o ResilienceOptions, name string, run runner, tasks []Task) ClientResult {
	cctx, ccancel := context.WithTimeout(ctx, o.Timeout)
	defer ccancel()
	w.t0 = time.Now()
	simT0 := w.sim.Clock().Now()
	outs, err := run(cctx, w, tasks)
	makespan := time.Since(w.t0)
	res := score(name, tasks, outs, w, makespan)
	if err != nil {
		res.Error = err.Error()
	}
	// the bound the simulator computes from its free room, from the
	// simulated moment this client started
	ds := make([]sim.Demand, len(tasks))
	for j, t := range tasks {
		ds[j] = sim.Demand{Prompt: t.Prompt, InputTokens: sim.EstimateTokens(t.chatBody(w.chain[0])), Models: eligible(w.cfg, w.chain, t.MinTier)}
	}
	if lb, ok := w.sim.LowerBound(ds, simT0, 24*time.Hour); ok && lb > 0 {
		res.LowerBoundS = lb.Seconds()
		if res.Completed == len(tasks) {
			r := makespan.Seconds() / lb.Seconds()
			res.MakespanRatio = &r
		}
	}
	o.Progress("%s: %d/%d tasks in %s", name, res.Completed, len(tasks), makespan.Round(time.Millisecond))
	return res
}

// spillwayConfig is the default configuration pointed at the simulator,
// with every wait divided by the clock's speed-up.
func spillwayConfig(simURL string, factor float64, cooldown, maxCooldown time.Duration) *config.Config {
	cfg := config.Default()
	if cooldown > 0 {
		cfg.Breaker.Cooldown = config.Duration(cooldown)
		cfg.Breaker.MaxCooldown = max(cfg.Breaker.MaxCooldown, cfg.Breaker.Cooldown)
	}
	if maxCooldown > 0 {
		cfg.Breaker.MaxCooldown = config.Duration(max(maxCooldown, cfg.Breaker.Cooldown.D()))
	}
	for name, suffix := range map[string]string{"openai": "/v1", "anthropic": "", "gemini": ""} {
		p := cfg.Providers[name]
		p.BaseURL = simURL + suffix
		p.APIKey = config.Secret{Ref: "env:SPILLWAY_BENCH_KEY", Value: benchKey}
		cfg.Providers[name] = p
	}
	s := func(d *config.Duration) { *d = config.Duration(float64(*d) / factor) }
	s(&cfg.Pacing.MinGap)
	s(&cfg.Pacing.Jitter)
	s(&cfg.Pacing.Relax)
	for i := range cfg.Retry.Ladder {
		s(&cfg.Retry.Ladder[i])
	}
	s(&cfg.Retry.NetworkGap)
	s(&cfg.Retry.Budget)
	s(&cfg.Retry.BackoffBase)
	s(&cfg.Retry.BackoffMax)
	s(&cfg.Breaker.Window)
	s(&cfg.Breaker.Cooldown)
	s(&cfg.Breaker.MaxCooldown)
	s(&cfg.Queue.GapMin)
	s(&cfg.Queue.GapMax)
	return cfg
}

// benchKey is the API key every client sends the simulator (which takes any).
const benchKey = "sk-bench-not-a-real-key"

// eligible are the chain's models at or above the task's minimum tier.
func eligible(cfg *config.Config, chain []string, min config.Tier) []string {
	var out []string
	for _, m := range chain {
		if cfg.Models[m].Tier.Rank() >= min.Rank() {
			out = append(out, m)
		}
	}
	return out
}

// score turns a client's outcomes and its simulator's counters into its
// report line.
func score(name string, tasks []Task, outs []outcome, w *world, makespan time.Duration) ClientResult {
	r := ClientResult{Name: name, Tasks: len(tasks), MakespanS: makespan.Seconds(), ServedBy: map[string]int{}}
	var lat []float64
	for i, o := range outs {
		if !o.done {
			why := o.why
			if why == "" {
				why = "not started"
			}
			if len(why) > 160 {
				why = why[:160] + "…"
			}
			if r.Failures == nil {
				r.Failures = map[string]int{}
			}
			r.Failures[why]++
			continue
		}
		r.Completed++
		r.ServedBy[o.model]++
		lat = append(lat, o.at.Seconds())
		if o.model != "" && w.cfg.Models[o.model].Tier.Rank() < tasks[i].MinTier.Rank() { // "": an answer of unknown origin is not judged
			r.BelowTierTasks++
		}
	}
	st := w.sim.Snapshot()
	r.Models = map[string]ModelUse{}
	for m, ms := range st.Models {
		u := ModelUse{Attempts: ms.Received}
		for _, n := range ms.Rejected {
			u.Rejected += n
		}
		r.Models[m] = u
		r.Attempts += u.Attempts
		r.Rejected += u.Rejected
	}
	r.CompletionRate = float64(r.Completed) / float64(len(tasks))
	r.BelowTier = float64(r.BelowTierTasks) / float64(len(tasks))
	if r.Attempts > 0 {
		r.RejectedShare = float64(r.Rejected) / float64(r.Attempts)
	}
	if r.Completed > 0 {
		apt := float64(r.Attempts) / float64(r.Completed)
		r.AttemptsPerTask = &apt
		sort.Float64s(lat)
		p50, p95 := quantile(lat, 0.50), quantile(lat, 0.95)
		r.P50S, r.P95S = &p50, &p95
	}
	return r
}

// quantile is the nearest-rank quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs)) + 0.999999)
	return xs[min(max(i-1, 0), len(xs)-1)]
}

// each works the tasks concurrency at a time with do and collects the
// outcomes, stamped with the time since the batch started.
func each(ctx context.Context, w *world, tasks []Task, do func(ctx context.Context, t Task) (model, why string, ok bool)) []outcome {
	outs := make([]outcome, len(tasks))
	next := make(chan int)
	var wg sync.WaitGroup
	for range w.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				model, why, ok := do(ctx, tasks[i])
				if ctx.Err() != nil && !ok {
					why = "not finished when the client's time ran out"
				}
				outs[i] = outcome{done: ok, model: model, why: why, at: time.Since(w.t0)}
			}
		}()
	}
	for i := range tasks {
		next <- i
	}
	close(next)
	wg.Wait()
	return outs
}
