package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spillway/spillway/internal/bench"
	"github.com/spillway/spillway/sim"
)

func (a *App) benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure spillway: resilience under capacity pressure, and the gateway's overhead",
		Long: `bench runs reproducible measurements against the built-in simulator, all on
127.0.0.1 in this process. Nothing leaves the machine. Numbers are for comparing
runs on the same machine; BENCHMARKS.md records ours.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.benchResilienceCmd(), a.benchOverheadCmd(), a.benchSoakCmd(), a.benchPartCmd())
	return cmd
}

func (a *App) benchSoakCmd() *cobra.Command {
	var (
		o      bench.SoakOptions
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run the gateway for a long while under mixed faults, and check it stays well",
		Long: `soak runs the gateway as its own process (this executable's serve, with the
shipped configuration pointed at an in-process simulator and watchdogs of 2 s so a
stall costs seconds) and sends it a steady open-loop mix: Chat streams and whole
answers, Responses streams, Messages requests with a tool the simulator calls (the
tool's result is sent back: a scripted tool turn), Gemini streams and whole answers.
Every --fault-every the simulator takes the next fault of a cycle: a capacity wave
(every chain's first model full for a while), rate limits, stalls, cuts (a stream
cut midway, a connection reset), malformed frames, a capacity wave inside the
stream, and the Anthropic provider down and back.

Every --sample the load pauses until the gateway has no request open and has given
its memory back (it runs with --give-back-after 1s, or a tenth of --sample), and
its live heap, RSS, goroutines and open files are read from its /metrics. At the end it counts the
requests answered, given up with a clean error (the format's error shape) and
neither, and compares the event log with the simulator's own count of requests
received per model. It fails (exit 1) when a request got neither an answer nor a
clean error, a record is missing or doubled, the dropped-records counter is not 0,
or the live heap, goroutines or open files grew more than 10% over the last two
thirds of the run (RSS, which keeps its high-water mark, is shown, not judged).`,
		Example: `  spillway bench soak --duration 2m
  spillway bench soak --duration 30m --rps 20 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Duration < time.Second {
				return fail(ExitUsage, "--duration %s: at least 1s (30m for the record)", o.Duration)
			}
			if o.RPS <= 0 || o.RPS > 2000 {
				return fail(ExitUsage, "--rps %g: from above 0 to 2000", o.RPS)
			}
			if o.Dir != "" {
				if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
					return fail(ExitUsage, "--dir %s: not a directory; create it first, or leave --dir out for a temporary one", o.Dir)
				}
			}
			if !asJSON {
				o.Progress = func(format string, args ...any) { fmt.Fprintf(a.Stderr, "  "+format+"\n", args...) }
			}
			rep, err := bench.Soak(cmd.Context(), o)
			if err != nil {
				return fail(ExitFail, "%w", err)
			}
			if err := a.printReport(rep, asJSON); err != nil {
				return err
			}
			if !rep.Pass {
				return fail(ExitFail, "bench soak: %d check(s) failed", len(rep.Failures))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", 2*time.Minute, "how long the load runs")
	f.Float64Var(&o.RPS, "rps", 20, "requests started per second (open loop)")
	f.DurationVar(&o.Sample, "sample", 0, "how often the gateway is sampled (default a minute, or a twelfth of the run when shorter)")
	f.StringVar(&o.Dir, "dir", "", "keep the gateway's configuration and event log in this directory (default: a temporary one, removed)")
	f.DurationVar(&o.FaultEvery, "fault-every", 0, "how often the next fault is injected (default 10s, or a twelfth of the run when shorter)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// benchResilienceOptions are bench resilience's flags; o gathers those
// bench.Resilience reads as they are.
type benchResilienceOptions struct {
	o        bench.ResilienceOptions
	scenario string
	clients  string
	asJSON   bool
}

func (bo *benchResilienceOptions) flags(f *pflag.FlagSet) {
	o := &bo.o
	f.IntVar(&o.Tasks, "tasks", 60, "tasks in the batch")
	f.StringVar(&bo.scenario, "scenario", "peak", "simulator scenario (name or YAML file)")
	f.StringVar(&o.Clock, "clock", "fast:60", "simulator clock: real or fast:X (X simulated seconds per real second)")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the batch and of the simulated load")
	f.IntVar(&o.Concurrency, "concurrency", 3, "tasks each client works at once")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "longest a client may take (real time); unfinished tasks count as not completed")
	f.StringVar(&bo.clients, "clients", "", "comma-separated subset of: "+strings.Join(bench.ClientNames, ","))
	f.DurationVar(&o.Cooldown, "cooldown", 0, "spillway's breaker.cooldown, simulated time (default: the shipped one)")
	f.DurationVar(&o.MaxCooldown, "max-cooldown", 0, "spillway's breaker.max_cooldown, simulated time (default: the shipped one)")
	f.StringVar(&o.EventsDir, "events", "", "write each spillway client's event log (every attempt) to DIR/spillway-gateway.jsonl and DIR/spillway-queue.jsonl")
	f.BoolVar(&bo.asJSON, "json", false, "print the report as JSON")
}

func (a *App) benchResilienceCmd() *cobra.Command {
	var bo benchResilienceOptions
	cmd := &cobra.Command{
		Use:   "resilience",
		Short: "The same batch through a naive script, the field recipe and spillway, side by side",
		Long: `resilience gives one batch of tasks (a fifth need the heavy tier, three tenths at
least medium, the rest light, some of those with a large context) to four clients,
each against its own simulator showing the same world (same scenario, seed and
simulated start), all at once:

  naive             the model asked for; on any error, again at once, up to 8 tries
  field             the common recipe: models in priority order, the next on 503/529,
                    sleep 2^attempt + rand seconds, 6 tries, 0.5-2 s between starts
  spillway-gateway  each task once through the gateway, with X-Spillway-Min-Tier and
                    X-Spillway-Budget: 3h (a batch that would rather wait than fail)
  spillway-queue    the batch added to a spillway queue (SQLite) and worked

Per client: completion rate, upstream attempts per completed task, the share of
attempts the simulator rejected (load put on full pools), makespan against the
lower bound the simulator computes from its free room, p50/p95 of the time from
the batch's start to each answer, and tasks served below their minimum tier.
With --clock fast:X every client's waits are divided by X, like the world's.`,
		Example: `  spillway bench resilience
  spillway bench resilience --tasks 100 --scenario peak --clock fast:60 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.benchResilience(cmd.Context(), &bo) },
	}
	bo.flags(cmd.Flags())
	return cmd
}

func (a *App) benchResilience(ctx context.Context, bo *benchResilienceOptions) error {
	o := &bo.o
	if o.Tasks < 1 || o.Tasks > 5000 {
		return fail(ExitUsage, "--tasks is 1..5000")
	}
	if o.Concurrency < 1 || o.Concurrency > 64 {
		return fail(ExitUsage, "--concurrency is 1..64")
	}
	scn, err := a.loadScenario(bo.scenario)
	if err != nil {
		return err
	}
	o.Scenario = scn
	if c, err := sim.ParseClock(o.Clock, time.Time{}); err != nil {
		return fail(ExitUsage, "%w", err)
	} else if _, stepped := c.(*sim.StepClock); stepped {
		return fail(ExitUsage, "--clock %s: the benchmark times the clients in real time: give real or fast:X", o.Clock)
	}
	if bo.clients != "" {
		o.Clients = strings.Split(bo.clients, ",")
	}
	if o.EventsDir != "" {
		if st, err := os.Stat(o.EventsDir); err != nil || !st.IsDir() {
			return fail(ExitUsage, "--events %s: not a directory; create it first", o.EventsDir)
		}
	}
	if !bo.asJSON {
		o.Progress = func(format string, args ...any) { fmt.Fprintf(a.Stderr, "  "+format+"\n", args...) }
	}
	rep, err := bench.Resilience(ctx, *o)
	if err != nil {
		if rep == nil {
			return fail(ExitUsage, "%w", err)
		}
		return fail(ExitFail, "interrupted: %w", err)
	}
	return a.printReport(rep, bo.asJSON)
}

// benchOverheadOptions are bench overhead's flags; o gathers those
// bench.Repeat reads as they are.
type benchOverheadOptions struct {
	o          bench.OverheadOptions
	rps        []int
	asJSON     bool
	cpuprofile string
	reps       int
	goalArgs   []string
}

func (bo *benchOverheadOptions) flags(f *pflag.FlagSet) {
	o := &bo.o
	f.IntSliceVar(&bo.rps, "rps", []int{500, 1000, 2000}, "open-loop rates, req/s")
	f.DurationVar(&o.Duration, "duration", 6*time.Second, "time per path and rate")
	f.DurationVar(&o.Slice, "slice", time.Second, "the paths take turns this long")
	f.BoolVar(&o.Stream, "stream", false, "SSE streaming answers instead of whole JSON ones")
	f.IntVar(&o.Conns, "conns", 32, "connections of the closed-loop throughput run")
	f.DurationVar(&o.ThroughputFor, "throughput-for", 3*time.Second, "time per path of the throughput run (0s: skip it)")
	f.BoolVar(&o.Procs, "procs", false, "run the simulator, the bare proxy and the gateway as separate processes: adds CPU per request and the peak RSS with --open-streams slow streams open")
	f.IntVar(&o.OpenStreams, "open-streams", 1000, "with --procs: slow streams open at once for the peak RSS")
	f.BoolVar(&o.Failover, "failover", false, "also measure failover: a request whose first model answers 529 at once (its breaker held closed), and the same with that breaker open, each added over the answering model's direct time (goals failoverRATE_p50, _p99, skipRATE_p50, in µs)")
	f.BoolVar(&o.Translated, "translated", false, "also measure a translated path: the Chat request answered by another vendor's model (Messages), its added TTFB over the same-format path's (goal translatedRATE)")
	f.BoolVar(&o.Bedrock, "bedrock", false, "with --procs --stream: also measure Bedrock's event stream: a Messages stream through the gateway answered by the simulator's Bedrock (SigV4-signed), its added TTFB over the same request answered by the simulator's Messages SSE, each over its own direct call (goal bedrockRATE)")
	f.StringVar(&o.State, "state", "", "also measure a gateway in a fleet on this Redis (redis://HOST:PORT/DB): its p50/p99 against the local one's")
	f.BoolVar(&o.PacingOff, "pacing-off", false, "turn the gateway's pacing off (by default it runs the shipped pacing: only under pressure)")
	f.StringVar(&bo.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof); with --procs, each proxy's process writes its own, to FILE.bare and FILE.spillway")
	f.IntVar(&bo.reps, "reps", 1, "runs, one after the other, each ratio's median over them (default 5 with --procs, else 1)")
	f.StringArrayVar(&bo.goalArgs, "goal", nil, "NAME<=X or NAME>=X: judge a ratio's median (added500, p99_500, ttfb500, cpu500, rss, throughput); repeatable")
	f.BoolVar(&bo.asJSON, "json", false, "print the report as JSON (with --reps over 1 or a --goal: the runs, the ratios and the goals)")
}

func (a *App) benchOverheadCmd() *cobra.Command {
	var bo benchOverheadOptions
	cmd := &cobra.Command{
		Use:   "overhead",
		Short: "What the gateway adds to a request, against a bare reverse proxy",
		Long: `overhead starts the simulator with zero delay (it answers at once, pools never
full), a bare httputil.ReverseProxy in front of it, and the gateway in front of it
(configured as users run it: logging to a file, metrics on, the shipped pacing,
which engages only under pressure; --pacing-off turns it off), then
sends open-loop load at each fixed rate through all three, in turns of --slice so
that drift hits them alike. Latency counts from when each request was due.

Per path and rate: p50/p99 latency, time to first byte, what the proxy adds over
direct, allocations per request. Then the ratio that matters: spillway's added
p50 divided by the bare proxy's (a bare proxy is the floor for an extra hop), the
closed-loop max throughput of each path, and the process's peak RSS.

--reps N runs it N times (default 5 with --procs, 1 otherwise: one run on two
CPUs swings by more than twofold) and prints each ratio's median with its min
and max, then judges the speed goals (BENCHMARKS.md) on the medians, each one
the runs measure: streams (--stream) ttfb500<=1.2, ttfb1000<=1.3, cpu500 and
cpu1000<=1.2, rss<=1.2, throughput>=0.95; whole answers added1000<=1.2,
throughput>=0.9; with --failover failover50_p50<=1000 and failover50_p99<=3000
(µs). --goal NAME<=X (or >=), repeatable, judges those instead: added500,
p99_500, ttfb500, cpu500 (rates as run), rss, throughput, with --translated
translated500 (the translated path's added TTFB p50 over the same-format
path's), with --bedrock bedrock500 (Bedrock's event stream's added TTFB p50 over
the same Messages request's over SSE; judged by default: bedrock500<=1.3,
bedrock1000<=1.3), with --failover failover50_p50, failover50_p99, skip50_p50.`,
		Example: `  spillway bench overhead
  spillway bench overhead --rps 1000 --duration 10s --stream --json
  spillway bench overhead --procs --stream --rps 500,1000 --reps 5 --goal ttfb500<=1.2 --goal rss<=1.2
  spillway bench overhead --state redis://127.0.0.1:6379/0 --rps 500,1000 --throughput-for 0s
  spillway bench overhead --procs --stream --translated --rps 500,1000 --reps 5 --goal translated500<=1.3
  spillway bench overhead --procs --stream --bedrock --rps 500 --reps 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.benchOverhead(cmd, &bo) },
	}
	bo.flags(cmd.Flags())
	return cmd
}

func (a *App) benchOverhead(cmd *cobra.Command, bo *benchOverheadOptions) error {
	o := &bo.o
	for _, r := range bo.rps {
		if r < 1 || r > 100000 {
			return fail(ExitUsage, "--rps values are 1..100000, not %d", r)
		}
	}
	o.RPS = bo.rps
	if !bo.asJSON {
		o.Progress = func(format string, args ...any) { fmt.Fprintf(a.Stderr, "  "+format+"\n", args...) }
	}
	if bo.cpuprofile != "" && o.Procs {
		o.PartProfile = bo.cpuprofile // the proxies' processes profile themselves
	} else if bo.cpuprofile != "" {
		stop, err := bench.CPUProfile(bo.cpuprofile)
		if err != nil {
			return fail(ExitUsage, "--cpuprofile: %w", err)
		}
		defer stop()
	}
	var goals []bench.Goal
	for _, g := range bo.goalArgs {
		goal, err := bench.ParseGoal(g)
		if err != nil {
			return fail(ExitUsage, "--goal: %w", err)
		}
		goals = append(goals, goal)
	}
	if len(goals) == 0 {
		goals = bench.SpeedGoals(*o) // each judged when the runs measure it
	}
	if !cmd.Flags().Changed("reps") {
		bo.reps = 1
		if o.Procs {
			bo.reps = 5
		}
	}
	if bo.reps < 1 || bo.reps > 50 {
		return fail(ExitUsage, "--reps %d: from 1 to 50", bo.reps)
	}
	rr, err := bench.Repeat(cmd.Context(), *o, bo.reps, goals)
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	if bo.asJSON && bo.reps == 1 && len(bo.goalArgs) == 0 {
		return a.printReport(rr.Runs[0], true) // one run: its report, as before
	}
	return a.printReport(rr, bo.asJSON)
}

// benchPartCmd is one part of `bench overhead --procs`, run by it as a
// process of its own (hidden: not for users).
func (a *App) benchPartCmd() *cobra.Command {
	var (
		target     string
		tokenRate  float64
		pacingOff  bool
		cpuprofile string
	)
	cmd := &cobra.Command{
		Use:    "part upstream|bare|gateway",
		Short:  "One part of bench overhead --procs, in a process of its own",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bench.Part(cmd.Context(), args[0], target, tokenRate, pacingOff, cpuprofile, a.Stdout); err != nil {
				return fail(ExitUsage, "%w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "the upstream's URL (bare, gateway)")
	f.Float64Var(&tokenRate, "token-rate", 0, "the upstream's tokens per second (0: at once)")
	f.BoolVar(&pacingOff, "pacing-off", false, "the gateway's pacing off")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the part's life to this file")
	return cmd
}

// printReport prints a bench's report as indented JSON or as its text.
func (a *App) printReport(rep interface{ WriteText(io.Writer) }, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteText(a.Stdout)
	return nil
}
