package agentfiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tailscale/hujson"
)

// OpenCodeConfigDir is the directory of OpenCode's global configuration
// (1.18: opencode.json, opencode.jsonc and config.json in it, merged in
// the order config.json, opencode.json, opencode.jsonc):
// $XDG_CONFIG_HOME/opencode, else ~/.config/opencode; "" when neither is
// set.
func OpenCodeConfigDir(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "opencode")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "opencode")
	}
	return ""
}

// OpenCodeDataDir is where OpenCode keeps its sessions (opencode.db):
// $XDG_DATA_HOME/opencode, else ~/.local/share/opencode; "" when neither
// is set.
func OpenCodeDataDir(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "opencode")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "opencode")
	}
	return ""
}

// OpenCodeConfigError is why OpenCode cannot read a configuration file:
// where (1-based line and column) and what.
type OpenCodeConfigError struct {
	Line, Column int
	Msg          string
}

func (e *OpenCodeConfigError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// ParseOpenCodeConfig reads an opencode.json or opencode.jsonc as OpenCode
// 1.18 reads it: JSONC (the jsonc-parser package with allowTrailingComma),
// so // and /* */ comments and trailing commas are allowed, and any parse
// error makes OpenCode drop the whole file. The top level must be an
// object. (OpenCode replaces {env:VAR} and {file:PATH} in the text before
// parsing; inside a string, as setup writes them, they change nothing of
// the syntax.)
func ParseOpenCodeConfig(b []byte) (map[string]any, error) {
	v, err := hujson.Parse(bytes.Clone(b)) // (Standardize rewrites what it parsed)
	if err != nil {
		return nil, &OpenCodeConfigError{Msg: strings.TrimPrefix(err.Error(), "hujson: ")} // "line L, column C: …"
	}
	v.Standardize()
	var m map[string]any
	if err := json.Unmarshal(v.Pack(), &m); err != nil || m == nil {
		return nil, &OpenCodeConfigError{Msg: "the top level is not a JSON object"}
	}
	return m, nil
}

// OpenCodeConfigNames are the global configuration files of OpenCode
// 1.18, in the order it reads and merges them: what a later one sets wins.
var OpenCodeConfigNames = []string{"config.json", "opencode.json", "opencode.jsonc"}

// OpenCodeConfig is one global configuration file OpenCode reads.
type OpenCodeConfig struct {
	Path   string
	Config map[string]any
}

// OpenCodeConfigs are the global configuration files of dir that OpenCode
// can read, in its order (OpenCodeConfigNames); a file it cannot parse is
// left out, as OpenCode drops it.
func OpenCodeConfigs(dir string) []OpenCodeConfig {
	if dir == "" {
		return nil
	}
	var out []OpenCodeConfig
	for _, name := range OpenCodeConfigNames {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if c, err := ParseOpenCodeConfig(b); err == nil {
			out = append(out, OpenCodeConfig{Path: path, Config: c})
		}
	}
	return out
}

// OpenCodeModel is the model OpenCode runs by default, as the global
// configuration of dir says (its "model", provider/model, from the last
// file that sets it), and that file; "" for none.
func OpenCodeModel(dir string) (model, path string) {
	for _, c := range OpenCodeConfigs(dir) {
		if m, ok := c.Config["model"].(string); ok && m != "" {
			model, path = m, c.Path
		}
	}
	return model, path
}
