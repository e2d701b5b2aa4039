package config_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
)

func TestProviderAuth(t *testing.T) {
	const key = "  keys:\n    - { name: alice, key: sha256:1bd8fd47297046f993e608e398d5905b00a33e163c6b1172dd38887fed05ed6a }\n"
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		want       map[string]config.Auth // provider → its auth, when the file loads
		err        string                 // what the error says, when it does not
	}{
		{name: "passthrough by default",
			yaml: "providers:\n  openai: { api_key: env:K }\n",
			want: map[string]config.Auth{"openai": config.AuthPassthrough, config.ChatGPT: config.AuthPassthrough}},
		{name: "key when written",
			yaml: "providers:\n  openai: { api_key: env:K, auth: key }\n  anthropic: { auth: passthrough }\n",
			env:  map[string]string{"K": "sk-k"},
			want: map[string]config.Auth{"openai": config.AuthKey, "anthropic": config.AuthPassthrough}},
		{name: "gateway keys send the providers' own, not a sign-in's",
			yaml: "gateway:\n" + key + "providers:\n  openai: { auth: passthrough }\n",
			want: map[string]config.Auth{"openai": config.AuthKey, "gemini": config.AuthKey, config.ChatGPT: config.AuthPassthrough, config.CodeAssist: config.AuthPassthrough}},
		{name: "unknown",
			yaml: "providers:\n  openai: { auth: keys }\n",
			err:  `a.yaml:2:19: providers.openai.auth: unknown auth "keys"; allowed: passthrough (send the client's key), key (send api_key)`},
		{name: "a sign-in takes no key",
			yaml: "providers:\n  chatgpt: { auth: key }\n",
			err:  `providers.chatgpt.auth: provider "chatgpt" carries the caller's own sign-in: only auth: passthrough`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse("a.yaml", []byte(tc.yaml), func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want it to hold %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range tc.want {
				if got := c.Providers[p].Auth; got != want {
					t.Errorf("providers.%s.auth = %q, want %q", p, got, want)
				}
			}
		})
	}
}
