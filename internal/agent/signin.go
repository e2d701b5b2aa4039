package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/pelletier/go-toml/v2"

	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/redact"
)

// signInSecrets are what of the agent's own sign-in exec must never write
// (its messages, the event records, the archive): a ChatGPT plan's access
// and id tokens, its account id and the ids its id token names, read from
// Codex's auth.json (its refresh token is left unread: no agent shows it).
// The zero Secrets when the agent is not Codex signed in with ChatGPT.
func signInSecrets(kind Kind, o Options) redact.Secrets {
	if kind != Codex {
		return redact.Secrets{}
	}
	b, err := os.ReadFile(filepath.Join(codexHome(o), "auth.json"))
	if err != nil {
		return redact.Secrets{}
	}
	var auth struct {
		Tokens struct {
			ID        string `json:"id_token"`
			Access    string `json:"access_token"`
			AccountID string `json:"account_id"`
		} `json:"tokens"`
	}
	if json.Unmarshal(b, &auth) != nil {
		return redact.Secrets{}
	}
	t := auth.Tokens
	vals := []string{t.ID, t.Access, t.AccountID}
	for _, tok := range []string{t.ID, t.Access} {
		vals = append(vals, claimIDs(tok)...)
	}
	return redact.NewSecrets(vals...)
}

// claimIDs are the account, user and organisation ids a sign-in's JWT
// names in its claims (ChatGPT's "https://api.openai.com/auth" claim:
// chatgpt_account_id, chatgpt_user_id, user_id, organization ids).
func claimIDs(jwt string) []string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var ids []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && identifies(k) {
					ids = append(ids, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var claims any
	if json.Unmarshal(b, &claims) == nil {
		walk(claims)
	}
	return ids
}

// identifies reports whether a JSON name holds an account, user or
// organisation id (creator_account_id, chatgpt_user_id, org_id, …).
func identifies(name string) bool {
	n := strings.ToLower(name)
	for _, suffix := range []string{"account_id", "user_id", "org_id", "organization_id"} {
		if n == suffix || strings.HasSuffix(n, "_"+suffix) {
			return true
		}
	}
	return false
}

// redactIDs is one JSON line with the value of every name that holds an
// account, user or organisation id (identifies) replaced by "[redacted]",
// at any depth; everything else as it was, in its order. A line that is
// not one JSON value comes back as it was, with ok false.
//
// (jsontext's tokens, not a decode into a map: a map would reorder the
// line's names.)
func redactIDs(line []byte) (out []byte, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(line))
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	for {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return line, false
		}
		if err := enc.WriteToken(tok); err != nil {
			return line, false
		}
		if tok.Kind() != '"' {
			continue
		}
		if k, n := dec.StackIndex(dec.StackDepth()); k != '{' || n%2 != 1 || !identifies(tok.String()) {
			continue // a value, or a name of no id
		}
		v, err := dec.ReadValue()
		if err != nil {
			return line, false
		}
		if v.Kind() == 'n' {
			err = enc.WriteValue(v) // null: there is none to hide
		} else {
			err = enc.WriteToken(jsontext.String("[redacted]"))
		}
		if err != nil {
			return line, false
		}
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// redactJSONL is a JSONL file's bytes with every line's ids redacted
// (redactIDs) and every known secret replaced: lines stay one JSON value
// each.
func redactJSONL(b []byte, sec redact.Secrets) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(b) {
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) > 0 {
			body, _ = redactIDs(body)
		}
		out.Write(sec.Bytes(body))
		out.Write(line[len(bytes.TrimRight(line, "\r\n")):])
	}
	return out.Bytes()
}

// onChatGPTPlan reports whether a Codex run of args works on a ChatGPT
// plan with Codex's own sign-in: auth.json holds a ChatGPT sign-in, and
// the run's model provider (a -c model_provider=… of args, else
// config.toml's, else Codex's built-in openai) is the built-in one or one
// with requires_openai_auth. Its attempts are then the plan's, not the
// API's (Request.Via).
func onChatGPTPlan(o Options, args []string) bool {
	home := codexHome(o)
	if home == "" || agentfiles.CodexSignIn(home) != "chatgpt" {
		return false
	}
	var cfg struct {
		Provider  string                    `toml:"model_provider"`
		Providers map[string]map[string]any `toml:"model_providers"`
	}
	if b, err := os.ReadFile(filepath.Join(home, "config.toml")); err == nil {
		_ = toml.Unmarshal(b, &cfg)
	}
	for i, a := range args {
		kv, ok := "", false
		switch {
		case (a == "-c" || a == "--config") && i+1 < len(args):
			kv, ok = args[i+1], true
		case strings.HasPrefix(a, "--config="):
			kv, ok = strings.TrimPrefix(a, "--config="), true
		}
		if k, v, found := strings.Cut(kv, "="); ok && found && strings.TrimSpace(k) == "model_provider" {
			var one struct {
				V string `toml:"v"`
			}
			if toml.Unmarshal([]byte("v = "+v), &one) == nil {
				cfg.Provider = one.V
			} else {
				cfg.Provider = strings.TrimSpace(v) // Codex takes a bare word as a string too
			}
		}
	}
	switch cfg.Provider {
	case "", "openai":
		return true
	}
	return cfg.Providers[cfg.Provider]["requires_openai_auth"] == true
}
