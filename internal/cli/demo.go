package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/format/formats"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/internal/serve"
	"github.com/spillway/spillway/internal/wire"
	"github.com/spillway/spillway/internal/words"
	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/sim"
)

func (a *App) demoCmd() *cobra.Command {
	var (
		n, conc  int
		seed     int64
		scenario string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "See spillway work: a simulated peak hour through the gateway, no key, no network",
		Long: `demo starts a simulated provider (scenario peak: a weekday at 11:00, the heavy
tier mostly full) and the gateway in this process, both on 127.0.0.1, then sends
requests through the gateway the way Codex CLI (Responses API, gpt-6-astra) and
Claude Code (Messages API, claude-opus-5-5) do, a few at a time. It shows each
request's route as it completes and ends with a summary. Nothing leaves this
machine.`,
		Example: `  spillway demo
  spillway demo --requests 60 --concurrency 4 --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 || n > 1000 || conc < 1 || conc > 32 {
				return fail(ExitUsage, "--requests is 1..1000 and --concurrency 1..32")
			}
			return a.runDemo(cmd.Context(), n, conc, seed, scenario)
		},
	}
	cmd.Flags().IntVar(&n, "requests", 36, "how many requests to send")
	cmd.Flags().IntVar(&conc, "concurrency", 3, "how many at a time")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the simulated load")
	cmd.Flags().StringVar(&scenario, "scenario", "peak", "simulator scenario (name or file)")
	return cmd
}

type demoResult struct {
	i       int
	asked   string
	model   string
	route   string
	status  int
	elapsed time.Duration
	err     error
}

func (a *App) runDemo(ctx context.Context, n, conc int, seed int64, scenario string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scn, err := a.loadScenario(scenario)
	if err != nil {
		return err
	}
	w, err := startDemo(ctx, scn, seed)
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	out := a.Stdout
	fmt.Fprintf(out, "spillway demo: simulator (scenario %s, %s) and gateway on 127.0.0.1; %s, %d at a time\n",
		scn.Name, w.start.Format("Mon 15:04"), words.Count(n, "request"), conc)
	fmt.Fprintf(out, "  Codex-style requests ask for gpt-6-astra (heavy), Claude-style for claude-opus-5-5, Gemini-style for gemini-3-pro (heavy too)\n\n")
	flight := &demoFlight{sent: map[int]time.Time{}}
	all := a.demoCollect(flight.send(ctx, w.gateway, n, conc), flight, w.cfg.Retry.Budget.D())
	if ctx.Err() != nil {
		return fail(ExitFail, "interrupted")
	}
	answered := demoSummary(out, all, n, w.sim.Snapshot())
	if answered != n {
		return fail(ExitFail, "%s not answered", words.Count(n-answered, "request")+words.Plural(n-answered, " was", " were"))
	}
	return nil
}

// demoFlight is the demo's requests in flight.
type demoFlight struct {
	mu   sync.Mutex
	sent map[int]time.Time // request → when it was sent
}

// send has conc workers send requests 1 to n to the gateway at addr; the
// channel closes once every request has its result (or ctx ended).
func (f *demoFlight) send(ctx context.Context, addr string, n, conc int) <-chan demoResult {
	results := make(chan demoResult)
	jobs := make(chan int)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 2 * time.Minute}
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				f.mu.Lock()
				f.sent[i] = time.Now()
				f.mu.Unlock()
				r := demoRequest(ctx, client, addr, i)
				f.mu.Lock()
				delete(f.sent, i)
				f.mu.Unlock()
				results <- r
			}
		}()
	}
	go func() {
		for i := 1; i <= n; i++ {
			select {
			case jobs <- i:
			case <-ctx.Done():
			}
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	return results
}

// oldest is when the oldest request in flight was sent, and how many are.
func (f *demoFlight) oldest() (time.Time, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var oldest time.Time
	for _, t := range f.sent {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	return oldest, len(f.sent)
}

// demoCollect writes a line for each result until results closes, and
// returns them all. A silence of more than a few seconds says what the
// requests wait for and until when (budget: the gateway's retry.budget).
func (a *App) demoCollect(results <-chan demoResult, flight *demoFlight, budget time.Duration) []demoResult {
	var all []demoResult
	quiet := time.NewTimer(5 * time.Second)
	defer quiet.Stop()
	for {
		var r demoResult
		var ok bool
		select {
		case r, ok = <-results:
		case <-quiet.C:
			if oldest, n := flight.oldest(); n > 0 {
				fmt.Fprintf(a.Stderr, "  … %d request(s) in flight: the gateway waits for room (the oldest at most until %s, its retry.budget of %s)\n",
					n, oldest.Add(budget).Format("15:04:05"), budget)
			}
			continue
		}
		if !ok {
			return all
		}
		quiet.Reset(5 * time.Second)
		all = append(all, r)
		what := "ok"
		switch {
		case r.err != nil:
			what = "error: " + r.err.Error()
		case r.status != 200:
			what = fmt.Sprintf("failed (HTTP %d)", r.status)
		case r.model != r.asked:
			what = "fell back"
		}
		fmt.Fprintf(a.Stdout, "  #%02d %-16s → %-18s %-10s %6dms  %s\n", r.i, r.asked, r.model, what, r.elapsed.Milliseconds(), r.route)
	}
}

// demoSummary writes the summary of the n requests' results and the
// simulator's state st, and returns how many were answered.
func demoSummary(out io.Writer, all []demoResult, n int, st sim.Stats) int {
	answered, fellBack, firstFull := 0, 0, 0
	byModel := map[string]int{}
	var lat []time.Duration
	for _, r := range all {
		if r.err == nil && r.status == 200 {
			answered++
			byModel[r.model]++
			lat = append(lat, r.elapsed)
		}
		if r.model != r.asked && r.status == 200 {
			fellBack++
		}
		for _, full := range []string{":capacity", ":breaker_open", ":crowded", ":no_slot"} {
			if strings.HasPrefix(r.route, r.asked+full) {
				firstFull++
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	models := make([]string, 0, len(byModel))
	for m, c := range byModel {
		models = append(models, fmt.Sprintf("%s %d", m, c))
	}
	sort.Strings(models)
	fmt.Fprintf(out, "\nsummary: %d/%d answered; %d fell back to a lighter model; answered by: %s\n", answered, n, fellBack, strings.Join(models, ", "))
	if len(lat) > 0 {
		fmt.Fprintf(out, "  latency p50 %dms, p95 %dms (including fallbacks and waits)\n", lat[len(lat)/2].Milliseconds(), lat[len(lat)*95/100].Milliseconds())
	}
	fmt.Fprintf(out, "  %d of %s found their first-choice model full (at capacity, its breaker open or its reduced room taken); without spillway they would have stopped at \"model at capacity\"\n", firstFull, words.Count(n, "request"))
	var rej []string
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "gemini-3-pro", "gemini-3-flash", "gemini-3-flash-lite"} {
		if ms := st.Models[m]; ms != nil {
			rej = append(rej, fmt.Sprintf("%s %d/%d", m, ms.Rejected["capacity"], ms.Received))
		}
	}
	fmt.Fprintf(out, "  simulator capacity rejections (rejected/received): %s\n", strings.Join(rej, ", "))
	return answered
}

// demoWorld is the demo's simulator and gateway, on 127.0.0.1 until the
// context of startDemo ends.
type demoWorld struct {
	sim     *sim.Server
	gateway string // its address
	cfg     *config.Config
	start   time.Time // the simulator's
}

// startDemo starts the demo's simulator (scn, seed) and the gateway in
// front of it. What the simulator decides depends on the seed and the order
// of the requests alone: simulated time moves 5 s with each request it
// takes (the load moves over a run: 36 requests, three simulated minutes),
// not with the wall clock. The gateway's jitter is drawn from the seed, and
// an open breaker holds through a run (a probe after 5 s would come sooner
// or later as the machine is fast or slow). So a run one request at a time
// meets the same world, and takes the same routes, every time.
func startDemo(ctx context.Context, scn *sim.Scenario, seed int64) (*demoWorld, error) {
	start := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	if scn.Start != "" {
		start, _ = time.Parse(time.RFC3339, scn.Start)
	}
	simSrv, err := sim.New(sim.Options{Scenario: scn, Seed: seed, Clock: &sim.StepClock{Start: start, Step: 5 * time.Second}, TokenRate: -1})
	if err != nil {
		return nil, err
	}
	simAddr, err := serve.Background(ctx, simSrv.Handler(), serve.Options{})
	if err != nil {
		return nil, err
	}
	cfg := config.Default()
	for name, typ := range map[string]string{"openai": "/v1", "anthropic": "", "gemini": ""} {
		p := cfg.Providers[name]
		p.BaseURL = "http://" + simAddr + typ
		cfg.Providers[name] = p
	}
	// A demo should take seconds: a lighter pace than the default.
	cfg.Pacing = config.Pacing{MinGap: config.Duration(50 * time.Millisecond), Jitter: config.Duration(100 * time.Millisecond), MaxConcurrency: 3}
	cfg.Breaker.Cooldown, cfg.Breaker.MaxCooldown = config.Duration(time.Minute), config.Duration(time.Minute)
	rnd := rand.New(rand.NewPCG(uint64(seed), 0xdeb0))
	gw, err := gateway.New(gateway.Options{Config: cfg, Engine: policy.New(cfg, policy.WithRand(rnd.Float64))})
	if err != nil {
		return nil, err
	}
	gwAddr, err := serve.Background(ctx, gw.Handler(), serve.Options{})
	if err != nil {
		return nil, err
	}
	return &demoWorld{sim: simSrv, gateway: gwAddr, cfg: cfg, start: start}, nil
}

func demoRequest(ctx context.Context, client *http.Client, addr string, i int) demoResult {
	r := demoResult{i: i}
	// the way Codex (Responses API), Claude Code (Messages API) and Gemini
	// CLI (generateContent; whole, so that its route header is final: a
	// Gemini stream has no last word) ask
	ep, key, query := wire.EndpointOf(wire.Responses), "sk-demo-not-a-real-key", ""
	r.asked = "gpt-6-astra"
	stream := true
	switch i % 3 {
	case 2:
		ep, key, query = wire.EndpointOf(wire.Messages), "sk-ant-demo-not-a-real-key", "?beta=true"
		r.asked = "claude-opus-5-5"
	case 0:
		ep, key, stream = wire.GeminiEndpoints[0], "AIza-demo-not-a-real-key", false
		r.asked = "gemini-3-pro"
	}
	prompt := wire.Prompt{User: fmt.Sprintf("demo request %d: refactor the parser", i), Stream: stream, MaxTokens: 256}
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+strings.ReplaceAll(ep.Path, "{model}", r.asked)+query, bytes.NewReader(formats.WireOf(ep).Prompt(prompt, r.asked)))
	req.Header = formats.Header(formats.Envelope(ep.Format), key)
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.elapsed = time.Since(t0)
	r.err = err
	r.status = resp.StatusCode
	r.model = resp.Header.Get("X-Spillway-Model")
	r.route = resp.Header.Get("X-Spillway-Route")
	// a stream's headers went out with its first output: its last word
	// says how it really ended
	if final := send.FinalRoute(body); final != "" {
		r.route = final
	}
	return r
}
