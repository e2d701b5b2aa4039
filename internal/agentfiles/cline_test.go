package agentfiles

import (
	"path/filepath"
	"testing"
)

// Where Cline reads providers.json, as setup cline and exec both take it.
func TestClineSettingsPath(t *testing.T) {
	cases := []struct {
		name   string
		env    map[string]string
		config string
		want   string
	}{
		{"HOME", map[string]string{"HOME": "/h"}, "", "/h/.cline/data/settings/providers.json"},
		{"CLINE_DIR", map[string]string{"HOME": "/h", "CLINE_DIR": "/c"}, "", "/c/data/settings/providers.json"},
		{"--config over CLINE_DIR", map[string]string{"HOME": "/h", "CLINE_DIR": "/c"}, "/k", "/k/data/settings/providers.json"},
		{"CLINE_DATA_DIR over --config", map[string]string{"HOME": "/h", "CLINE_DATA_DIR": "/d"}, "/k", "/d/settings/providers.json"},
		{"CLINE_PROVIDER_SETTINGS_PATH first", map[string]string{"HOME": "/h", "CLINE_DATA_DIR": "/d", "CLINE_PROVIDER_SETTINGS_PATH": "/p.json"}, "/k", "/p.json"},
		{"nothing", map[string]string{}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ClineSettingsPath(func(k string) string { return c.env[k] }, c.config); got != filepath.FromSlash(c.want) {
				t.Errorf("= %q, want %q", got, c.want)
			}
		})
	}
}
