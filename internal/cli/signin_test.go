package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/sim"
)

// signInCanary is a ChatGPT sign-in made for a test: an auth.json in
// ChatGPT mode, fresh (Codex does not refresh it), whose tokens carry
// marks that must appear nowhere but in the requests to the plan's backend.
type signInCanary struct {
	access, refresh, account, id string
}

func jwtPart(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeChatGPTAuth(t *testing.T, codexHome string) signInCanary {
	t.Helper()
	exp := time.Now().Add(10 * 24 * time.Hour).Unix()
	head := jwtPart(map[string]any{"alg": "none", "typ": "JWT"})
	c := signInCanary{account: "acct-CANARY-4d1e", refresh: "rt-CANARY-REFRESH-9b2c"}
	c.id = head + "." + jwtPart(map[string]any{"email": "canary@example.test", "exp": exp,
		"https://api.openai.com/auth": map[string]any{"chatgpt_plan_type": "plus", "chatgpt_user_id": "user-CANARY", "chatgpt_account_id": c.account}}) + ".SIGCANARYid7f3a"
	c.access = head + "." + jwtPart(map[string]any{"exp": exp, "https://api.openai.com/auth": map[string]any{"chatgpt_account_id": c.account}}) + ".SIGCANARYaccess7f3a"
	auth := map[string]any{"auth_mode": "chatgpt", "OPENAI_API_KEY": nil, "last_refresh": time.Now().UTC().Format(time.RFC3339),
		"tokens": map[string]any{"id_token": c.id, "access_token": c.access, "refresh_token": c.refresh, "account_id": c.account}}
	b, _ := json.Marshal(auth)
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// marks are what of the sign-in must never be written or shown.
func (c signInCanary) marks() []string {
	return []string{c.access, c.refresh, c.id, c.account, "SIGCANARY", "CANARY-REFRESH"}
}

// The real Codex CLI signed in with a ChatGPT plan, pointed at the gateway
// by `spillway setup codex --chatgpt`, its model full: the plan's next model
// answers in the same request, the plan's backend gets exactly the
// credentials Codex sent, and the sign-in is nowhere in what spillway writes
// or shows (event log, its log, status, dashboard, metrics, report, any
// file under its home).
func TestCodexChatGPTPlanThroughGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Codex")
	}
	codex := clienttest.Codex(t)
	srv, _ := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1})
	bin := buildSpillway(t)
	dir := t.TempDir() // spillway's home
	events := filepath.Join(dir, "events.jsonl")
	base, logs := startServeLog(t, bin, dir, "providers:\n  openai: { base_url: \""+hs.URL+"/v1\" }\n  chatgpt: { base_url: \""+hs.URL+"/backend-api/codex\" }\n",
		"--listen", "127.0.0.1:0", "--events", events)

	home := t.TempDir() // Codex's
	codexHome := filepath.Join(home, ".codex")
	canary := writeChatGPTAuth(t, codexHome)
	setupCmd := exec.Command(bin, "setup", "codex", "--chatgpt", "--codex-home", codexHome, "--url", base)
	setupCmd.Env = dashEnv(dir)
	if out, err := setupCmd.CombinedOutput(); err != nil || !strings.Contains(string(out), base+"/backend-api/codex") {
		t.Fatalf("setup codex --chatgpt: %v\n%s", err, out)
	}
	// (the quiet settings of every Codex test: no analytics, no plugins)
	f, _ := os.OpenFile(filepath.Join(codexHome, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n[analytics]\nenabled = false\n\n[features]\nplugins = false\n")
	f.Close()

	env, work := clienttest.Env(t, home, []string{"CODEX_HOME=" + codexHome})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prompt := "Reply with pong"
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "-m", "gpt-6-astra", prompt)
	cmd.Env, cmd.Dir = env, work
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if want := sim.Answer("gpt-6.1-sol", prompt, 16); !strings.Contains(stdout.String(), want) || strings.Contains(stdout.String()+stderr.String(), "at capacity") {
		t.Fatalf("stdout %q lacks the plan's next model's answer %q\nstderr: %s", stdout.String(), want, stderr.String())
	}

	// one request, two attempts, both at the plan's backend
	b, _ := os.ReadFile(events)
	var ids = map[string]bool{}
	var route []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			RequestID, Provider, Model, Class string
		}
		json.Unmarshal([]byte(line), &rec)
		ids[rec.RequestID] = true
		route = append(route, rec.Provider+"/"+rec.Model+":"+rec.Class)
	}
	if got := strings.Join(route, " > "); len(ids) != 1 || got != "chatgpt/gpt-6-astra:capacity > chatgpt/gpt-6.1-sol:ok" {
		t.Fatalf("%d requests, route %q: want one request spilling within the plan", len(ids), got)
	}
	// the backend saw exactly what Codex sent
	want := sim.Fingerprint(canary.access, canary.account)
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol"} {
		if got := srv.Snapshot().Models[m].Credentials; len(got) != 1 || got[want] != 1 {
			t.Fatalf("%s saw credentials %v, want Codex's own, once", m, got)
		}
	}

	// the sign-in is nowhere spillway writes or shows
	shown := map[string]string{"spillway serve's log": logs()}
	for _, path := range []string{"/spillway/status", "/ui/state", "/metrics"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		shown[path] = string(body)
	}
	rep := exec.Command(bin, "report", "--format", "json", "--events", events)
	rep.Env = dashEnv(dir)
	out, err := rep.CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	shown["spillway report"] = string(out)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				shown[p] = string(b)
			}
		}
		return nil
	})
	for where, text := range shown {
		for _, mark := range canary.marks() {
			if strings.Contains(text, mark) {
				t.Errorf("%s holds the sign-in (%q)", where, mark[:min(len(mark), 24)])
			}
		}
	}
}
