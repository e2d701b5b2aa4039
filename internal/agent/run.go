package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/policy"
)

// Exit codes of spillway exec (docs/exec.md; docs/commands.md, "Exit codes").
const (
	ExitCapacity = 75 // every model stayed at capacity through the whole ladder
	ExitAuth     = 77 // auth or quota: a person has to act
)

// Options configure one wrapped run.
type Options struct {
	Command []string // the agent and its arguments
	Config  *config.Config
	Engine  *policy.Engine
	// Models is the chain to walk; empty means the configured chain of the
	// model the command names (or the agent's default chain).
	Models []string
	Chain  string // a configured chain by name
	// Model is where the run starts (its chain follows), unless the
	// command names one; empty means the agent's own default model.
	Model  string
	Ladder []time.Duration
	// MaxWait bounds all waiting; 0 means the ladder's total.
	MaxWait time.Duration
	Resume  bool
	// UntilReset waits a plan's usage limit out (its reset time, as the
	// agent printed it), then resumes the session as Resume does; MaxWait
	// bounds it when set.
	UntilReset bool
	// ResumePrompt is sent when a session is resumed on the next model.
	ResumePrompt string
	Archive      string // directory for failed attempts' output and sessions
	Notify       string // URL to POST a JSON summary to on final failure
	Stdin        io.Reader
	Stdout       io.Writer
	Stderr       io.Writer
	Env          []string // the child's environment; os.Environ() when nil
	Dir          string   // the child's working directory; the current one when empty
	Events       events.Sink
	Getenv       func(string) string
	// Park, with Rung (the ladder's rungs already waited), makes Run return
	// instead of sleeping through a rung once every model is at capacity:
	// Result.ParkUntil says when to run again (the queue does).
	Park bool
	Rung int
	// CheckEvery splits a rung longer than it into checks: the agent is run
	// again after each (it fails fast at capacity), and the first success
	// ends the wait (default a minute; negative: off). RungLeft is what a
	// parked run left of its rung (Result.RungLeft).
	CheckEvery time.Duration
	RungLeft   time.Duration
	// OnStart, when set, is told the pid of each run of the agent as it
	// starts (the id of its process group, when it has one: when Stdin is
	// not a terminal).
	OnStart func(pid int)
	// Supervisor, when set, is spillway's executable: each run of the agent
	// goes under spillway's supervisor (proc.Supervise), so that the agent
	// and everything it started die with spillway, even when spillway is
	// killed outright; the pid OnStart is told is the supervisor's. Empty:
	// the agent runs as spillway's own child.
	Supervisor string
	// NewSessionID names a session exec gives an agent (Gemini CLI's
	// --session-id, with Resume); a random UUID when nil.
	NewSessionID func() string
}

// Attempt is one run of the agent.
type Attempt struct {
	Model    string  `json:"model"`
	Class    string  `json:"class"`
	ExitCode int     `json:"exit_code"`
	Seconds  float64 `json:"seconds"`
	WaitedS  float64 `json:"waited_s"`
	Resumed  string  `json:"resumed_session,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Result is the outcome of Run.
type Result struct {
	ExitCode int       `json:"exit_code"`
	Class    string    `json:"class"`
	Reason   string    `json:"reason,omitempty"`
	Attempts []Attempt `json:"attempts"`
	Command  string    `json:"command"`
	// ParkUntil, for a parked run (Options.Park), is when to run again,
	// and RungLeft what will be left of its rung then.
	ParkUntil time.Time     `json:"park_until,omitzero"`
	RungLeft  time.Duration `json:"-"`
	NextRung  int           `json:"-"`
	// ResetsAt, for a run parked for a plan's usage limit, is the reset as
	// the provider said it (ParkUntil is a little after it).
	ResetsAt time.Time `json:"-"`
	// Stdout is what the run that succeeded printed (its last MiB), without
	// the output of the runs that failed before it.
	Stdout string `json:"-"`
}

// Run runs the agent until it succeeds or the policy gives up. The driver
// (policy.Run) walks the chain and waits along the ladder; each attempt is
// one run of the agent on the attempt's model.
func Run(ctx context.Context, o Options) Result {
	x := newExecution(o)
	x.chooseModels()
	// the agent fails fast at capacity, so that spillway can act: its own
	// retries off where it has them
	cleanup, err := failFast(x.kind, &x.o)
	if err != nil {
		x.say("cannot turn %s's own retries off: %v", x.kind, err)
	}
	defer cleanup()
	defer func() { x.stopCountdown() }()
	return x.result(x.o.Engine.Run(ctx, x.call()))
}

// clipMessage is a message cut to a line's worth, redacted.
func clipMessage(m string) string {
	m = redact.String(strings.TrimSpace(m))
	if r := []rune(m); len(r) > 160 {
		return string(r[:160]) + "…"
	}
	return m
}

// finish ends a run the driver gave up on: 77 for auth or quota (a person
// has to act), 75 for a global outage, and otherwise the agent's own exit
// code (a failure spillway does not handle is the agent's to report).
func finish(o Options, res Result, out policy.Outcome, last runOut, say func(string, ...any)) Result {
	v := out.Verdict
	res.Class, res.Reason = string(v.Class), out.Reason
	switch {
	case v.Class == classify.UsageLimit && o.UntilReset:
		// waiting for the reset was asked for: why it was not waited
		res.ExitCode = ExitAuth
		why := notWaited(v, out, o.MaxWait, o.Engine.Clock().Now())
		res.Reason = fmt.Sprintf("%s: %s", v.Class, why)
		say("%s — stopping (exit %d). %s", v.Class, ExitAuth, why)
	case v.Class == classify.Auth || v.Class == classify.Quota || v.Class == classify.UsageLimit:
		res.ExitCode = ExitAuth
		res.Reason = fmt.Sprintf("%s: %s %s", v.Class, v.Summary, v.Action)
		say("%s — stopping (exit %d). %s", v.Class, ExitAuth, strings.TrimSpace(v.Summary+" "+v.Action))
	case out.GlobalOutage:
		res.ExitCode = ExitCapacity
		say("giving up (exit %d): %s", ExitCapacity, strings.TrimPrefix(out.Reason, "spillway: "))
	case handled[v.Class]:
		res.ExitCode = max(last.code, 1)
		say("giving up (exit %d): %s", res.ExitCode, strings.TrimPrefix(out.Reason, "spillway: "))
	default:
		// not a failure spillway handles: the agent's own exit code
		res.ExitCode = last.code
		return res
	}
	notify(o, res, say)
	return res
}

// notWaited says why exec --until-reset stopped at a usage limit rather
// than wait for its reset: the agent did not say when, the reset lies
// beyond --max-wait (maxWait, of which out.Waited is spent), or the limit
// was said again after its reset (the plan's reason).
func notWaited(v classify.Verdict, out policy.Outcome, maxWait time.Duration, now time.Time) string {
	switch {
	case v.ResetsAt.IsZero():
		return "Your plan's usage window is used up, and the agent did not say when it resets, so --until-reset has no time to wait for. Wait for the reset, or go on with another plan or provider."
	case maxWait > 0 && v.ResetsAt.Sub(now) >= maxWait-out.Waited:
		return fmt.Sprintf("Your plan's usage window is used up; it resets at %s (in %s), beyond --max-wait %s: give a longer --max-wait, or none, to wait for it.",
			v.ResetsAt.UTC().Format("2006-01-02 15:04 UTC"), classify.FormatWait(v.ResetsAt.Sub(now).Round(time.Second)), classify.FormatWait(maxWait))
	}
	return strings.TrimPrefix(out.Reason, "spillway: ")
}

// wait says, once, what a wait of d is for and until when; on a terminal
// it then counts down on that line each second until the returned stop.
func wait(w io.Writer, d time.Duration, what string) (stop func()) {
	until := time.Now().Add(d)
	line := func(left time.Duration) string {
		return fmt.Sprintf("spillway: waiting %s (until %s) %s", classify.FormatWait(left), until.Format("15:04:05"), what)
	}
	f, ok := w.(*os.File)
	if !ok || d < 3*time.Second || !isTerminal(f) {
		fmt.Fprintln(w, line(d))
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			fmt.Fprintf(w, "\r\033[K%s", line(time.Until(until).Round(time.Second)))
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-finished }) }
}

// failFast turns the agent's own retries of a capacity answer off, unless
// the user set them: Claude Code's CLAUDE_CODE_MAX_RETRIES=0; Gemini CLI's
// general.maxAttempts 1, from the user's settings.json when it says so (as
// setup gemini writes it), else from a system settings file of spillway's
// (GEMINI_CLI_SYSTEM_SETTINGS_PATH: it overrides the user's settings and
// leaves ~/.gemini, its login and sessions, where they are), or an error
// that says why there can be none. Codex does not retry a capacity answer.
// It adds to o.Env and returns what undoes it.
func failFast(k Kind, o *Options) (cleanup func(), err error) {
	cleanup = func() {}
	env := childEnv(*o)
	var extra []string
	switch k {
	case Claude:
		if env("CLAUDE_CODE_MAX_RETRIES") == "" {
			extra = append(extra, "CLAUDE_CODE_MAX_RETRIES=0")
		}
	case Gemini:
		user := filepath.Join(geminiDir(*o), "settings.json")
		if env("GEMINI_CLI_SYSTEM_SETTINGS_PATH") != "" || geminiOneAttempt(user) {
			break
		}
		path, err := geminiSystemSettings(o.Getenv, os.Geteuid())
		if err != nil {
			return cleanup, fmt.Errorf("%w; so Gemini CLI retries a 503 up to 10 times, for minutes, before spillway sees it: set general.maxAttempts to 1 in %s (spillway setup gemini does)", err, user)
		}
		extra = append(extra, "GEMINI_CLI_SYSTEM_SETTINGS_PATH="+path)
	default:
		if s := specOf(k); s != nil && s.failFast != nil {
			env, undo, err := s.failFast(o)
			if err != nil {
				return cleanup, err
			}
			if undo != nil {
				cleanup = undo
			}
			extra = append(extra, env...)
		}
	}
	if len(extra) > 0 {
		base := o.Env
		if base == nil {
			base = os.Environ()
		}
		o.Env = append(append([]string(nil), base...), extra...)
	}
	return cleanup, nil
}

// withoutOwnSecrets is the child's environment (env, or spillway's own
// when nil) without the variables that hold spillway's own keys
// (config.OwnSecretVars): an agent has no business with the gateway's
// admin, metrics or gateway keys. nil (spillway's own environment, as it
// is) when there is none to take out.
func withoutOwnSecrets(env []string, cfg *config.Config) []string {
	vars := cfg.OwnSecretVars()
	if len(vars) == 0 {
		return env
	}
	base := env
	if base == nil {
		base = os.Environ()
	}
	out := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(vars, name)
	})
	if env == nil && len(out) == len(base) {
		return nil
	}
	return out
}

// childEnv looks a variable up as the agent will see it.
func childEnv(o Options) func(string) string {
	if o.Env == nil {
		return o.Getenv
	}
	return func(k string) string {
		v := ""
		for _, kv := range o.Env {
			if x, ok := strings.CutPrefix(kv, k+"="); ok {
				v = x
			}
		}
		return v
	}
}

// archive keeps a failed run's output (and a Codex run's session) in
// o.Archive, redacted: keys and tokens, the agent's own sign-in (sec), and
// in the session the account, user and organisation ids Codex records
// (session_meta's creator_account_id, creator_user_id), each line still
// one JSON value.
func archive(o Options, n int, model string, out runOut, kind Kind, session string, sec redact.Secrets, say func(string, ...any)) {
	if err := os.MkdirAll(o.Archive, 0o700); err != nil {
		say("archive: %v", err)
		return
	}
	base := filepath.Join(o.Archive, fmt.Sprintf("%s-attempt%d-%s", time.Now().UTC().Format("20060102T150405Z"), n, model))
	_ = os.WriteFile(base+".stdout", []byte(sec.String(out.stdout.String())), 0o600)
	_ = os.WriteFile(base+".stderr", []byte(sec.String(out.stderr.String())), 0o600)
	if kind == Codex && session != "" {
		_ = filepath.WalkDir(filepath.Join(codexHome(o), "sessions"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(d.Name(), session) {
				if b, err := os.ReadFile(p); err == nil {
					_ = os.WriteFile(base+".session.jsonl", redactJSONL(b, sec), 0o600)
				}
			}
			return nil
		})
	}
}

func notify(o Options, res Result, say func(string, ...any)) {
	if o.Notify == "" {
		return
	}
	body, _ := json.Marshal(res)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.Notify, bytes.NewReader(body))
	if err != nil {
		say("notify: %v", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		say("notify %s: %v", redact.String(o.Notify), err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		say("notify %s: HTTP %d", redact.String(o.Notify), resp.StatusCode)
	}
}
