package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/agent"
	"github.com/spillway/spillway/policy"
)

// execOptions are exec's flags.
type execOptions struct {
	models, ladder, chain, archive, notify, eventsPath, resumePrompt, model string
	maxWait                                                                 time.Duration
	resume, asJSON, untilReset                                              bool
}

func (o *execOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.models, "models", "", "the chain to walk, e.g. gpt-6-astra,gpt-6.1-sol,gpt-6-luna (default: the configured chain of the agent's model)")
	f.StringVar(&o.chain, "chain", "", "a configured chain by name (codex, claude, …)")
	f.StringVar(&o.model, "model", "", "the model to start at, its chain following (default: the agent's own default model: Codex's config.toml model, else gpt-6.1-sol)")
	f.StringVar(&o.ladder, "ladder", "", "waits once every model is full, e.g. 30s,2m,10m,30m (default: retry.ladder)")
	f.DurationVar(&o.maxWait, "max-wait", 0, "the most to wait in total (default: the ladder's total)")
	f.BoolVar(&o.resume, "resume", false, "continue the agent's session on the next model instead of starting over")
	f.BoolVar(&o.untilReset, "until-reset", false, "at a plan's usage limit, wait for its reset (as the agent says it), then resume the session; --max-wait bounds it (without: exit 77)")
	f.StringVar(&o.resumePrompt, "resume-prompt", agent.DefaultResumePrompt, "the prompt sent when resuming")
	f.StringVar(&o.archive, "archive", "", "save each failed attempt's output (and Codex session file) in this directory")
	f.StringVar(&o.notify, "notify", "", "POST a JSON summary to this URL on final failure")
	f.BoolVar(&o.asJSON, "json", false, "print a JSON summary of the attempts on stderr at the end")
	f.StringVar(&o.eventsPath, "events", "", "event log file, or - for none (default: events.path, else ~/.local/state/spillway/events.jsonl)")
	f.SetInterspersed(false)
}

func (a *App) execCmd() *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARGS...]",
		Short: "Run a CLI agent and rerun or resume it on the next model when one is at capacity",
		Long: `exec runs an agent (codex exec, claude -p, gemini, opencode run, copilot -p, qwen,
cline, cn -p, or any command), passing its
input and output through live, and reads what it printed:

  capacity          rerun at once on the next model of the chain; once every model
                    has failed, wait along the ladder and walk again; after the last
                    rung stop: "global outage" (exit 75)
  rate limit        wait what the agent or provider said, same model
  network           short fixed retries on the same model
  auth, quota       stop at once and say which (exit 77)
  anything else     exit with the agent's own code, untouched

Exit codes of exec's own: 75 (every model at capacity to the last rung), 77
(auth, quota, a plan's usage limit), 127 (the agent could not be started), 130
(interrupted); 128+N for an agent killed by signal N.

{model} in ARGS is replaced by the current model; for codex, claude, gemini,
opencode (-m spillway/MODEL), copilot, qwen and cline the model flag is added or
replaced when there is no placeholder (cn has none: put {model} in its --config
path). With --resume, a rerun continues the session (codex exec resume <id>,
claude --resume <id>, gemini --resume <id>, opencode run --session <id>,
copilot --resume=<id>, qwen -r <id>) instead of starting over, when the failed
run left one; cline and cn cannot resume without a terminal, and start over.`,
		Example: `  spillway exec -- codex exec "fix the failing tests"
  spillway exec --models gpt-6-astra,gpt-6.1-sol --ladder 30s,2m --resume -- codex exec --json "refactor the parser"
  spillway exec --chain claude --archive ./spillway-archive -- claude -p "write the migration"
  spillway exec --resume -- gemini -m gemini-3-pro -p "add tests for the parser"
  spillway exec --resume -- opencode run -m spillway/gpt-6-astra "fix the failing tests"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.exec(cmd.Context(), &o, args) },
	}
	o.flags(cmd.Flags())
	return cmd
}

func (a *App) exec(ctx context.Context, eo *execOptions, args []string) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if err := eo.check(cfg, args); err != nil {
		return err
	}
	node, closeFleet, err := joinFleet(ctx, cfg, slog.New(slog.NewTextHandler(a.Stderr, nil)))
	if err != nil {
		return err
	}
	var po []policy.Option
	if node != nil { // an agent's run is told what the fleet knows of full models
		defer closeFleet()
		po = append(po, policy.WithFleet(node))
	}
	o := agent.Options{Command: args, Config: cfg, Engine: policy.New(cfg, po...), Chain: eo.chain, Model: eo.model, MaxWait: eo.maxWait,
		Resume: eo.resume, UntilReset: eo.untilReset, ResumePrompt: eo.resumePrompt, Archive: eo.archive, Notify: eo.notify,
		Stdin: a.Stdin, Stdout: a.Stdout, Stderr: a.Stderr, Getenv: a.Getenv, Supervisor: supervisor()}
	if err := eo.walk(cfg, &o); err != nil {
		return err
	}
	ew, _, closeEvents, err := a.eventLog(eo.eventsPath, cfg, a.warnEvents)
	if err != nil {
		return err
	}
	defer closeEvents()
	if ew != nil {
		o.Events = ew
	}
	res := agent.Run(ctx, o)
	if eo.asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(a.Stderr, string(b))
	}
	if res.ExitCode != 0 {
		return exitQuietly(res.ExitCode) // exec said why on stderr
	}
	return nil
}

// check refuses flags that do not fit cfg or the command.
func (eo *execOptions) check(cfg *config.Config, args []string) error {
	if eo.model != "" {
		if _, ok := cfg.Models[eo.model]; !ok {
			return fail(ExitUsage, "--model %q is not a configured model; models: %s", eo.model, strings.Join(keys(cfg.Models), ", "))
		}
	}
	for _, m := range strings.Split(eo.models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			if _, ok := cfg.Models[m]; !ok {
				return fail(ExitUsage, "--models: %q is not a configured model; models: %s", m, strings.Join(keys(cfg.Models), ", "))
			}
		}
	}
	if eo.maxWait < 0 {
		return fail(ExitUsage, "--max-wait %s: give a duration of 0 or more (0: the ladder's total)", eo.maxWait)
	}
	if err := checkNotify(eo.notify); err != nil {
		return err
	}
	if err := checkArchive(eo.archive); err != nil {
		return err
	}
	return modelForPlaceholder(args, eo.model, eo.models != "" || eo.chain != "")
}

// walk sets o's models (--models), checks --chain and sets o's ladder
// (--ladder).
func (eo *execOptions) walk(cfg *config.Config, o *agent.Options) error {
	if eo.models != "" {
		for _, m := range strings.Split(eo.models, ",") {
			if m = strings.TrimSpace(m); m != "" {
				o.Models = append(o.Models, m)
			}
		}
	}
	if eo.chain != "" {
		if _, ok := cfg.Chains[eo.chain]; !ok {
			return fail(ExitUsage, "--chain %q is not configured; chains: %s", eo.chain, strings.Join(keys(cfg.Chains), ", "))
		}
	}
	if eo.ladder != "" {
		o.Ladder = []time.Duration{}
		for _, s := range strings.Split(eo.ladder, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || d < 0 {
				return fail(ExitUsage, "--ladder %q: a comma-separated list of durations such as 30s,2m,10m,30m", eo.ladder)
			}
			o.Ladder = append(o.Ladder, d)
		}
	}
	return nil
}

// keys are m's keys, sorted.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkNotify refuses a --notify that is not an http(s) URL: it is used
// only once everything failed, too late to say it was wrong.
func checkNotify(notify string) error {
	if notify == "" {
		return nil
	}
	u, err := url.Parse(notify)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail(ExitUsage, "--notify %q: give an http:// or https:// URL (a JSON summary is POSTed there on final failure)", notify)
	}
	return nil
}

// checkArchive refuses an --archive that cannot become a directory (it,
// or a directory above it, is a file): it is first written after a run
// failed, too late to say it was wrong.
func checkArchive(dir string) error {
	for p := dir; p != ""; {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return fail(ExitUsage, "--archive %s: %s is a file, not a directory; name a directory (it is made if missing)", dir, p)
			}
			return nil
		}
		up := filepath.Dir(p)
		if up == p {
			return nil
		}
		p = up
	}
	return nil
}

// modelForPlaceholder refuses a command with {model} that nothing can
// fill: not a known agent (whose chain would), and no --model, --models
// or --chain. It would run with "{model}" as written.
func modelForPlaceholder(args []string, model string, chained bool) error {
	if model != "" || chained || agent.KindOf(args[0]) != agent.Other || !slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "{model}") }) {
		return nil
	}
	return fail(ExitUsage, "the command has {model}, but %s is not an agent spillway knows the model of: give --model (or --models, --chain) to put there", args[0])
}

// supervisor is the executable an agent's supervisor runs: spillway
// itself (proc.Supervise; a test binary of this package handles the
// supervisor's argument in its TestMain), or "" when it cannot be found:
// the agent then runs as spillway's own child.
func supervisor() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return self
}
