package agentfiles

import (
	"path/filepath"
	"strings"
)

// ClineSettingsPath is the providers.json Cline 3.0.65 reads, in its own
// order: $CLINE_PROVIDER_SETTINGS_PATH, else $CLINE_DATA_DIR/settings/,
// else <dir>/data/settings/ where dir is configDir (Cline's --config),
// else $CLINE_DIR, else ~/.cline. "" when there is no HOME to start from.
func ClineSettingsPath(getenv func(string) string, configDir string) string {
	if p := strings.TrimSpace(getenv("CLINE_PROVIDER_SETTINGS_PATH")); p != "" {
		return p
	}
	if d := strings.TrimSpace(getenv("CLINE_DATA_DIR")); d != "" {
		return filepath.Join(d, "settings", "providers.json")
	}
	dir := configDir
	if dir == "" {
		dir = strings.TrimSpace(getenv("CLINE_DIR"))
	}
	if dir == "" {
		home := strings.TrimSpace(getenv("HOME"))
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".cline")
	}
	return filepath.Join(dir, "data", "settings", "providers.json")
}
