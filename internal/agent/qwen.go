package agent

import (
	"bytes"
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
	continues:  true,
	session:    qwenSession,
	errorLine:  regexp.MustCompile(`^\[API Error: `),
	failFast:   qwenFailFast,
	model: &modelSource{dirEnv: "QWEN_HOME", homeDir: ".qwen", file: "settings.json", model: func(b []byte) string {
		s, _ := parseQwenJSON(b)
		m, _ := s["model"].(map[string]any)
		name, _ := m["name"].(string)
		return name
	}},
}

// qwenDir is Qwen Code's directory as the agent sees it: $QWEN_HOME (with
// ~ and a relative path resolved as Qwen Code resolves them), else
// ~/.qwen.
func qwenDir(o Options) string {
	env := childEnv(o)
	if d := env("QWEN_HOME"); d != "" {
		if d == "~" || strings.HasPrefix(d, "~/") {
			d = filepath.Join(env("HOME"), strings.TrimPrefix(d[1:], "/"))
		}
		if !filepath.IsAbs(d) && o.Dir != "" {
			d = filepath.Join(o.Dir, d)
		}
		return d
	}
	if h := env("HOME"); h != "" {
		return filepath.Join(h, ".qwen")
	}
	return ""
}

// parseQwenJSON reads a settings file as Qwen Code's loader does: a
// leading byte order mark dropped, comments blanked (strip-json-comments),
// then strict JSON with an object at the top.
func parseQwenJSON(b []byte) (map[string]any, error) {
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	var v any
	if err := json.Unmarshal(agentfiles.StripJSONComments(b), &v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
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
	if id != "" {
		return append(out, "-r", id), true
	}
	return append(out, "--continue"), true
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

// qwenSession is the session a run used: the one its command line names
// (-r, --resume, --session-id), else the newest session file written
// since the run started.
func qwenSession(args []string, _ runOut, o Options, since time.Time) string {
	if id := flagValue(args, "--session-id", "--resume", "-r"); uuidRe.MatchString(id) {
		return id
	}
	dir := qwenDir(o)
	if dir == "" {
		return ""
	}
	best, bestT := "", since.Add(-2*time.Second)
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "chats", "*.jsonl"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().After(bestT) {
			if id := strings.TrimSuffix(filepath.Base(f), ".jsonl"); uuidRe.MatchString(id) {
				best, bestT = id, fi.ModTime()
			}
		}
	}
	return best
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

// qwenSettingsVersion is the settings version Qwen Code 0.24.4 writes
// ($version): a file without it is rewritten by Qwen Code when it loads.
const qwenSettingsVersion = 4

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
	var made []string
	cleanup = func() {
		for _, f := range made {
			os.Remove(f)
		}
	}
	write := func(name string, settings map[string]any) (string, error) {
		if _, ok := settings["$version"]; !ok {
			settings["$version"] = qwenSettingsVersion // else Qwen Code writes it in
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
		if o.Dir != "" {
			if w, _ := readQwenSettings(filepath.Join(o.Dir, ".qwen", "settings.json"), ""); w["modelProviders"] != nil {
				return env, cleanup, nil
			}
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
	s, err := parseQwenJSON(b)
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
