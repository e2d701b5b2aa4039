package agent

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/cloud"
	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/send"
	"github.com/spillway/spillway/policy"
)

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
	// rt sends the checks of a long rung: a cloud provider's signed with
	// spillway's own cloud credentials
	rt http.RoundTripper
}

// newExecution is the execution of o: the child's environment without
// spillway's own secrets, and the events and words without the agent's
// sign-in.
func newExecution(o Options) *execution {
	x := &execution{kind: KindOf(o.Command[0]), stopCountdown: func() {}}
	if o.Engine != nil {
		x.rt = cloud.NewTransport(http.DefaultTransport, o.Engine.Clock())
	}
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
	return send.Room(ctx, x.rt, x.o.Config, cand, x.o.Engine.Classify)
}

// fresh is the command run from the start on model (Gemini CLI given a
// session id of its own, to resume if the run gets somewhere).
func (x *execution) fresh(a *policy.Attempt, model string) []string {
	o := x.o
	args := o.Command
	if model != "" {
		var ok bool
		if args, ok = WithModel(o.Command, model); !ok && a.N == 1 && len(x.models) > 1 {
			why := "no {model} placeholder, not a known agent"
			if x.kind != Other {
				why = "no {model} placeholder, and " + string(x.kind) + " has no model flag exec can set (see docs/agents.md)"
			}
			x.say("cannot set the model of %q (%s): reruns use the same command", o.Command[0], why)
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
	if (o.Resume || afterReset) && a.N > 1 && (x.session != "" || x.kind == Claude || (specOf(x.kind) != nil && specOf(x.kind).continues)) {
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
	if id := sessionOf(ctx, kind, args, out, o, started); id != "" {
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
