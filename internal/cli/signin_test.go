package cli

import (
	"context"
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
	"github.com/spillway/spillway/internal/redistest"
	"github.com/spillway/spillway/sim"
)

// signInCanary is clienttest's ChatGPT sign-in for a test.
type signInCanary = clienttest.ChatGPTCanary

func writeChatGPTAuth(t *testing.T, codexHome string) signInCanary {
	return clienttest.WriteChatGPTAuth(t, codexHome)
}

// The three agents on their own sign-ins through one `spillway serve`, each
// one's model full: the real Codex CLI signed in with a ChatGPT plan
// (pointed at the gateway by `spillway setup codex --chatgpt`), the real
// Gemini CLI with a Google access token (`setup gemini --google`), and the
// real Claude Code logged in (an OAuth token). Each is answered by the next
// model in the same request, each backend gets exactly the credentials its
// client sent, and no sign-in is in what spillway writes or shows (event
// log, its log, status, dashboard, metrics, report, any file under its
// home).
func TestSignInsThroughGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs Codex")
	}
	codex := clienttest.Codex(t)
	srv, _ := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	for _, m := range []string{"gpt-6-astra", "gemini-3-pro", "claude-opus-5-5"} {
		srv.AddFault(sim.Fault{Model: m, Kind: "capacity", Count: -1})
	}
	bin := spillwayBin(t)
	dir := t.TempDir() // spillway's home
	events := filepath.Join(dir, "events.jsonl")
	redisAddr, _, _ := redistest.Start(t) // a fleet gateway: what it tells the others must hold no sign-in either
	sentToRedis := redistest.Monitor(t, redisAddr)
	base, logs := startServeLog(t, bin, dir, "state: redis://"+redisAddr+"/0\nproviders:\n  openai: { base_url: \""+hs.URL+"/v1\" }\n  chatgpt: { base_url: \""+hs.URL+"/backend-api/codex\" }\n"+
		"  anthropic: { base_url: \""+hs.URL+"\" }\n  codeassist: { base_url: \""+hs.URL+"\" }\n",
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
	if got := routes(t, events, "/backend-api/codex/responses"); got != "chatgpt/gpt-6-astra:capacity > chatgpt/gpt-6.1-sol:ok" {
		t.Fatalf("Codex's route %q: want one request spilling within the plan", got)
	}
	// the backend saw exactly what Codex sent
	want := sim.Fingerprint(canary.Access, canary.Account)
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol"} {
		if got := srv.Snapshot().Models[m].Credentials; len(got) != 1 || got[want] != 1 {
			t.Fatalf("%s saw credentials %v, want Codex's own, once", m, got)
		}
	}

	// Gemini CLI signed in with Google (an access token, as GOOGLE_GENAI_USE_GCA
	// takes it: a login from oauth_creds.json is first checked at Google's
	// tokeninfo, which this machine cannot reach)
	gHome := t.TempDir()
	gDir := filepath.Join(gHome, ".gemini")
	os.MkdirAll(gDir, 0o700)
	os.WriteFile(filepath.Join(gDir, "settings.json"), []byte(`{"security":{"auth":{"selectedType":"oauth-personal"}}}`), 0o600)
	gSetup := exec.Command(bin, "setup", "gemini", "--google", "--gemini-home", gDir, "--url", base, "--shell", "sh")
	gSetup.Env = dashEnv(dir)
	gOut, err := gSetup.Output()
	endpoint := ""
	for _, line := range strings.Split(string(gOut), "\n") {
		if v, ok := strings.CutPrefix(line, "export CODE_ASSIST_ENDPOINT="); ok {
			endpoint = v
		}
	}
	if err != nil || endpoint != base {
		t.Fatalf("setup gemini --google: %v\n%s", err, gOut)
	}
	gToken := "ya29.CANARY-google-login-5e6f"
	gEnv, gWork := clienttest.Env(t, gHome, []string{"CODE_ASSIST_ENDPOINT=" + endpoint, "GOOGLE_GENAI_USE_GCA=true", "GOOGLE_CLOUD_ACCESS_TOKEN=" + gToken, "GEMINI_CLI_TRUST_WORKSPACE=true"})
	gem := exec.CommandContext(ctx, clienttest.Gemini(t), "-p", prompt, "-m", "gemini-3-pro")
	gem.Env, gem.Dir = gEnv, gWork
	gStdout, err := gem.Output()
	if wantText := strings.Join(sim.Tokens(sim.Answer("gemini-3-flash", prompt, 16))[:4], ""); err != nil || !strings.Contains(string(gStdout), wantText) {
		t.Fatalf("gemini: %v, stdout %q lacks %q", err, gStdout, wantText)
	}
	if got := routes(t, events, "/v1internal:streamGenerateContent"); got != "codeassist/gemini-3-pro:capacity > codeassist/gemini-3-flash:ok" {
		t.Fatalf("Gemini CLI's route %q", got)
	}
	for _, m := range []string{"gemini-3-pro", "gemini-3-flash"} {
		if got := srv.Snapshot().Models[m].Credentials; len(got) != 1 || got[sim.Fingerprint(gToken, "")] != 1 {
			t.Fatalf("%s saw credentials %v, want Gemini CLI's own, once", m, got)
		}
	}

	// Claude Code logged in
	cToken := "sk-ant-oat01-CANARY-claude-login-3c4d"
	zero := 0
	cBin, cEnvVars, cHome := clienttest.ClaudeEnv(t, clienttest.ClaudeOptions{BaseURL: base, OAuthToken: cToken, MaxRetries: &zero})
	cEnv, cWork := clienttest.Env(t, cHome, cEnvVars)
	cl := exec.CommandContext(ctx, cBin, "-p", prompt, "--model", "claude-opus-5-5")
	cl.Env, cl.Dir = cEnv, cWork
	cStdout, err := cl.Output()
	if wantText := sim.Answer("claude-sonnet-5-5", prompt, 16); err != nil || !strings.Contains(string(cStdout), wantText) {
		t.Fatalf("claude: %v, stdout %q lacks %q", err, cStdout, wantText)
	}
	for _, m := range []string{"claude-opus-5-5", "claude-sonnet-5-5"} {
		if got := srv.Snapshot().Models[m].Credentials; len(got) != 1 || got[sim.Fingerprint(cToken, "")] == 0 {
			t.Fatalf("%s saw credentials %v, want Claude Code's own", m, got)
		}
	}
	marks := append(canary.Marks(), gToken, cToken, "CANARY-google", "CANARY-claude")

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
	shown["the fleet's Redis"] = redistest.Contents(t, redisAddr)
	shown["what was sent to Redis"] = sentToRedis()
	if !strings.Contains(shown["what was sent to Redis"], "gpt-6-astra") {
		t.Fatalf("the fleet heard nothing of the capacity answers (so it proves nothing):\n%s", shown["what was sent to Redis"])
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				shown[p] = string(b)
			}
		}
		return nil
	})
	for where, text := range shown {
		for _, mark := range marks {
			if strings.Contains(text, mark) {
				t.Errorf("%s holds the sign-in (%q)", where, mark[:min(len(mark), 24)])
			}
		}
	}
}

// routes are the event log's routes of the requests to endpoint, one
// request's attempts as provider/model:class joined by " > ", requests
// by " | ".
func routes(t *testing.T, events, endpoint string) string {
	t.Helper()
	b, _ := os.ReadFile(events)
	var order []string
	by := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			RequestID, Provider, Model, Class, Endpoint string
		}
		json.Unmarshal([]byte(line), &rec)
		if rec.Endpoint != endpoint {
			continue
		}
		if by[rec.RequestID] == nil {
			order = append(order, rec.RequestID)
		}
		by[rec.RequestID] = append(by[rec.RequestID], rec.Provider+"/"+rec.Model+":"+rec.Class)
	}
	var out []string
	for _, id := range order {
		out = append(out, strings.Join(by[id], " > "))
	}
	return strings.Join(out, " | ")
}
