package agent

import (
	"context"
	"regexp"
	"time"

	"github.com/spillway/spillway/internal/wire"
)

// spec is what exec knows of an agent other than the first three (Codex
// CLI, Claude Code, Gemini CLI, whose knowledge predates it and lives in
// the switches of argv.go, resume.go, defaults.go and run.go): one value
// per agent, in that agent's own file. A nil field means the agent has no
// such thing.
type spec struct {
	// names are the agent's command names (KindOf).
	names []string
	// format is the wire format the agent speaks to the gateway, whose
	// words the classifier reads first.
	format wire.Format
	// modelFlags name the model on the command line, the first one added
	// when the command has none.
	modelFlags []string
	// modelValue is the flag's value for a model, given the value the
	// command had ("" for none): OpenCode keeps old's provider; nil: the
	// model as it is.
	modelValue func(old, model string) string
	// modelOf is the model a flag's value names (the inverse of
	// modelValue); nil: the value as it is.
	modelOf func(value string) string
	// flagAt is where an added model flag goes (after a subcommand); nil: 1.
	flagAt func(args []string) int
	// resume turns the command into one that continues session id ("" for
	// the agent's most recent, when continues) on model with prompt; ok
	// false when it cannot.
	resume func(args []string, id, model, prompt string) ([]string, bool)
	// continues: resume works without a session id (the agent's most
	// recent session in the directory, like Claude Code's --continue).
	continues bool
	// session finds the session a run used (from its output, its files).
	session func(ctx context.Context, args []string, out runOut, o Options, since time.Time) string
	// errorLine matches the lines the agent itself prints about a failed
	// request (never its tool output).
	errorLine *regexp.Regexp
	// failFast turns the agent's own retries of a capacity answer off,
	// unless the user set them: what it adds to the child's environment,
	// and what undoes it.
	failFast func(o *Options) (env []string, cleanup func(), err error)
	// model is where the agent keeps the model it runs (DefaultModel).
	model *modelSource
	// builtin is the agent's own default model, "" for none known.
	builtin string
}

// Agents added in wave 4.
const (
	OpenCode Kind = "opencode"
	Copilot  Kind = "copilot"
	Qwen     Kind = "qwen"
	Cline    Kind = "cline"
	Continue Kind = "cn"
)

// specs are the agents with a spec, each defined in its own file.
var specs = map[Kind]*spec{
	OpenCode: &opencodeSpec,
	Copilot:  &copilotSpec,
	Qwen:     &qwenSpec,
	Cline:    &clineSpec,
	Continue: &continueSpec,
}

// Kinds are every agent exec knows, in the order the docs list them.
var Kinds = []Kind{Codex, Claude, Gemini, OpenCode, Copilot, Qwen, Cline, Continue}

// specOf is k's spec, nil for the first three and Other.
func specOf(k Kind) *spec { return specs[k] }
