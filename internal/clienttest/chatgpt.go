package clienttest

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ChatGPTCanary is a ChatGPT sign-in made for a test: an auth.json in
// ChatGPT mode, fresh (Codex does not refresh it), whose tokens and ids
// carry marks that must appear nowhere but in the requests to the plan's
// backend.
type ChatGPTCanary struct {
	Access, Refresh, Account, User, ID string
}

func jwtPart(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// WriteChatGPTAuth writes codexHome/auth.json signed in with a ChatGPT
// plan, as `codex login` leaves it, and returns its canary.
func WriteChatGPTAuth(t testing.TB, codexHome string) ChatGPTCanary {
	t.Helper()
	exp := time.Now().Add(10 * 24 * time.Hour).Unix()
	head := jwtPart(map[string]any{"alg": "none", "typ": "JWT"})
	c := ChatGPTCanary{Account: "acct-CANARY-4d1e", User: "user-CANARY-8a2b", Refresh: "rt-CANARY-REFRESH-9b2c"}
	c.ID = head + "." + jwtPart(map[string]any{"email": "canary@example.test", "exp": exp,
		"https://api.openai.com/auth": map[string]any{"chatgpt_plan_type": "plus", "chatgpt_user_id": c.User, "chatgpt_account_id": c.Account}}) + ".SIGCANARYid7f3a"
	c.Access = head + "." + jwtPart(map[string]any{"exp": exp, "https://api.openai.com/auth": map[string]any{"chatgpt_account_id": c.Account}}) + ".SIGCANARYaccess7f3a"
	auth := map[string]any{"auth_mode": "chatgpt", "OPENAI_API_KEY": nil, "last_refresh": time.Now().UTC().Format(time.RFC3339),
		"tokens": map[string]any{"id_token": c.ID, "access_token": c.Access, "refresh_token": c.Refresh, "account_id": c.Account}}
	b, _ := json.Marshal(auth)
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// Marks are what of the sign-in must never be written or shown.
func (c ChatGPTCanary) Marks() []string {
	return []string{c.Access, c.Refresh, c.ID, c.Account, c.User, "SIGCANARY", "CANARY-REFRESH"}
}
