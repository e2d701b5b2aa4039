package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/wire"
)

// Qwen Code (0.24.4, a Gemini CLI fork) in its OpenAI-compatible mode
// (--auth-type openai, or security.auth.selectedType "openai") speaks Chat
// Completions. A capacity answer goes through three layers of its own
// retries: the OpenAI SDK's (model.generationConfig.maxRetries, 3 by
// default), then seven attempts with a backoff of 1.5 s up to 30 s
// (fixed), then its rate-limit loop that waits 60 s, 120 s … up to 5 min,
// maxRetries times (10 by default). model.generationConfig.maxRetries 0
// turns the first and the last off; the seven attempts stay, about 80 s in
// all (less when the provider sends a retry-after), after which Qwen Code
// prints "[API Error: 503 …]" and exits 1.
//
// It records each session as
// ~/.qwen/projects/<the directory, every character but letters and digits
// a dash>/chats/<session id>.jsonl ($QWEN_HOME in place of ~/.qwen);
// `qwen -r ID` resumes one, `qwen --continue` the directory's latest.
var qwenSpec = spec{
	names:      []string{"qwen"},
	format:     wire.OpenAI,
	modelFlags: []string{"-m", "--model"},
	resume:     qwenResume,
	session:    qwenSession,
	errorLine:  regexp.MustCompile(`^\[API Error: `),
	failFast:   qwenFailFast,
	model: &modelSource{dirEnv: "QWEN_HOME", homeDir: ".qwen", file: "settings.json", model: func(b []byte) string {
		s, _ := agentfiles.ParseQwenSettings(b)
		return agentfiles.QwenModel(s)
	}},
}

// qwenDir is Qwen Code's directory as the agent run sees it (a relative
// $QWEN_HOME taken from the run's directory).
func qwenDir(o Options) string {
	return agentfiles.QwenHome(childEnv(o), qwenRunDir(o))
}

// qwenRunDir is the directory the agent runs in: o.Dir, else spillway's
// current directory (absolute, its links resolved as the agent's
// process.cwd() has them); "" when it cannot be told.
func qwenRunDir(o Options) string {
	d := o.Dir
	if d == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ""
		}
		d = wd
	}
	d, err := filepath.Abs(d)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	return d
}

// qwenValueFlags are Qwen Code's flags (0.24.4) that take a value, so that
// the prompt (its positional argument) can be told from their values.
var qwenValueFlags = map[string]bool{
	"-m": true, "--model": true, "-p": true, "--prompt": true, "-i": true, "--prompt-interactive": true,
	"-r": true, "--resume": true, "--session-id": true, "-o": true, "--output-format": true,
	"--approval-mode": true, "--auth-type": true, "--max-wall-time": true, "--max-session-turns": true,
	"--max-tool-calls": true, "--max-subagent-depth": true, "--fallback-model": true, "--system-prompt": true,
	"--append-system-prompt": true, "--output-style": true, "--json-schema": true, "--input-file": true,
	"--channel": true, "--worktree": true, "--core-tools": true, "--exclude-tools": true, "--allowed-tools": true,
	"--include-directories": true, "-e": true, "--extensions": true, "--proxy": true, "--openai-api-key": true,
	"--openai-base-url": true, "--openai-logging-dir": true, "--tavily-api-key": true, "--telemetry-target": true,
	"--telemetry-otlp-endpoint": true, "--telemetry-otlp-protocol": true, "--telemetry-outfile": true,
	"--mcp-config": true, "--allowed-mcp-server-names": true, "--settings": true,
}

// qwenContinue are the bare flags that choose a session: its latest.
var qwenContinue = map[string]bool{"-c": true, "--continue": true, "--fork-session": true}

// qwenResume turns `qwen [flags] PROMPT` (or -p PROMPT) into
// `qwen [flags] -m MODEL -r ID PROMPT` (--continue without an id). The
// prompt is the last argument that is neither a flag nor a flag's value;
// a command with none cannot be resumed this way.
func qwenResume(args []string, id, model, prompt string) ([]string, bool) {
	out := dropFlags(args, map[string]bool{"-r": true, "--resume": true, "--session-id": true, "-m": true, "--model": true}, qwenContinue)
	at := -1
	for i := 1; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			name, _, hasEq := strings.Cut(a, "=")
			if (name == "-p" || name == "--prompt") && !hasEq && i+1 < len(out) {
				at = i + 1
			}
			if qwenValueFlags[name] && !hasEq {
				i++
			}
			continue
		}
		at = i
	}
	if v, ok := cutPromptEq(out); ok && at < 0 {
		at = v
	}
	if at < 0 {
		return nil, false
	}
	out = append([]string{}, out...)
	if strings.HasPrefix(out[at], "--prompt=") {
		out[at] = "--prompt=" + prompt
	} else {
		out[at] = prompt
	}
	// (the model flag replaced by hand: WithModel consults the specs,
	// of which this is one)
	out = append(out[:1:1], append([]string{"-m", model}, out[1:]...)...)
	if id == "" || id == qwenLatest {
		return append(out, "--continue"), true
	}
	return append(out, "-r", id), true
}

// cutPromptEq finds a --prompt=TEXT argument.
func cutPromptEq(args []string) (int, bool) {
	for i := 1; i < len(args); i++ {
		if strings.HasPrefix(args[i], "--prompt=") {
			return i, true
		}
	}
	return -1, false
}

// qwenLatest is the session qwenSession reports when it could not look
// (no Qwen Code directory, no run directory): the run's resume is then
// --continue, the directory's latest session.
const qwenLatest = "--continue"

// qwenSession is the session a run used: the one its command line names
// (-r, --resume, --session-id), else the newest chat file of the run
// directory's project written since the run started ("" for none: the
// next run starts over); qwenLatest when it could not look.
func qwenSession(_ context.Context, args []string, _ runOut, o Options, since time.Time) string {
	if id := flagValue(args, "--session-id", "--resume", "-r"); uuidRe.MatchString(id) {
		return id
	}
	dir, wd := qwenDir(o), qwenRunDir(o)
	if dir == "" || wd == "" {
		return qwenLatest
	}
	f := newestSince(filepath.Join(dir, "projects", qwenProject(wd), "chats"), since, func(name string) bool {
		id, ok := strings.CutSuffix(name, ".jsonl")
		return ok && uuidRe.MatchString(id)
	})
	if f == "" {
		return ""
	}
	return strings.TrimSuffix(filepath.Base(f), ".jsonl")
}

// qwenProject is the name of Qwen Code's folder for the sessions of
// directory dir (sanitizeCwd): every character but ASCII letters and
// digits a dash, one per UTF-16 unit as JavaScript counts them (on
// Windows, of the path in lower case).
func qwenProject(dir string) string {
	if runtime.GOOS == "windows" {
		dir = strings.ToLower(dir)
	}
	var b strings.Builder
	for _, c := range dir {
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9':
			b.WriteRune(c)
		case c > 0xFFFF:
			b.WriteString("--")
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// qwenSystemDefaults is the path of Qwen Code's system defaults file as
// it reads it (getSystemDefaultsPath): $QWEN_CODE_SYSTEM_DEFAULTS_PATH, else
// system-defaults.json beside its system settings file
// ($QWEN_CODE_SYSTEM_SETTINGS_PATH, else the platform's).
func qwenSystemDefaults(env func(string) string) string {
	if p := env("QWEN_CODE_SYSTEM_DEFAULTS_PATH"); p != "" {
		return p
	}
	return filepath.Join(filepath.Dir(qwenSystemSettings(env)), "system-defaults.json")
}

// qwenFailFast turns Qwen Code's SDK retries and its long rate-limit loop
// off (model.generationConfig.maxRetries 0) for the run, in files of
// spillway's (its state directory's qwen/), never the user's:
//
//   - as a system default (QWEN_CODE_SYSTEM_DEFAULTS_PATH: a copy of the
//     system defaults Qwen Code would read, with the setting added), the
//     lowest layer of its settings, so the user's own maxRetries in
//     settings.json still wins;
//   - for the models of modelProviders entries, for which Qwen Code ignores
//     model.generationConfig altogether: when an entry in force has no
//     generationConfig.maxRetries of its own, a system settings file
//     (QWEN_CODE_SYSTEM_SETTINGS_PATH: a copy of the one Qwen Code would
//     read) whose modelProviders are those in force (the system's, else
//     the user's; modelProviders are replaced whole, never merged, from
//     scope to scope) with maxRetries 0 added to each entry without one.
//     A project's own .qwen/settings.json with modelProviders is left to
//     Qwen Code (whether it trusts the folder is its business).
//
// Nothing is done where the settings already say.
func qwenFailFast(o *Options) (env []string, cleanup func(), err error) {
	get := childEnv(*o)
	now := time.Now
	if o.Engine != nil {
		now = o.Engine.Clock().Now
	}
	if state := events.StateDir(o.Getenv); state != "" {
		removeStaleQwen(filepath.Join(state, "qwen"), now())
	}
	var made []string
	cleanup = func() {
		for _, f := range made {
			os.Remove(f)
		}
	}
	write := func(name string, settings map[string]any) (string, error) {
		if _, ok := settings["$version"]; !ok {
			settings["$version"] = agentfiles.QwenSettingsVersion // else Qwen Code writes it in
		}
		state := events.StateDir(o.Getenv)
		if state == "" {
			return "", errors.New("spillway has no state directory for Qwen Code's settings (neither XDG_STATE_HOME nor HOME is set)")
		}
		dir := filepath.Join(state, "qwen")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		b, _ := json.MarshalIndent(settings, "", "  ")
		// a file of this run's own: parallel runs never read one another's
		f, err := os.CreateTemp(dir, name+"-*.json")
		if err != nil {
			return "", err
		}
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
			return "", err
		}
		made = append(made, f.Name())
		return f.Name(), nil
	}
	fail := func(err error) ([]string, func(), error) { cleanup(); return nil, func() {}, err }

	defaultsPath := qwenSystemDefaults(get)
	defaults, err := readQwenSettings(defaultsPath, "system defaults")
	if err != nil {
		return fail(err)
	}
	if addMaxRetries(defaults, "model", "generationConfig") {
		path, err := write("system-defaults", defaults)
		if err != nil {
			return fail(err)
		}
		env = append(env, "QWEN_CODE_SYSTEM_DEFAULTS_PATH="+path)
	}

	sysPath := qwenSystemSettings(get)
	system, err := readQwenSettings(sysPath, "system settings")
	if err != nil {
		return fail(err)
	}
	providers, ok := system["modelProviders"].(map[string]any)
	if !ok {
		wd := qwenRunDir(*o)
		if wd == "" {
			return fail(errors.New("spillway cannot tell the directory Qwen Code runs in, so it cannot tell whether the project's .qwen/settings.json has modelProviders of its own"))
		}
		if w, _ := readQwenSettings(filepath.Join(wd, ".qwen", "settings.json"), ""); w["modelProviders"] != nil {
			return env, cleanup, nil
		}
		user, _ := readQwenSettings(filepath.Join(qwenDir(*o), "settings.json"), "")
		providers, _ = user["modelProviders"].(map[string]any)
	}
	changed := false
	for _, list := range providers {
		entries, _ := list.([]any)
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok && addMaxRetries(m, "generationConfig") {
				changed = true
			}
		}
	}
	if changed {
		system["modelProviders"] = providers
		path, err := write("system-settings", system)
		if err != nil {
			return fail(err)
		}
		env = append(env, "QWEN_CODE_SYSTEM_SETTINGS_PATH="+path)
		if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "QWEN_CODE_SYSTEM_DEFAULTS_PATH=") }) {
			// the defaults stay where they were (Qwen Code looks beside
			// the system settings otherwise)
			env = append(env, "QWEN_CODE_SYSTEM_DEFAULTS_PATH="+defaultsPath)
		}
	}
	return env, cleanup, nil
}

// removeStaleQwen removes from dir the copies of Qwen Code's system files
// (system-defaults-*.json, system-settings-*.json) of runs that ended
// without their cleanup (a spillway killed): those more than a day old
// at now. A copy may hold security.auth.apiKey.
func removeStaleQwen(dir string, now time.Time) {
	files, _ := filepath.Glob(filepath.Join(dir, "system-*-*.json"))
	for _, f := range files {
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() && now.Sub(fi.ModTime()) > 24*time.Hour {
			os.Remove(f)
		}
	}
}

// qwenSystemSettings is the path of Qwen Code's system settings file as
// it reads it (getSystemSettingsPath).
func qwenSystemSettings(env func(string) string) string {
	if p := env("QWEN_CODE_SYSTEM_SETTINGS_PATH"); p != "" {
		return p
	}
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/QwenCode/settings.json"
	case "windows":
		return `C:\ProgramData\qwen-code\settings.json`
	}
	return "/etc/qwen-code/settings.json"
}

// readQwenSettings reads a settings file of Qwen Code's; none is empty
// settings. what, when set, names it in the error for a file Qwen Code
// cannot read (else such a file is empty settings too).
func readQwenSettings(path, what string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || err != nil && what == "" {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Qwen Code's %s: %w", what, err)
	}
	s, err := agentfiles.ParseQwenSettings(b)
	if err != nil {
		if what == "" {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("Qwen Code cannot read its %s %s (%v), so spillway cannot add maxRetries 0 to them; Qwen Code retries a full model for minutes", what, path, err)
	}
	return s, nil
}

// addMaxRetries sets maxRetries 0 in the object at path below m (made
// where missing) unless it has one; it reports whether it set it.
func addMaxRetries(m map[string]any, path ...string) bool {
	for _, k := range path {
		sub, ok := m[k].(map[string]any)
		if !ok {
			if m[k] != nil {
				return false // not an object: Qwen Code's to complain about
			}
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	if _, set := m["maxRetries"]; set {
		return false
	}
	m["maxRetries"] = 0
	return true
}
