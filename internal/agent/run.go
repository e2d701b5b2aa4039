package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/term"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/proc"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/internal/wire"
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

// execution is one wrapped run of the agent (Run) on its way through the
// driver: what its attempts share.
type execution struct {
	o    Options
	kind Kind
	// sec is the agent's own sign-in (a ChatGPT plan's tokens and ids),
	// which goes into nothing exec writes: its words, the records, the
	// result, the archive
	sec redact.Secrets
	res Result
	// requested is the model the run starts at, and from says who named
	// it; models is the chain to walk from it
	requested, from string
	models          []string
	session         string         // the session the last run used, to resume
	stopCountdown   func()         // ends the countdown of the wait under way
	lastClass       classify.Class // the class of the last run
}

// newExecution is the execution of o: the child's environment without
// spillway's own secrets, and the events and words without the agent's
// sign-in.
func newExecution(o Options) *execution {
	x := &execution{kind: KindOf(o.Command[0]), stopCountdown: func() {}}
	o.Env = withoutOwnSecrets(o.Env, o.Config)
	x.sec = signInSecrets(x.kind, o)
	x.res = Result{Command: x.sec.String(strings.Join(o.Command, " "))}
	if o.Events == nil {
		o.Events = events.Nop{}
	}
	if sink, sec := o.Events, x.sec; sec.Known() {
		o.Events = events.SinkFunc(func(rec events.Record) {
			rec.Error = sec.String(rec.Error)
			sink.Write(rec)
		})
	}
	if o.NewSessionID == nil {
		o.NewSessionID = uuid.NewString
	}
	x.o = o
	return x
}

// say tells the user, on stderr, without the agent's sign-in.
func (x *execution) say(format string, a ...any) {
	fmt.Fprint(x.o.Stderr, x.sec.String(fmt.Sprintf("spillway: "+format+"\n", a...)))
}

// chooseModels sets where the run starts and the chain it walks: the
// model the command names, else --model, else where the agent would start
// on its own; the chain given, else a configured chain by name, else the
// agent's, from where the model stands in it.
func (x *execution) chooseModels() {
	o := x.o
	requested, from := ModelIn(o.Command), "named by the command"
	if requested == "" && o.Model != "" {
		requested, from = o.Model, "--model"
	}
	if requested == "" && len(o.Models) == 0 && o.Chain == "" {
		// where the agent would start on its own: wrapping it must not move
		// the user to a pricier model
		if m, src := DefaultModel(x.kind, childEnv(o)); m != "" {
			if _, ok := o.Config.Models[m]; ok {
				requested, from = m, src
			} else {
				x.say("%s (%s) is not a configured model; starting at the %s chain's first", m, src, x.kind)
			}
		}
	}
	models := o.Models
	if len(models) == 0 && o.Chain != "" {
		models = o.Config.Chains[o.Chain]
	}
	if len(models) == 0 && requested == "" {
		models = o.Config.Chains[string(x.kind)] // codex, claude, gemini
	}
	if requested == "" && len(models) > 0 {
		requested, from = models[0], "the chain's first"
	}
	if requested != "" && len(models) > 0 && models[0] != requested {
		// the chain starts where the command's model stands in it
		for i, m := range models {
			if m == requested {
				models = models[i:]
				break
			}
		}
	}
	x.requested, x.from, x.models = requested, from, models
}

// call is the driver's call for the execution.
func (x *execution) call() *policy.Call {
	o := x.o
	ladder := o.Ladder
	if ladder == nil {
		for _, d := range o.Config.Retry.Ladder {
			ladder = append(ladder, d.D())
		}
	}
	// during a long rung, a check for room at most once a minute: the
	// agent run again (it fails fast at capacity)
	checkEvery := o.CheckEvery
	switch {
	case checkEvery == 0:
		checkEvery = time.Minute
	case checkEvery < 0:
		checkEvery = 0
	}
	c := &policy.Call{
		// an agent is given a model, never a deployment
		Request: policy.Request{Model: x.requested, Type: typeOf(x.kind), Models: x.models, Ladder: ladder, Budget: o.MaxWait, Rung: o.Rung, Park: o.Park, ModelsOnly: true,
			CheckEvery: checkEvery, RungLeft: o.RungLeft, UntilReset: o.UntilReset},
		Source: events.SourceExec, Endpoint: string(x.kind), Events: o.Events,
		OnWait: x.onWait, Check: x.check, Send: x.send,
	}
	if x.kind == Codex && onChatGPTPlan(o, o.Command) {
		// Codex on its ChatGPT plan: the attempts are the plan's (its own
		// breakers and pace; recorded as provider chatgpt), and a check for
		// room is the agent's run (no key of spillway's reaches the plan)
		c.Request.Via, c.Request.SignIn = config.ChatGPT, true
	}
	return c
}

// onWait says what a wait of d is for (policy.Call.OnWait), counting it
// down on a terminal.
func (x *execution) onWait(d time.Duration, next policy.Candidate, why classify.Verdict) {
	what := next.Model
	if what == "" {
		what = "the command"
	}
	x.stopCountdown() // a check that found no room: the wait goes on, said anew
	if why.Class == classify.UsageLimit {
		x.stopCountdown = wait(x.o.Stderr, d, fmt.Sprintf("for the plan's usage limit to reset, then %s again", what))
		return
	}
	x.stopCountdown = wait(x.o.Stderr, d, fmt.Sprintf("before trying %s (%s)", what, why.Class))
}

// check is a check within a long rung: with the provider's own key, the
// smallest request to the model; else (a ChatGPT login, say) the agent is
// run again, and fails fast at capacity.
func (x *execution) check(ctx context.Context, cand policy.Candidate) (room, checked bool) {
	return send.Room(ctx, http.DefaultTransport, x.o.Config, cand, x.o.Engine.Classify)
}

// fresh is the command run from the start on model (Gemini CLI given a
// session id of its own, to resume if the run gets somewhere).
func (x *execution) fresh(a *policy.Attempt, model string) []string {
	o := x.o
	args := o.Command
	if model != "" {
		var ok bool
		if args, ok = WithModel(o.Command, model); !ok && a.N == 1 && len(x.models) > 1 {
			x.say("cannot set the model of %q (no {model} placeholder, not a known agent): reruns use the same command", o.Command[0])
		}
	}
	if (o.Resume || o.UntilReset) && x.kind == Gemini && (a.N > 1 || flagValue(args, "--session-id") == "") {
		args = withSessionID(args, o.NewSessionID())
	}
	return args
}

// commandFor is the command attempt a runs on model, and the session it
// resumes ("" for none, "--continue" for Claude Code's most recent), said
// to the user.
func (x *execution) commandFor(a *policy.Attempt, model string) (args []string, resumed string) {
	o := x.o
	args = o.Command
	// --resume resumes every rerun; --until-reset only the run after a
	// usage limit's reset (the same model, waited for)
	afterReset := o.UntilReset && x.lastClass == classify.UsageLimit
	if (o.Resume || afterReset) && a.N > 1 && (x.session != "" || x.kind == Claude) {
		if ra, ok := resumeArgs(o.Command, x.session, model, cmp.Or(o.ResumePrompt, DefaultResumePrompt)); ok {
			args, resumed = ra, x.session
			if resumed == "" {
				resumed = "--continue"
			}
		}
	}
	if resumed == "" {
		args = x.fresh(a, model)
	}
	switch {
	case resumed == "--continue": // (Claude Code named no session: its most recent in the directory)
		x.say("run %d on %s, continuing the most recent session (--continue)", a.N, model)
	case resumed != "":
		x.say("run %d on %s, resuming session %s", a.N, model, resumed)
	case o.Resume && a.N > 1 && model != "":
		x.say("run %d on %s, from the start: run %d left no session to resume", a.N, model, a.N-1)
	case a.N == 1 && model != "":
		x.say("run 1 on %s (%s)", model, x.from)
	case model != "":
		x.say("run %d on %s", a.N, model)
	}
	return args, resumed
}

// send is one attempt (policy.Call.Send): the agent run on the attempt's
// model, resuming the session when asked, and judged.
func (x *execution) send(ctx context.Context, a *policy.Attempt) policy.Result {
	model := a.Candidate.Model
	x.stopCountdown()
	args, resumed := x.commandFor(a, model)
	at, out, v := x.runAs(ctx, a, model, args, resumed)
	x.lastClass = v.Class
	if resumed != "" && v.Class == classify.BadRequest && refusedHistory(v.Message) {
		// the provider refused the session's history (Gemini CLI 0.61
		// writes a turn cut off in its tool loop with its function
		// responses twice, which the API refuses, and so every request
		// of that session after it): the work is not lost only if the
		// run starts again
		x.res.Attempts = append(x.res.Attempts, at)
		x.say("%s refused the resumed session (%s): run %d on %s, from the start", model, strings.TrimSpace(v.Summary+" "+clipMessage(v.Message)), a.N, model)
		args = x.fresh(a, model)
		at, out, v = x.runAs(ctx, a, model, args, "")
	}
	if out.startErr != nil {
		x.res.Attempts = append(x.res.Attempts, at)
		return policy.Result{Verdict: v, NotSent: true, Detail: out}
	}
	if !out.interrupted && handled[v.Class] {
		what := model
		if what == "" {
			what = "the command"
		}
		// the driver says next what it does about it
		if v.Class == classify.Capacity {
			x.say("%s is at capacity", what)
		} else {
			x.say("%s failed: %s", what, v.Class)
		}
	}
	x.res.Attempts = append(x.res.Attempts, at)
	if v.Class != classify.OK && x.o.Archive != "" {
		archive(x.o, a.N, model, out, x.kind, x.session, x.sec, x.say)
	}
	return policy.Result{Verdict: v, Committed: v.Class == classify.OK, Detail: out}
}

// runAs runs args once and judges the run.
func (x *execution) runAs(ctx context.Context, a *policy.Attempt, model string, args []string, resumed string) (Attempt, runOut, classify.Verdict) {
	o, kind := x.o, x.kind
	started := time.Now()
	out := runOnce(ctx, o, args)
	at := Attempt{Model: model, ExitCode: out.code, Seconds: time.Since(started).Seconds(), WaitedS: a.Waited().Seconds(), Resumed: resumed}
	if out.startErr != nil {
		return at, out, classify.Verdict{Class: classify.Unknown, Message: out.startErr.Error()}
	}
	v := classify.Verdict{Class: classify.OK}
	switch {
	case out.interrupted:
		v = classify.Err(ctx.Err())
	case out.code != 0:
		v = judge(o.Engine.Classify, kind, out)
	case kind == Gemini:
		v = geminiCut(o.Engine.Classify, out)
	}
	// the verdict goes on to the driver, whose reason reaches the result,
	// a webhook and the queue: the sign-in is out of it
	v.Message = x.sec.String(v.Message)
	at.Class, at.Message = string(v.Class), v.Message
	if out.interrupted {
		at.Class = "interrupted"
	}
	if id := sessionOf(kind, args, out, o, started); id != "" {
		x.session = id
	}
	return at, out, v
}

// result is the execution's result once the driver ended with out.
func (x *execution) result(out policy.Outcome) Result {
	o, res := x.o, x.res
	last, _ := out.Result.Detail.(runOut)
	switch {
	case out.Committed:
		res.ExitCode, res.Class, res.Stdout = 0, "ok", last.stdout.String()
	case out.Err != nil:
		res.ExitCode, res.Class, res.Reason = 130, "interrupted", "interrupted"
		if !last.interrupted {
			res.Reason = "interrupted while waiting"
		}
	case !out.ParkUntil.IsZero():
		res.ExitCode, res.Class, res.Reason, res.ParkUntil, res.RungLeft, res.NextRung = ExitCapacity, string(classify.Capacity), out.Reason, out.ParkUntil, out.RungLeft, out.NextRung
		if out.Verdict.Class == classify.UsageLimit { // parked to a usage limit's reset
			res.ExitCode, res.Class, res.ResetsAt = ExitAuth, string(classify.UsageLimit), out.Verdict.ResetsAt
		}
	case last.startErr != nil:
		x.say("cannot run %s: %v", o.Command[0], last.startErr)
		res.ExitCode, res.Class, res.Reason = 127, "unknown", last.startErr.Error()
	default:
		res = finish(o, res, out, last, x.say)
	}
	return res
}

// DefaultResumePrompt is sent when a session is resumed and Options say
// no prompt of their own.
const DefaultResumePrompt = "Continue the task from where you left off."

// refusedHistory reports a provider's refusal of a conversation's history
// (the tool calls and results a resumed session holds), as against a
// request refused for another reason (a model name, a parameter).
func refusedHistory(msg string) bool {
	m := strings.ToLower(msg)
	for _, w := range []string{"function response parts", "function call turn", "tool_use", "tool_result", "tool_call", "thinking", "roles must alternate", "messages."} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
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

// handled are the classes exec retries or moves on from; when the driver
// gives up on one of them, spillway says why.
var handled = map[classify.Class]bool{classify.Capacity: true, classify.RateLimit: true, classify.Network: true,
	classify.Timeout: true, classify.ServerError: true, classify.ModelNotFound: true, classify.ContextLength: true, classify.UsageLimit: true}

func typeOf(k Kind) wire.Format {
	switch k {
	case Claude:
		return wire.Anthropic
	case Gemini:
		return wire.Gemini
	}
	return wire.OpenAI
}

// runOut is what one run of the agent left.
type runOut struct {
	code        int
	interrupted bool
	startErr    error
	stdout      *tail
	stderr      *tail
}

// killGrace is how long an interrupted agent has to exit on its own.
const killGrace = 5 * time.Second

// runOnce runs args with output passed through live and kept for judging.
// Ctrl-C (ctx) sends the child SIGINT, then kills it and everything it
// started once it exits or 5 s later.
func runOnce(ctx context.Context, o Options, args []string) runOut {
	out := runOut{stdout: newTail(1 << 20), stderr: newTail(1 << 20)}
	args, supervised, err := supervise(o, args)
	if err != nil {
		out.startErr = err
		return out
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = o.Stdin
	cmd.Stdout = io.MultiWriter(o.Stdout, out.stdout)
	cmd.Stderr = io.MultiWriter(o.Stderr, out.stderr)
	cmd.Env = o.Env
	cmd.Dir = o.Dir
	// A child that leaves its output pipes open (a server it started in the
	// background) must not keep exec waiting.
	cmd.WaitDelay = 5 * time.Second
	// In a pipeline or CI the agent gets a process group of its own, so that
	// Ctrl-C reaches every process it started. On a terminal it stays in the
	// foreground group: an interactive agent must be able to read the TTY,
	// and the terminal's Ctrl-C reaches it directly.
	group := !isTerminal(o.Stdin)
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if !group {
		// on a terminal the agent shares spillway's group: its orphans
		// are found as spillway's adopted children
		proc.BecomeSubreaper()
	}
	done, err := proc.Start(cmd, supervised)
	if err != nil {
		out.startErr = err
		return out
	}
	pid := cmd.Process.Pid
	start, _ := proc.StartTime(pid)
	if o.OnStart != nil {
		o.OnStart(pid)
	}
	target, sig := pid, syscall.SIGINT
	switch {
	case group:
		target = -target
	case supervised:
		// a supervisor on a terminal passes SIGINT on only when asked
		// (the terminal's Ctrl-C reached the agent already)
		sig = proc.InterruptSignal
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		out.interrupted = true
		err = interrupt(done, target, sig, pid, group, start)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		out.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.code = 128 + int(ws.Signal())
		}
	default:
		out.code = 1
	}
	return out
}

// supervise is args as runOnce starts them: under spillway's supervisor
// (Options.Supervisor) when there is one, the agent resolved by spillway's
// PATH, as exec.Command resolves it, so that one that cannot start says so
// (err) as before; args as they are, not supervised, otherwise.
func supervise(o Options, args []string) (_ []string, supervised bool, err error) {
	supervised = o.Supervisor != ""
	if _, err := os.Stat(o.Supervisor); supervised && err != nil {
		supervised = false // spillway's binary was replaced or removed since it started: the agent runs as its child
	}
	if !supervised {
		return args, false, nil
	}
	// (a path with a slash is the working directory's)
	agentPath := args[0]
	lookup := agentPath
	if strings.Contains(lookup, "/") && !filepath.IsAbs(lookup) && o.Dir != "" {
		lookup = filepath.Join(o.Dir, lookup)
	}
	lp, err := exec.LookPath(lookup)
	if err != nil {
		return nil, true, err
	}
	if !strings.Contains(agentPath, "/") {
		agentPath = lp
	}
	return proc.Supervised(o.Supervisor, append([]string{agentPath}, args[1:]...)), true, nil
}

// interrupt ends an agent run that Ctrl-C or SIGTERM interrupted: sig to
// target (the agent, or its group), then SIGKILL to it and everything it
// started once it exits or killGrace passes (a shell's background jobs
// ignore SIGINT and would outlive it). It returns the run's end (done's).
func interrupt(done <-chan error, target int, sig syscall.Signal, pid int, group bool, start uint64) (err error) {
	_ = syscall.Kill(target, sig)
	tick := time.NewTicker(50 * time.Millisecond)
	grace := time.After(killGrace)
wait:
	for {
		select {
		case err = <-done:
			proc.KillTree(pid, group, false, start)
			break wait
		case <-tick.C:
			if !proc.Running(pid) {
				// the agent is gone, and what it left holds its output
				// open: that goes now, not at the grace period's end
				proc.KillTree(pid, group, false, start)
			}
		case <-grace:
			proc.KillTree(pid, group, true, start)
			err = <-done
			break wait
		}
	}
	tick.Stop()
	if group {
		proc.ReapGroup(pid)
		proc.WaitGroupGone(pid, 2*time.Second)
	}
	return err
}

// errorLine picks the lines an agent itself prints about a failure, at the
// start of a line and in its own form: Codex's "ERROR: " and JSON error
// events, Claude Code's "API Error" and its JSON result (only with an
// api_error_status), Gemini CLI's "[API Error". Tool output echoed by the
// agent ("Error: EACCES …", a test log saying "timeout") never matches, so
// it can never be taken for a provider failure.
var errorLine = regexp.MustCompile(`^(ERROR: |API Error|\[API Error|Error when talking to Gemini API|Attempt \d+ failed: |\{"type":"(error|turn\.failed)"|\{"type":"result".*"api_error_status":[1-9])`)

// geminiCut judges a Gemini CLI run that exited 0: after a stream that
// ended without its finish reason it prints "[ERROR] Model stream ended
// without a finish reason." and exits 0 with the answer cut short. Only its
// own "[ERROR] " lines on stderr count, and only a failure exec handles (a
// safety block is the answer).
func geminiCut(classifier func(classify.Input) classify.Verdict, out runOut) classify.Verdict {
	for _, l := range strings.Split(out.stderr.String(), "\n") {
		if !strings.HasPrefix(l, "[ERROR] ") {
			continue
		}
		if v := classifier(classify.Input{Text: l, Provider: classify.Gemini}); handled[v.Class] && !v.Notice {
			return v
		}
	}
	return classify.Verdict{Class: classify.OK}
}

// judge classifies what a failed run printed.
func judge(classifier func(classify.Input) classify.Verdict, kind Kind, out runOut) classify.Verdict {
	best := classify.Verdict{Class: classify.Unknown}
	for _, t := range []*tail{out.stderr, out.stdout} {
		var lines []string
		for _, l := range strings.Split(t.String(), "\n") {
			if errorLine.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			continue
		}
		if len(lines) > 50 {
			lines = lines[len(lines)-50:]
		}
		v := classifier(classify.Input{Text: strings.Join(lines, "\n"), Provider: classify.Provider(typeOf(kind))})
		if v.Class != classify.Unknown && !v.Notice {
			return v
		}
	}
	return best
}

var (
	uuidRe   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	threadRe = regexp.MustCompile(`"type":"thread\.started","thread_id":"([^"]+)"`)
	claudeRe = regexp.MustCompile(`"session_id":"([^"]+)"`)
)

// sessionOf finds the session the run used: Codex's thread.started line
// (--json) or its newest rollout file; Claude's session_id (json output);
// for Gemini CLI the one its command line names, if it holds a turn to
// resume.
func sessionOf(kind Kind, args []string, out runOut, o Options, since time.Time) string {
	switch kind {
	case Gemini:
		id := flagValue(args, "--session-id", "--resume", "-r")
		if uuidRe.MatchString(id) && geminiResumable(geminiDir(o), id) {
			return id
		}
	case Codex:
		if m := threadRe.FindStringSubmatch(out.stdout.String()); m != nil {
			return m[1]
		}
		if f := newestRollout(codexHome(o), since); f != "" {
			return uuidRe.FindString(filepath.Base(f))
		}
	case Claude:
		if m := claudeRe.FindStringSubmatch(out.stdout.String()); m != nil {
			return m[1]
		}
	}
	return ""
}

func codexHome(o Options) string { return agentfiles.CodexHome(childEnv(o)) }

// newestRollout is the newest $CODEX_HOME/sessions/**/rollout-*.jsonl
// written since t.
func newestRollout(home string, since time.Time) string {
	best, bestT := "", since.Add(-2*time.Second)
	_ = filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "rollout-") || !strings.HasSuffix(d.Name(), ".jsonl") {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(bestT) {
			best, bestT = p, fi.ModTime()
		}
		return nil
	})
	return best
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

// isTerminal reports a terminal (not /dev/null, which is a character
// device too).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
