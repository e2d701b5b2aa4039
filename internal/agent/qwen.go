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
	sys := env("QWEN_CODE_SYSTEM_SETTINGS_PATH")
	if sys == "" {
		switch runtime.GOOS {
		case "darwin":
			sys = "/Library/Application Support/QwenCode/settings.json"
		case "windows":
			sys = `C:\ProgramData\qwen-code\settings.json`
		default:
			sys = "/etc/qwen-code/settings.json"
		}
	}
	return filepath.Join(filepath.Dir(sys), "system-defaults.json")
}

// qwenSettingsVersion is the settings version Qwen Code 0.24.4 writes
// ($version): a file without it is rewritten by Qwen Code when it loads.
const qwenSettingsVersion = 4

// qwenFailFast gives Qwen Code model.generationConfig.maxRetries 0 as a
// system default of spillway's: a copy of the system defaults file Qwen
// Code would read (when there is one) with the setting added, in
// qwen/system-defaults.json of spillway's state directory, named by
// QWEN_CODE_SYSTEM_DEFAULTS_PATH. System defaults are the lowest layer
// of Qwen Code's settings: the user's own maxRetries in settings.json
// still wins, and nothing of the user's is touched. Nothing is done when
// the defaults already say. For a model of a modelProviders entry Qwen
// Code ignores model.generationConfig altogether: only the entry's own
// generationConfig.maxRetries (setup qwen writes 0) turns its retries off.
func qwenFailFast(o *Options) (env []string, cleanup func(), err error) {
	get := childEnv(*o)
	src := qwenSystemDefaults(get)
	settings := map[string]any{}
	if b, err := os.ReadFile(src); err == nil {
		if settings, err = parseQwenJSON(b); err != nil {
			return nil, nil, fmt.Errorf("Qwen Code cannot read its system defaults %s (%v), so spillway cannot add model.generationConfig.maxRetries 0 to them; Qwen Code retries a full model for minutes", src, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading Qwen Code's system defaults: %w", err)
	}
	m, _ := settings["model"].(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	g, _ := m["generationConfig"].(map[string]any)
	if g == nil {
		g = map[string]any{}
	}
	if _, set := g["maxRetries"]; set {
		return nil, nil, nil
	}
	g["maxRetries"] = 0
	m["generationConfig"] = g
	settings["model"] = m
	if _, ok := settings["$version"]; !ok {
		settings["$version"] = qwenSettingsVersion // else Qwen Code writes it in
	}
	state := events.StateDir(o.Getenv)
	if state == "" {
		return nil, nil, errors.New("spillway has no state directory for Qwen Code's system defaults (neither XDG_STATE_HOME nor HOME is set)")
	}
	dir := filepath.Join(state, "qwen")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	b = append(b, '\n')
	// a file of this run's own, renamed into place: a run reading it
	// never sees half of it, and parallel runs never one another's
	f, err := os.CreateTemp(dir, "system-defaults-*.json")
	if err != nil {
		return nil, nil, err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, nil, err
	}
	path := f.Name()
	return []string{"QWEN_CODE_SYSTEM_DEFAULTS_PATH=" + path}, func() { os.Remove(path) }, nil
}
