package agentfiles

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Qwen Code (0.24.4, a Gemini CLI fork) keeps its settings in
// settings.json of its directory ($QWEN_HOME, else ~/.qwen).

// QwenSettingsVersion is the $version Qwen Code 0.24.4 writes: a settings
// file without one is rewritten by Qwen Code when it loads it.
const QwenSettingsVersion = 4

// QwenHome is Qwen Code's directory as an agent run in dir sees it:
// $QWEN_HOME (~ expanded; a relative path taken from dir, the current
// directory when dir is ""), else ~/.qwen; "" when neither can be told.
func QwenHome(getenv func(string) string, dir string) string {
	d := getenv("QWEN_HOME")
	if d == "" {
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, ".qwen")
		}
		return ""
	}
	if d == "~" || strings.HasPrefix(d, "~/") {
		return filepath.Join(getenv("HOME"), strings.TrimPrefix(d[1:], "/"))
	}
	if filepath.IsAbs(d) {
		return d
	}
	if dir == "" {
		if wd, err := os.Getwd(); err == nil {
			dir = wd
		}
	}
	if abs, err := filepath.Abs(filepath.Join(dir, d)); err == nil {
		return abs
	}
	return d
}

// ParseQwenSettings reads a settings file as Qwen Code 0.24.4 does
// (loadSettings): a leading byte order mark dropped, comments blanked,
// then strict JSON (no trailing comma) with an object at the top. The
// error (a *GeminiSettingsError) says where the file stops being readable.
func ParseQwenSettings(b []byte) (map[string]any, error) {
	bom := bytes.HasPrefix(b, []byte("\uFEFF"))
	s, err := ParseGeminiSettings(bytes.TrimPrefix(b, []byte("\uFEFF")))
	var se *GeminiSettingsError
	if errors.As(err, &se) {
		e := *se
		if bom && e.Line == 1 {
			e.Column += 3
		}
		e.Msg = strings.ReplaceAll(e.Msg, "Gemini CLI", "Qwen Code")
		return nil, &e
	}
	return s, err
}

// QwenModel is the model.name of Qwen Code's settings, "" for none.
func QwenModel(s map[string]any) string {
	m, _ := s["model"].(map[string]any)
	name, _ := m["name"].(string)
	return name
}
