package agentfiles

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCodexSignIn(t *testing.T) {
	for _, c := range []struct{ auth, want string }{
		{`{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"id_token":"x.y.z","access_token":"a","refresh_token":"r"}}`, "chatgpt"},
		{`{"OPENAI_API_KEY":null,"tokens":{"access_token":"a"},"last_refresh":"2026-12-01T00:00:00Z"}`, "chatgpt"},
		{`{"OPENAI_API_KEY":"sk-abc"}`, "apikey"},
		{`{"auth_mode":"apikey","OPENAI_API_KEY":"sk-abc"}`, "apikey"},
		{`not json`, ""},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "auth.json"), []byte(c.auth), 0o600)
		if got := CodexSignIn(dir); got != c.want {
			t.Errorf("%s: %q, want %q", c.auth, got, c.want)
		}
	}
	if got := CodexSignIn(t.TempDir()); got != "" {
		t.Errorf("no auth.json: %q", got)
	}
}
