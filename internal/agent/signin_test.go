package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spillway/spillway/internal/redact"
)

func TestRedactJSONL(t *testing.T) {
	sec := redact.NewSecrets("acct-secret-77")
	cases := []struct{ name, in, want string }{
		{"session_meta's ids, the names' order kept",
			`{"type":"session_meta","payload":{"id":"s1","creator_account_id":"acct-secret-77","creator_user_id":"user-9","cwd":"/w"}}` + "\n",
			`{"type":"session_meta","payload":{"id":"s1","creator_account_id":"[redacted]","creator_user_id":"[redacted]","cwd":"/w"}}` + "\n"},
		{"deep, in arrays, any case; a null stays null; an id of no one else's is kept",
			`{"a":[{"Org_ID":5,"x":{"organization_id":"o"}}],"user_id":null,"thread_id":"t"}`,
			`{"a":[{"Org_ID":"[redacted]","x":{"organization_id":"[redacted]"}}],"user_id":null,"thread_id":"t"}`},
		{"a value that only looks like a name is not one", `["account_id","x"]` + "\r\n", `["account_id","x"]` + "\r\n"},
		{"a known secret elsewhere, and a line that is not JSON, kept but redacted",
			"{\"m\":\"for acct-secret-77\"}\nnot json acct-secret-77\n\n",
			"{\"m\":\"for [redacted]\"}\nnot json [redacted]\n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(redactJSONL([]byte(c.in), sec)); got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestOnChatGPTPlan(t *testing.T) {
	chatgpt := `{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"a"}}`
	apikey := `{"OPENAI_API_KEY":"sk-abc"}`
	custom := "model_provider = \"spillway\"\n[model_providers.spillway]\nbase_url = \"http://127.0.0.1:8787/v1\"\nenv_key = \"OPENAI_API_KEY\"\n[model_providers.plan]\nbase_url = \"http://127.0.0.1:8787/backend-api/codex\"\nrequires_openai_auth = true\n"
	for _, c := range []struct {
		name, auth, config string
		args               []string
		want               bool
	}{
		{"signed in, the built-in provider", chatgpt, "", nil, true},
		{"signed in, an API-key provider of the config", chatgpt, custom, nil, false},
		{"signed in, a provider that sends the sign-in, by -c", chatgpt, custom, []string{"-c", `model_provider="plan"`}, true},
		{"signed in, the built-in provider, by --config=", chatgpt, custom, []string{"--config=model_provider=openai"}, true},
		{"an API key", apikey, "", nil, false},
		{"no auth.json", "", "", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			if c.auth != "" {
				os.WriteFile(filepath.Join(home, "auth.json"), []byte(c.auth), 0o600)
			}
			if c.config != "" {
				os.WriteFile(filepath.Join(home, "config.toml"), []byte(c.config), 0o600)
			}
			o := Options{Env: []string{"CODEX_HOME=" + home}, Getenv: func(string) string { return "" }}
			args := append([]string{"codex", "exec"}, append(c.args, "hi")...)
			if got := onChatGPTPlan(o, args); got != c.want {
				t.Fatalf("onChatGPTPlan = %v, want %v", got, c.want)
			}
		})
	}
}
