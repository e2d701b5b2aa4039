package agent

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // OpenCode's opencode.db, read only

	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/wire"
)

// OpenCode (1.18) runs headless as `opencode run [flags] MESSAGE…`, its
// model named provider/model (-m spillway/gpt-6-astra with the provider
// spillway setup opencode writes). It speaks Chat Completions to a custom
// @ai-sdk/openai-compatible provider.
//
// Its own retries of a capacity answer cannot be turned off: a 5xx or an
// "overloaded" answer is retried 5 times (2, 4, 8, 16, 30 s apart: about a
// minute) unless the answer carries retry-after-ms or retry-after, which it
// waits instead; no setting or variable changes the count. So failFast is
// nil: exec pointed straight at a provider sees a full model after those
// retries (the gateway, in front, has walked the chain already).
var opencodeSpec = spec{
	names:      []string{"opencode"},
	format:     wire.OpenAI,
	modelFlags: []string{"-m", "--model"},
	modelValue: opencodeModelValue,
	modelOf:    opencodeModelOf,
	flagAt:     opencodeFlagAt,
	resume:     opencodeResume,
	session:    opencodeSession,
	// its own failure line on stderr: "Error: " in bold bright red (with
	// or without NO_COLOR), or the error event of --format json; the
	// output of its tools is printed plain, so never matches
	errorLine: regexp.MustCompile(`^(\x1b\[91m\x1b\[1mError: |\{"type":"error")`),
	model:     &modelSource{find: opencodeDefaultModel},
}

// opencodeDefaultModel is the model OpenCode's global configuration names
// (config.json, opencode.json, opencode.jsonc: the last that sets "model"
// wins): the model id of spillway's provider, or provider/model whole for
// another provider's, which is then no model of spillway's configuration.
func opencodeDefaultModel(getenv func(string) string) (model, path string) {
	m, path := agentfiles.OpenCodeModel(agentfiles.OpenCodeConfigDir(getenv))
	if id, ok := strings.CutPrefix(m, "spillway/"); ok {
		return id, path
	}
	return m, path
}

// opencodeModelValue is -m's value for model in place of old: old's
// provider and the model (exec run straight against the user's provider
// keeps it), spillway's provider when old named none. The provider is
// always written, so a model id holding "/" (meta/llama) is never read as
// a provider of its own.
func opencodeModelValue(old, model string) string {
	provider, _, ok := strings.Cut(old, "/")
	if !ok || provider == "" {
		provider = "spillway"
	}
	return provider + "/" + model
}

// opencodeModelOf is the model of -m's provider/model (the model id is
// everything after the provider's name, slashes and all).
func opencodeModelOf(value string) string {
	if _, m, ok := strings.Cut(value, "/"); ok {
		return m
	}
	return value
}

// opencodeFlagAt puts an added -m after the run subcommand.
func opencodeFlagAt(args []string) int {
	if i := slices.Index(args, "run"); i > 0 {
		return i + 1
	}
	return 1
}

// opencodeRunValueFlags are the flags of `opencode run` (1.18.33) that take
// a value; the others are booleans.
var opencodeRunValueFlags = map[string]bool{
	"--log-level": true, "--command": true, "-s": true, "--session": true, "-m": true, "--model": true,
	"--agent": true, "--format": true, "-f": true, "--file": true, "--title": true, "--attach": true,
	"-p": true, "--password": true, "-u": true, "--username": true, "--dir": true, "--port": true, "--variant": true,
}

// opencodeContinue is the session opencodeSession reports when it could
// not look (no data directory, a database it could not query): the run
// then resumes with --continue, the directory's most recent session.
// When it looked and found none, the run left no session, and the next
// one starts over: --continue would pick up an older, unrelated session.
const opencodeContinue = "--continue"

// opencodeResume turns `opencode run [flags] MESSAGE…` into `opencode run
// [flags] -m MODEL --session ID PROMPT` (--continue, its most recent
// session, when id is opencodeContinue): the message words are replaced by
// prompt, the model and session flags by the new ones, the model keeping
// the provider the command named. Only run resumes headlessly.
func opencodeResume(args []string, id, model, prompt string) ([]string, bool) {
	at := slices.Index(args, "run")
	if at < 1 || id == "" {
		return nil, false
	}
	old := flagValue(args[at:], "-m", "--model")
	out := slices.Clone(args[:at+1])
	rest := args[at+1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break // the message follows
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // a word of the message
		}
		name, _, hasEq := strings.Cut(a, "=")
		switch {
		case name == "-s" || name == "--session" || name == "-c" || name == "--continue" || name == "--fork" || name == "-m" || name == "--model":
			if opencodeRunValueFlags[name] && !hasEq {
				i++
			}
		case opencodeRunValueFlags[name] && !hasEq:
			if i+1 < len(rest) {
				out = append(out, a, rest[i+1])
				i++
			}
		default:
			out = append(out, a)
		}
	}
	out = append(out, "-m", opencodeModelValue(old, model))
	if id == opencodeContinue {
		out = append(out, "--continue")
	} else {
		out = append(out, "--session", id)
	}
	return append(out, prompt), true
}

// opencodeSessionRe is the session id in --format json's events.
var opencodeSessionRe = regexp.MustCompile(`"sessionID":"(ses_[A-Za-z0-9]+)"`)

// opencodeSession finds the session a run used: from --format json's
// events, else from OpenCode's opencode.db (the newest top-level session
// of the run's directory updated since the run started); "" when it
// looked and there is none, opencodeContinue when it could not look.
// OpenCode keeps the user's message of a run whose request failed, so any
// such session can be resumed.
func opencodeSession(ctx context.Context, args []string, out runOut, o Options, since time.Time) string {
	if m := opencodeSessionRe.FindStringSubmatch(out.stdout.String()); m != nil {
		return m[1]
	}
	env := childEnv(o)
	db := env("OPENCODE_DB")
	if db == "" || !filepath.IsAbs(db) {
		dir := agentfiles.OpenCodeDataDir(env)
		if dir == "" {
			return opencodeContinue
		}
		name := "opencode.db"
		if db != "" {
			name = db
		}
		db = filepath.Join(dir, name)
	}
	wd := flagValue(args, "--dir")
	if wd == "" {
		wd = o.Dir
	}
	if wd == "" {
		wd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(wd); err == nil {
		wd = abs
	}
	return opencodeNewestSession(ctx, db, wd, since)
}

// opencodeNewestSession is the id of the newest top-level session of
// directory dir in the database at path updated since t: "" for none (no
// database: OpenCode wrote no session at all), opencodeContinue when the
// database could not be queried (locked, say).
func opencodeNewestSession(ctx context.Context, path, dir string, since time.Time) string {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return ""
	} else if err != nil {
		return opencodeContinue
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return opencodeContinue
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // (the run's, bounded: a locked database)
	defer cancel()
	var id string
	err = db.QueryRowContext(ctx, "SELECT id FROM session WHERE directory = ? AND parent_id IS NULL AND time_updated >= ? ORDER BY time_updated DESC LIMIT 1",
		dir, since.Add(-2*time.Second).UnixMilli()).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ""
	case err != nil:
		return opencodeContinue
	}
	return id
}
