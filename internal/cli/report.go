package cli

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/spillway/spillway/internal/queue"
	"github.com/spillway/spillway/internal/report"
	"github.com/spillway/spillway/internal/words"
)

// reportOptions are report's flags; opts gathers those report.Build reads
// as they are.
type reportOptions struct {
	opts                                   report.Options
	only, textLogs                         []string
	pattern, since, until, tz, format, out string
	colour, db                             string
	save                                   bool
}

func (o *reportOptions) flags(f *pflag.FlagSet) {
	f.StringSliceVar(&o.only, "only", nil, "read only these sources: spillway, codex, claude, gemini (default: all that are found)")
	f.StringVar(&o.opts.EventLog, "events", "", "spillway's event log (default: the configured one, $SPILLWAY_EVENTS or ~/.local/state/spillway/events.jsonl)")
	f.StringVar(&o.opts.CodexHome, "codex-home", "", "Codex CLI's directory (default $CODEX_HOME or ~/.codex)")
	f.StringVar(&o.opts.ClaudeHome, "claude-home", "", "Claude Code's directory (default $CLAUDE_CONFIG_DIR or ~/.claude)")
	f.StringVar(&o.opts.GeminiHome, "gemini-home", "", "Gemini CLI's .gemini directory (default ~/.gemini)")
	f.StringArrayVar(&o.textLogs, "text-log", nil, "a text log with a timestamp per line (repeatable; gzip too)")
	f.StringVar(&o.pattern, "pattern", "", "with --text-log: the lines that count (a Go regexp; default: those saying capacity, error or retry)")
	f.StringVar(&o.since, "since", "", "from this time: 2026-11-01, 2026-11-01T09:00, RFC 3339, or an age such as 7d or 36h")
	f.StringVar(&o.until, "until", "", "up to this time (same forms as --since)")
	f.StringVar(&o.tz, "tz", "", "the time zone of the hours (default: local)")
	f.StringVar(&o.format, "format", "text", "text, json or html")
	f.StringVarP(&o.out, "output", "o", "", "write to this file instead of standard output")
	f.StringVar(&o.colour, "color", "auto", "auto, always or never (the heatmap in colour)")
	f.BoolVar(&o.save, "save-windows", false, "store the learned quiet window for 'queue add --window quiet'")
	f.StringVar(&o.db, "db", "", "with --save-windows: the queue's database (sqlite, sqlite:PATH or postgres://…; default: queue.db of the configuration)")
}

func (a *App) reportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report",
		Short: "When, on which model and at what request size capacity errors hit you",
		Long: `report reads spillway's event log (rotated and gzipped files too) and the agents'
own files where they live: Codex CLI rollouts ($CODEX_HOME or ~/.codex), Claude
Code transcripts ($CLAUDE_CONFIG_DIR or ~/.claude/projects) and Gemini CLI
sessions (~/.gemini/tmp/*/chats, with its error reports in the temp directory),
plus any text log with a timestamp per line (--text-log).

It shows capacity errors by weekday and hour (in --tz), per model (attempts,
failure rate by class, fallbacks, retries per request, time lost waiting,
median and p95 latency), by request size with the size above which they clearly
rise, the quiet window, the trend by day, and findings in plain words. Quota
errors are kept apart from capacity errors. Unreadable lines are counted and
skipped; what the event log lost (records it could not write, records cut off
mid-write) is counted and said.

--save-windows stores the learned quiet window in the queue's database, where
'queue add --window quiet' finds it when the task is due.`,
		Example: `  spillway report
  spillway report --since 7d --tz Europe/Berlin
  spillway report --only codex,claude --format html -o report.html
  spillway report --text-log app.log --pattern 'overloaded|529'
  spillway report --format json | jq .quiet_window
  spillway report --save-windows`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.report(cmd, &o) },
	}
	o.flags(cmd.Flags())
	return cmd
}

func (a *App) report(cmd *cobra.Command, o *reportOptions) error {
	if err := a.reportSetup(cmd, o); err != nil {
		return err
	}
	o.opts.Progress = a.reportProgress()
	r, err := report.Build(cmd.Context(), o.opts)
	if o.opts.Progress != nil {
		fmt.Fprint(a.Stderr, "\r\x1b[K")
	}
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	if o.save {
		if err := a.saveWindows(cmd, o.db, r); err != nil {
			return err
		}
	}
	return a.writeReport(r, o.format, o.out, o.colour)
}

// reportLocation is the zone of the report's hours: --tz, else the local
// zone by its name when it can be told.
func (a *App) reportLocation(tz string) (*time.Location, error) {
	loc := time.Local
	if tz == "" {
		if name := localZone(a.Getenv); name != "" {
			if l, err := time.LoadLocation(name); err == nil {
				loc = l
			}
		}
		return loc, nil
	}
	l, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fail(ExitUsage, "--tz %q: %v (an IANA name such as Europe/Berlin, or UTC)", tz, err)
	}
	return l, nil
}

// reportSetup checks the flags and fills in o.opts from them.
func (a *App) reportSetup(cmd *cobra.Command, o *reportOptions) error {
	loc, err := a.reportLocation(o.tz)
	if err != nil {
		return err
	}
	now := time.Now()
	if o.opts.Since, err = parseWhen(o.since, now, loc); err != nil {
		return fail(ExitUsage, "--since: %v", err)
	}
	if o.opts.Until, err = parseWhen(o.until, now, loc); err != nil {
		return fail(ExitUsage, "--until: %v", err)
	}
	if !o.opts.Since.IsZero() && !o.opts.Until.IsZero() && !o.opts.Until.After(o.opts.Since) {
		return fail(ExitUsage, "--until %s is not after --since %s: the range would be empty", o.until, o.since)
	}
	if o.pattern != "" {
		if o.opts.Pattern, err = regexp.Compile(o.pattern); err != nil {
			return fail(ExitUsage, "--pattern: %v", err)
		}
	}
	switch o.format {
	case "text", "json", "html":
	default:
		return fail(ExitUsage, "--format %q: text, json or html", o.format)
	}
	opts := &o.opts
	opts.Only, opts.TextLogs, opts.Loc, opts.Getenv = splitList(o.only), o.textLogs, loc, a.Getenv
	// a text log alone is read alone, unless sources are named too
	opts.NoAuto = len(o.textLogs) > 0 && len(opts.Only) == 0 && !cmd.Flags().Changed("events")
	opts.EventLogNamed = opts.EventLog != ""
	if opts.EventLogNamed {
		if fi, err := os.Stat(opts.EventLog); err == nil && fi.IsDir() {
			return fail(ExitUsage, "--events %s is a directory: name the event log file (spillway serve writes events.jsonl; rotated ones beside it are read too)", opts.EventLog)
		}
	}
	if opts.EventLog == "" {
		cfg, err := a.loadConfig()
		if err != nil {
			return err
		}
		opts.EventLog = cfg.Events.Path
	}
	return nil
}

// reportProgress says on a terminal's stderr what the report reads (at
// most five times a second); nil when stderr is not a terminal.
func (a *App) reportProgress() func(what string, n int64) {
	f, ok := a.Stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	last := time.Time{}
	return func(what string, n int64) {
		if time.Since(last) < 200*time.Millisecond {
			return
		}
		last = time.Now()
		if n > 0 {
			fmt.Fprintf(a.Stderr, "\r\x1b[Kreading %s: %d MB", what, n>>20)
		} else {
			fmt.Fprintf(a.Stderr, "\r\x1b[Kreading %s", what)
		}
	}
}

// writeReport writes r in format to out (standard output for "" or "-").
func (a *App) writeReport(r report.Result, format, out, colour string) error {
	var w io.Writer = a.Stdout
	if out != "" && out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return fail(ExitFail, "-o: %v", err)
		}
		defer f.Close()
		w = f
	}
	var err error
	switch format {
	case "json":
		err = report.JSON(w, r)
	case "html":
		err = report.HTML(w, r)
	default:
		useColour := colour == "always"
		if colour == "auto" {
			f, ok := w.(*os.File)
			useColour = ok && term.IsTerminal(int(f.Fd())) && a.Getenv("NO_COLOR") == ""
		}
		err = report.Text(w, r, useColour)
	}
	if err != nil {
		return fail(ExitFail, "writing the report: %v", err)
	}
	if out != "" && out != "-" {
		fmt.Fprintf(a.Stderr, "spillway: wrote %s\n", out)
	}
	return nil
}

// saveWindows stores the report's quiet window in the queue's database.
func (a *App) saveWindows(cmd *cobra.Command, db string, r report.Result) error {
	if r.TZ == "Local" {
		return fail(ExitUsage, "--save-windows: the local time zone's name cannot be told here; give it with --tz (e.g. --tz Europe/Berlin), so that every runner reads the window's hours alike")
	}
	if r.Quiet == nil {
		why := r.QuietNote
		if why == "" {
			why = "no quiet window found"
		}
		return fail(ExitFail, "--save-windows: nothing to save: %s; queue add --window quiet keeps using %s", why, queue.QuietDefault)
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if db == "" {
		db = cfg.Queue.DB
	}
	s, err := queue.Open(cmd.Context(), db, a.dataDir(), queue.OpenOptions{})
	if err != nil {
		return fail(ExitFail, "%w", err)
	}
	defer s.Close()
	basis := fmt.Sprintf("%s, %s at capacity in the window", words.Count(r.Quiet.Attempts, "attempt"), strconv.FormatFloat(r.Quiet.Rate*100, 'f', 1, 64)+"%")
	if r.Metric == "capacity_count" {
		basis = fmt.Sprintf("%d capacity errors in the window, of %d failure lines", r.Quiet.Capacity, r.Totals.Attempts)
	}
	if r.From != nil {
		basis += ", data " + r.From.Format(time.DateOnly) + " to " + r.To.Format(time.DateOnly)
	}
	spec := fmt.Sprintf("%02d:00-%02d:00", r.Quiet.From, r.Quiet.To)
	if err := s.SaveQuiet(cmd.Context(), queue.Quiet{Spec: spec, TZ: r.TZ, Basis: basis, SavedAt: time.Now()}); err != nil {
		return fail(ExitFail, "%w", err)
	}
	fmt.Fprintf(a.Stderr, "spillway: saved the quiet window %s (%s) to %s: queue add --window quiet uses it\n", spec, r.TZ, s.Where)
	return nil
}

// parseWhen reads a --since/--until value: a date, a date and time (in
// loc), RFC 3339, or an age before now (7d, 36h, 90m).
func parseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d >= 0 {
			return now.AddDate(0, 0, -d), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.DateOnly, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: write a date (2026-11-01), a time (2026-11-01T09:00), RFC 3339, or an age (7d, 36h)", s)
}

func splitList(v []string) []string {
	var out []string
	for _, s := range v {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// localZone is the IANA name of the local time zone: $TZ, else the target
// of /etc/localtime (…/zoneinfo/Europe/Berlin); "" when neither tells.
func localZone(getenv func(string) string) string {
	if tz := strings.TrimPrefix(getenv("TZ"), ":"); tz != "" && !strings.HasPrefix(tz, "/") {
		return tz
	}
	target, err := os.Readlink("/etc/localtime")
	if err != nil {
		return ""
	}
	if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
		return name
	}
	return ""
}
