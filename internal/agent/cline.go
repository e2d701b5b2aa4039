package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
// Its own retries stay: Cline's requests go through the AI SDK with maxRetries 5,
// a constant no setting or variable changes (6 requests, 2+4+8+16+32 s
// apart, about a minute, unless the answer carries a retry-after under a
// minute, which the AI SDK honours); exec sees the failure after that.
// Its failFast hook keeps the user's settings instead (see
// clineKeepSettings).
var clineSpec = spec{
	names:      []string{"cline"},
	format:     wire.OpenAI,
	modelFlags: []string{"-m", "--model"},
	errorLine:  clineErrorLine,
	failFast:   clineKeepSettings,
	model:      &modelSource{find: clineDefaultModel},
}

// clineErrorLine is Cline's own failure line: "error: " (red on any
// output, a terminal or not) at the start of a line, as it prints a
// provider's error message on stderr before it exits 1, and with --json
// its {"ts":…,"type":"error"} line. Its tool output is printed indented
// after "⎿", so a command that prints "error: …" never matches.
var clineErrorLine = regexp.MustCompile(`^(\x1b\[[0-9;]*m)*error:(\x1b\[[0-9;]*m)* |^\{"ts":"[^"]*","type":"error"`)

// clineKeepSettings keeps the bytes of the providers.json Cline reads and
// gives back what puts them back: `cline -m MODEL` saves MODEL as the
// entry's model, so exec's reruns on the chain's next models would leave
// the user's Cline on the last one. No file, nothing to keep.
func clineKeepSettings(o *Options) ([]string, func(), error) {
	config := flagValue(o.Command, "--config")
	if config != "" && !filepath.IsAbs(config) && o.Dir != "" {
		config = filepath.Join(o.Dir, config)
	}
	path := agentfiles.ClineSettingsPath(childEnv(*o), config)
	if path == "" {
		return nil, nil, nil
	}
	if !filepath.IsAbs(path) && o.Dir != "" {
		path = filepath.Join(o.Dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, nil
	}
	return nil, func() { restoreFile(path, b, fi.Mode().Perm()) }, nil
}

// restoreFile puts b back at path when the file no longer holds it (a
// new file beside it, renamed over it, so no reader sees half of it).
func restoreFile(path string, b []byte, perm os.FileMode) {
	if now, err := os.ReadFile(path); err == nil && bytes.Equal(now, b) {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".spillway-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Chmod(tmp.Name(), perm) != nil || os.Rename(tmp.Name(), path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

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
