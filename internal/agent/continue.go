package agent

import (
	"regexp"

	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/wire"
)

// Continue's CLI, cn 1.5.47 (@continuedev/cli), as exec knows it.
//
// Its model lives in its configuration (~/.continue/config.yaml, or the
// file --config names): the first model with the chat role (or with no
// roles) runs, unless the user picked another in its TUI (kept in
// ~/.continue/index/globalContext.json as cliSelectedModel). Its --model
// flag takes a hub slug, not a model's name, and adds a model after the
// configuration's own, so it does not choose one: cn has no flag that
// names the model. exec reruns cn on another model through a {model}
// placeholder in the command (`cn -p --config ~/.continue/{model}.yaml
// …`, a file per model); with `spillway setup continue` cn speaks to the
// gateway, whose chains move from model to model without exec.
//
// cn retries a 429, 502, 503 or 504 (and any error saying "overloaded")
// ten times with backoff from 1 s to 30 s, each through the OpenAI SDK's
// own two retries: 33 requests over about 130 s before it exits 1. Both
// are fixed in its code; no setting or environment variable of 1.5.47
// turns them off, so the spec has no failFast.
//
// It saves a session (~/.continue/sessions/<uuid>.json, under
// $CONTINUE_GLOBAL_DIR when set) only when a turn ends well: a run that
// failed, even in the middle of its tool loop, leaves none (observed), and
// its --resume would then resume an older, unrelated session (the most
// recent file of all). So exec cannot resume cn: it reruns the command
// from the start (resume and session nil).
var continueSpec = spec{
	names:     []string{"cn"},
	format:    wire.OpenAI,
	errorLine: continueErrorLine,
	model: &modelSource{dirEnv: "CONTINUE_GLOBAL_DIR", homeDir: ".continue", file: "config.yaml",
		model: ContinueChatModel},
}

// continueErrorLine is the line cn -p prints (to stderr) when its request
// failed for good: {"status":"error","message":"503 Our servers are …"}.
var continueErrorLine = regexp.MustCompile(`^\{"status":"error"`)

// ContinueChatModel is the model cn runs from config.yaml's bytes b (the
// first chat entry's, agentfiles.ContinueFirstChat); "" when there is
// none, when it is a block of the hub's (uses:), or when b is not YAML.
func ContinueChatModel(b []byte) string {
	m, _ := agentfiles.ContinueFirstChat(b)
	return m.Model
}
