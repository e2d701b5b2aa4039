// Package cli is spillway's command line: one cobra command per capability,
// each a thin layer over the package that does the work.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/proc"
	"github.com/spillway/spillway/internal/words"
)

// Version is set at build time with -ldflags "-X github.com/spillway/spillway/internal/cli.Version=v1.2.3"
// (scripts/build does); a module build's version otherwise.
var Version = ""

// Exit codes shared by every command.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
	// ExitWaiting: queue run --until-empty stopped with tasks left that
	// wait for later (a window, capacity, a retry).
	ExitWaiting = 3
	// ExitInterrupted: Ctrl-C or SIGTERM stopped the command.
	ExitInterrupted = 130
)

// App is one invocation's environment. Tests build their own.
type App struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string

	configPath string // --config
}

// exitError carries a specific exit code out of a command, with the error
// to print, or none when the command has already said what happened.
type exitError struct {
	code int
	err  error // nil: exit quietly
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func fail(code int, format string, a ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, a...)}
}

// exitQuietly ends a command with code and nothing more to print.
func exitQuietly(code int) error { return &exitError{code: code} }

// Run executes spillway with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == proc.SuperviseArg {
		// spillway run again as an agent's supervisor (spillway exec and
		// the queue's command steps start it): no command of the user's
		return proc.Supervise(args[1:])
	}
	app := &App{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}
	return app.Run(ctx, args)
}

// Run executes one command line.
func (a *App) Run(ctx context.Context, args []string) int {
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(a.Stderr, "spillway:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong argument count
	fmt.Fprintln(a.Stderr, "spillway:", err)
	fmt.Fprintln(a.Stderr, "Run 'spillway help' for usage.")
	return ExitUsage
}

func (a *App) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "spillway",
		Short: "Keep coding agents and LLM scripts working when a model is at capacity",
		Long: `spillway tells capacity errors ("Selected model is at capacity", Anthropic 529,
Gemini 503 "The model is overloaded") apart from every other failure and acts on
each the right way: fall back to the next model of the tier chain (another
vendor's where a chain allows it), wait, or fail fast with a clear reason.

Start with 'spillway serve' and 'spillway setup codex|claude|gemini' (a gateway
for Codex CLI, Claude Code and Gemini CLI, with a dashboard at its address),
'spillway exec -- AGENT …' (an agent rerun on the next model), 'spillway queue'
(tasks worked a few at a time), 'spillway explain' and 'spillway doctor' (what
kind of failure it is), 'spillway report' (when and where capacity errors hit).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "configuration file (default $SPILLWAY_CONFIG or ~/.config/spillway/spillway.yaml)")
	root.AddCommand(a.versionCmd(), a.explainCmd(), a.configCmd(), a.initCmd(), a.simCmd(), a.serveCmd(), a.setupCmd(), a.demoCmd(), a.execCmd(), a.queueCmd(), a.benchCmd(), a.reportCmd(), a.doctorCmd())
	for _, c := range root.Commands() {
		groups(c)
		argsSaid(c)
	}
	return root
}

// argsSaid words a wrong number of arguments to c (and to the commands
// under it) as what the command takes, from its usage line ("spillway
// queue show: missing ID; usage: spillway queue show ID [flags]"), not
// cobra's "accepts 1 arg(s), received 0".
func argsSaid(c *cobra.Command) {
	for _, sub := range c.Commands() {
		argsSaid(sub)
	}
	check := c.Args
	if check == nil || c.HasSubCommands() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		err := check(cmd, args)
		if err == nil {
			return nil
		}
		// what the command takes: its usage line after its name, its
		// flags and the "--" aside
		takes := strings.Fields(strings.TrimPrefix(cmd.Use, cmd.Name()))
		takes = slices.DeleteFunc(takes, func(w string) bool { return w == "[flags]" || w == "--" })
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		if len(args) == 0 && len(takes) > 0 {
			return fail(ExitUsage, "%s: missing %s; usage: %s", name, strings.Join(takes, " "), cmd.UseLine())
		}
		return fail(ExitUsage, "%s: takes %s, not %s; usage: %s", name, strings.Join(takes, " "), words.Count(len(args), "argument"), cmd.UseLine())
	}
}

// badValue is pflag's refusal of a flag's value, which quotes the Go
// parser's own error ("strconv.ParseInt: parsing \"abc\": invalid
// syntax").
var badValue = regexp.MustCompile(`^invalid argument "((?:[^"\\]|\\.)*)" for "([^"]+)" flag: (strconv\.Parse(Int|Uint|Float|Bool)|time: )`)

// flagError words a flag's bad value as what the flag takes; every other
// flag error (unknown flag, missing value) is cobra's own words.
func flagError(cmd *cobra.Command, err error) error {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	name := m[2]
	if i := strings.LastIndex(name, "--"); i >= 0 {
		name = name[i:] // "-n, --max-attempts"
	}
	want := "a duration such as 30s, 5m or 2h"
	switch m[4] {
	case "Int", "Uint":
		want = "a whole number"
	case "Float":
		want = "a number"
	case "Bool":
		want = "true or false"
	}
	return fail(ExitUsage, "%s %s: give %s (see '%s --help')", name, m[1], want, cmd.CommandPath())
}

// groups makes every command that only holds others (config, queue,
// setup, bench) refuse a word that is none of them, as the root does:
// cobra would print the group's help and exit 0, so a mistyped
// `config chek` looked like it worked. With no word it does what the group
// does alone, else shows the help.
func groups(c *cobra.Command) {
	if !c.HasSubCommands() {
		return
	}
	for _, sub := range c.Commands() {
		groups(sub)
	}
	c.Args = cobra.ArbitraryArgs
	c.SuggestionsMinimumDistance = 2
	own := c.RunE // what a group does with no word (setup lists the agents), else its help
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 && own != nil {
			return own(cmd, args)
		}
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return fail(ExitUsage, "%s (its commands: %s; see '%s --help')", msg, strings.Join(names, ", "), cmd.CommandPath())
	}
}

// loadConfig reads the configuration named by --config, or the default file
// if it exists, or the built-in defaults.
func (a *App) loadConfig() (*config.Config, error) {
	path, err := config.Find(a.configPath, a.Getenv)
	if err != nil {
		return nil, &exitError{code: ExitFail, err: err}
	}
	c, err := config.Load(path, a.Getenv)
	if err != nil {
		return nil, &exitError{code: ExitFail, err: err}
	}
	return c, nil
}

func (a *App) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version (also spillway --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(a.Stdout, versionLine())
			return nil
		},
	}
}

// Build stamps, set by scripts/build with -ldflags -X when the Go tool
// did not record them (a build outside a git checkout, or -buildvcs=false).
var (
	Commit     = ""
	CommitTime = ""
)

// versionLine is "spillway VERSION (commit COMMIT, TIME[, modified]) GO OS/ARCH":
// the module version, and the commit and its time from the build info
// (go build in a git checkout records them), else from the stamps.
func versionLine() string {
	v, rev, when, dirty := Version, Commit, CommitTime, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	line := "spillway " + v
	if rev != "" {
		line += " (commit " + rev[:min(12, len(rev))]
		if when != "" {
			line += ", " + when
		}
		if dirty {
			line += ", modified"
		}
		line += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
