package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

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
// It writes a session (~/.continue/sessions/<uuid>.json, under
// $CONTINUE_GLOBAL_DIR when set) only once the session holds something: a
// run that failed on its first request leaves none, and its --resume
// would then resume an older, unrelated session (the most recent file of
// all). So exec finds the session a run wrote (session) and continues
// that one with --fork <id>, which cn runs headless (a copy of the
// session with the new prompt after its history).
var continueSpec = spec{
	names:     []string{"cn"},
	format:    wire.OpenAI,
	resume:    continueResume,
	session:   continueSession,
	errorLine: continueErrorLine,
	model: &modelSource{dirEnv: "CONTINUE_GLOBAL_DIR", homeDir: ".continue", file: "config.yaml",
		model: ContinueChatModel},
}

// continueErrorLine is the line cn -p prints (to stderr) when its request
// failed for good: {"status":"error","message":"503 Our servers are …"}.
var continueErrorLine = regexp.MustCompile(`^\{"status":"error"`)

// continueValueFlags are cn's flags that take a value (1.5.47's --help).
var continueValueFlags = map[string]bool{"--config": true, "--org": true, "--rule": true, "--mcp": true,
	"--model": true, "--prompt": true, "--allow": true, "--ask": true, "--exclude": true, "--agent": true,
	"--format": true, "--fork": true}

// continueSubcommands are cn's commands; a command line with one is not a
// prompt run.
var continueSubcommands = map[string]bool{"ls": true, "checks": true, "review": true, "serve": true,
	"login": true, "logout": true, "remote": true}

// continuePromptAt is the index of cn's prompt (its one positional
// argument), -1 when there is none.
func continuePromptAt(args []string) int {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		case strings.HasPrefix(a, "-"):
			name, _, hasEq := strings.Cut(a, "=")
			if continueValueFlags[name] && !hasEq {
				i++
			}
		default:
			return i
		}
	}
	return -1
}

// continueResume continues session id with prompt: cn's own session
// flags dropped, the {model} placeholder (if any) set, the prompt
// replaced (or added) and --fork id added. cn cannot resume without an id
// that exec found (see continueSpec), nor outside a -p run.
func continueResume(args []string, id, model, prompt string) ([]string, bool) {
	if id == "" || !hasFlag(args, "-p", "--print") {
		return nil, false
	}
	if at := continuePromptAt(args); at > 0 && continueSubcommands[args[at]] {
		return nil, false
	}
	out := dropFlags(args, map[string]bool{"--fork": true}, map[string]bool{"--resume": true})
	for i, a := range out { // WithModel's placeholder: cn has no model flag
		out[i] = strings.ReplaceAll(a, "{model}", model)
	}
	if at := continuePromptAt(out); at > 0 {
		out[at] = prompt
	} else {
		out = append(out, prompt)
	}
	return append(out, "--fork", id), true
}

// hasFlag reports whether one of the bare flags names is on the command
// line.
func hasFlag(args []string, names ...string) bool {
	for _, a := range args[1:] {
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

// continueSession is the session the run wrote: the newest session file
// under cn's sessions directory written since the run began, "" for none
// (a run that failed on its first request writes none).
func continueSession(_ []string, _ runOut, o Options, since time.Time) string {
	env := childEnv(o)
	dir := env("CONTINUE_GLOBAL_DIR")
	if dir == "" {
		home := env("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".continue")
	}
	return newestContinueSession(filepath.Join(dir, "sessions"), since)
}

// newestContinueSession is the id of the newest <uuid>.json in dir
// modified at or after since (to the second: file times may be coarse).
func newestContinueSession(dir string, since time.Time) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	best, bestT := "", since.Truncate(time.Second).Add(-time.Nanosecond)
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || !uuidRe.MatchString(id) || len(id) != 36 {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().After(bestT) {
			best, bestT = id, fi.ModTime()
		}
	}
	return best
}

// ContinueChatModel is the model cn runs from config.yaml's bytes b: the
// `model` of the first entry of models with the chat role or with no
// roles, "" when there is none (or b is not YAML).
func ContinueChatModel(b []byte) string {
	var c struct {
		Models []struct {
			Model string   `yaml:"model"`
			Roles []string `yaml:"roles"`
			Uses  string   `yaml:"uses"`
		} `yaml:"models"`
	}
	if yaml.Unmarshal(b, &c) != nil {
		return ""
	}
	for _, m := range c.Models {
		if m.Uses != "" {
			return "" // a block of the hub's: its model is not in the file
		}
		if m.Roles == nil || slices.Contains(m.Roles, "chat") {
			return m.Model
		}
	}
	return ""
}
