package agent

import (
	"encoding/json"
	"os"
	"regexp"

	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/wire"
)

// clineSpec is what exec knows of Cline 3.0.65 (see spec): `cline -m M
// "prompt"` runs headless (auto-approve by default, stdin not a
// terminal) on the provider it last used, through the AI SDK's
// OpenAI-compatible client (Chat Completions, streamed).
//
// No resume: `cline --id <session>` needs a terminal ("interactive mode
// requires a TTY"), so exec reruns it from the start on the next model.
//
// No failFast: Cline's requests go through the AI SDK with maxRetries 5,
// a constant no setting or variable changes (6 requests, 2+4+8+16+32 s
// apart, about a minute, unless the answer carries a retry-after under a
// minute, which the AI SDK honours); exec sees the failure after that.
var clineSpec = spec{
	names:      []string{"cline"},
	format:     wire.OpenAI,
	modelFlags: []string{"-m", "--model"},
	errorLine:  clineErrorLine,
	model:      &modelSource{find: clineDefaultModel},
}

// clineErrorLine is Cline's own failure line: "error: " (red on any
// output, a terminal or not) at the start of a line, as it prints a
// provider's error message on stderr before it exits 1, and with --json
// its {"ts":…,"type":"error"} line. Its tool output is printed indented
// after "⎿", so a command that prints "error: …" never matches.
var clineErrorLine = regexp.MustCompile(`^(\x1b\[[0-9;]*m)*error:(\x1b\[[0-9;]*m)* |^\{"ts":"[^"]*","type":"error"`)

// clineDefaultModel is the model in the providers.json Cline reads (where
// setup cline writes it: agentfiles.ClineSettingsPath) and that file.
func clineDefaultModel(getenv func(string) string) (model, path string) {
	path = agentfiles.ClineSettingsPath(getenv, "")
	if path == "" {
		return "", ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	return clineModel(b), path
}

// clineModel is the model of the provider Cline last used, in its
// providers.json (strict JSON, as Cline parses it).
func clineModel(b []byte) string {
	var f struct {
		LastUsedProvider string `json:"lastUsedProvider"`
		Providers        map[string]struct {
			Settings struct {
				Model string `json:"model"`
			} `json:"settings"`
		} `json:"providers"`
	}
	if json.Unmarshal(b, &f) != nil {
		return ""
	}
	return f.Providers[f.LastUsedProvider].Settings.Model
}
