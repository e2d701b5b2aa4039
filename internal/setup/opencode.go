package setup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spillway/spillway/internal/agentfiles"
)

// OpenCodeProvider is the id of the custom provider setup opencode writes:
// OpenCode then runs `opencode run -m spillway/<model>`.
const OpenCodeProvider = "spillway"

// openCodeFile is OpenCode's global configuration as setup merges into it.
var openCodeFile = JSONFile{Agent: "OpenCode", File: "opencode.json", Command: "spillway setup opencode", Parse: agentfiles.ParseOpenCodeConfig}

// OpenCodeSettings are what OpenCode needs to reach the gateway at base: a
// custom provider "spillway" of the @ai-sdk/openai-compatible package
// (Chat Completions), its baseURL the gateway's /v1, its apiKey the value
// of the variable envKey ({env:VAR}, which OpenCode replaces when it reads
// the file: the key itself is never written), and each model by name (a
// model OpenCode is to run with -m spillway/<model> must be listed). Each
// model gets only its name, so settings of the user's own on a model stay.
func OpenCodeSettings(base, envKey string, models []string) map[string]any {
	ms := map[string]any{}
	for _, m := range models {
		ms[m] = map[string]any{"name": m}
	}
	return map[string]any{"provider": map[string]any{OpenCodeProvider: map[string]any{
		"npm":  "@ai-sdk/openai-compatible",
		"name": "Spillway",
		"options": map[string]any{
			"baseURL": BaseURL(base) + "/v1",
			"apiKey":  "{env:" + envKey + "}",
		},
		"models": ms,
	}}}
}

// ApplyOpenCode merges settings (OpenCodeSettings) into existing (the
// opencode.json or opencode.jsonc OpenCode has, or nothing), keeping every
// other byte; a file OpenCode cannot read is refused, and the result is read
// back as OpenCode reads it (JSONC) before it is returned.
func ApplyOpenCode(existing []byte, settings map[string]any) ([]byte, error) {
	return openCodeFile.Apply(existing, settings)
}

// OpenCodeFile is the file of OpenCode's configuration directory dir that
// setup merges into: opencode.jsonc when there is one (OpenCode reads it
// last, so it wins), else opencode.json.
func OpenCodeFile(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "opencode.jsonc")); err == nil {
		return "opencode.jsonc"
	}
	return "opencode.json"
}

// WriteOpenCode merges settings into dir's OpenCodeFile (dir: see
// agentfiles.OpenCodeConfigDir), keeping the old file as
// <file>.spillway-backup-<time>. It returns the file and the backup (""
// when there was none or nothing changed).
func WriteOpenCode(dir string, settings map[string]any, now time.Time) (path, backup string, err error) {
	if dir == "" {
		return "", "", errors.New("no OpenCode configuration directory: set XDG_CONFIG_HOME or HOME, or give --config-dir")
	}
	f := openCodeFile
	f.File = OpenCodeFile(dir)
	return writeMerged(dir, f.File, now, func(old []byte) ([]byte, error) { return f.Apply(old, settings) })
}

// OpenCodeState says whether OpenCode is set up for spillway: "api key"
// when a global configuration file OpenCode can read defines the spillway
// provider (its key from a variable, {env:VAR}), "" otherwise; where is
// that file. getenv is the environment setup runs in.
func OpenCodeState(getenv func(string) string) (state, where string) {
	dir := agentfiles.OpenCodeConfigDir(getenv)
	if dir == "" {
		return "", ""
	}
	// the later file wins, as OpenCode merges them
	cs := agentfiles.OpenCodeConfigs(dir)
	for _, c := range slices.Backward(cs) {
		providers, _ := c.Config["provider"].(map[string]any)
		if _, ok := providers[OpenCodeProvider].(map[string]any); ok {
			return "api key", c.Path
		}
	}
	return "", ""
}
