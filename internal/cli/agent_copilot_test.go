package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/setup"
	"github.com/spillway/spillway/sim"
)

// startCopilotSim is an in-process simulator with faults, for one test.
func startCopilotSim(t *testing.T, faults ...sim.Fault) (*sim.Server, string) {
	t.Helper()
	srv, err := sim.New(sim.Options{Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	for _, f := range faults {
		if err := srv.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	return srv, hs.URL
}

// full is a model at capacity until cleared, telling the client to wait
// the least it can (Copilot CLI honours retry-after, in whole seconds, for
// each of its five retries).
func full(model string) sim.Fault {
	return sim.Fault{Model: model, Kind: "capacity", Count: -1, RetryAfter: 0.001}
}

// shEnv runs lines (what setup printed, and more) in sh and returns the
// COPILOT_ variables they leave.
func shEnv(t *testing.T, lines string, env []string) []string {
	t.Helper()
	cmd := exec.Command("sh", "-c", lines+"\nenv")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, out)
	}
	var vars []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "COPILOT_") {
			vars = append(vars, l)
		}
	}
	return vars
}

var copilotUndo = regexp.MustCompile(`(?m)^# Add .*; undo: (unset [A-Z_ ]+)$`)

// spillway setup copilot's environment, run by sh, points the real Copilot
// CLI at spillway serve, which answers from a model it did not name (its
// first full): a real tool loop (its bash tool cats a file whose token
// only the command can know), on Chat Completions and on Responses answered
// by another vendor's model (every OpenAI model full), and on Anthropic's
// Messages. The user's settings.json
// (its comments, and a model of GitHub's that this mode does not read)
// stays byte for byte; the printed undo line takes every variable back.
func TestCopilotSetupThroughTheGateway(t *testing.T) {
	t.Parallel()
	bin := spillwayBin(t)
	cases := []struct {
		name     string
		args     []string // to setup copilot
		full     []string
		tools    bool
		endpoint string
		first    string // the model setup named, full
		answered string // the provider/model that answers
		yaml     string // more configuration
	}{
		{"chat, a tool loop", nil, []string{"gpt-6-astra"}, true, "/v1/chat/completions", "openai/gpt-6-astra", "openai/gpt-6.1-sol", ""},
		{"anthropic type", []string{"--type", "anthropic"}, []string{"claude-opus-5-5"}, false, "/v1/messages", "anthropic/claude-opus-5-5", "anthropic/claude-sonnet-5-5", ""},
		{"responses, another vendor, a tool loop", []string{"--wire", "responses"}, []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"}, true, "/v1/responses", "openai/gpt-6-astra", "anthropic/claude-opus-5-5",
			"  anthropic: { base_url: \"SIM\", api_key: sk-ant-own-copilot-0123 }\nchains:\n  codex: { models: [gpt-6-astra, gpt-6.1-sol, gpt-6-luna], overflow: claude }\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var faults []sim.Fault
			for _, m := range c.full {
				faults = append(faults, full(m))
			}
			srv, simURL := startCopilotSim(t, faults...)
			token := "spill-" + randomHex(t)
			prompt := "What does token.txt say?"
			if c.tools {
				if err := srv.AddScript(sim.Script{Turns: []sim.ScriptTurn{
					{Call: sim.ScriptCalls{{Tool: "shell", Arguments: map[string]any{"command": "cat token.txt"}}}},
					{Text: "The file says {result}"},
				}}); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			events := filepath.Join(dir, "events.jsonl")
			yaml := "providers:\n  openai: { base_url: \"" + simURL + "/v1\" }\n"
			if c.yaml != "" {
				yaml += strings.ReplaceAll(c.yaml, "SIM", simURL)
			} else {
				yaml += "  anthropic: { base_url: \"" + simURL + "\" }\n"
			}
			base, logs, stop := startServeStop(t, bin, dir, yaml, "--listen", "127.0.0.1:0", "--events", events)

			copilot, _, home := clienttest.CopilotEnv(t, clienttest.CopilotOptions{Env: []string{}})
			settings := filepath.Join(home, ".copilot", "settings.json")
			mine := []byte("{\n  // my own settings\n  \"model\": \"claude-sonnet-5.5\",\n  \"theme\": \"dim\", /* kept */\n}\n")
			os.MkdirAll(filepath.Dir(settings), 0o700)
			if err := os.WriteFile(settings, mine, 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runSetup(t, map[string]string{"HOME": home, "SPILLWAY_TEST_COPILOT_KEY": "x"},
				append([]string{"copilot", "--url", base, "--shell", "sh", "--env-key", "SPILLWAY_TEST_COPILOT_KEY"}, c.args...)...)
			if code != 0 {
				t.Fatalf("setup copilot: exit %d\n%s", code, errOut)
			}
			key := "sk-test-copilot-" + randomHex(t)
			vars := shEnv(t, out, []string{"PATH=/usr/bin:/bin", "SPILLWAY_TEST_COPILOT_KEY=" + key, "COPILOT_PROVIDER_BEARER_TOKEN=stale"})
			_, env, _ := clienttest.CopilotEnv(t, clienttest.CopilotOptions{Env: vars})
			env, work := clienttest.Env(t, home, env)
			os.WriteFile(filepath.Join(work, "token.txt"), []byte(token+"\n"), 0o600)

			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, copilot, "-p", prompt, "--allow-all-tools")
			cmd.Env, cmd.Dir = env, work
			// (runCmd kills copilot's whole process group with it)
			exit, stdout, stderr := runCmd(t, cmd)
			stop()
			if exit != 0 {
				t.Fatalf("copilot: exit %d\nstdout:\n%s\nstderr:\n%s\ngateway:\n%s", exit, stdout, stderr, logs())
			}
			model := c.answered[strings.Index(c.answered, "/")+1:]
			want := "[" + model + "]"
			if c.tools {
				want = "The file says " + token
			}
			if !strings.Contains(stdout, want) {
				t.Fatalf("the answer lacks %q:\n%s", want, stdout)
			}
			got := routes(t, events, c.endpoint)
			if !strings.HasPrefix(got, c.first+":capacity > ") || !strings.HasSuffix(got, c.answered+":ok") {
				t.Fatalf("routes %q: want %s full, %s answering\ngateway:\n%s", got, c.first, c.answered, logs())
			}
			if c.tools && strings.Count(got, c.answered+":ok") != 2 {
				t.Fatalf("routes %q: want both turns answered by %s", got, c.answered)
			}
			if st := srv.Snapshot().Models[model]; st.Credentials[sim.Fingerprint(key, "")] == 0 && !strings.HasPrefix(c.answered, "anthropic/") {
				t.Errorf("%s got credentials %v, not the key from $SPILLWAY_TEST_COPILOT_KEY", model, st.Credentials)
			}
			if b, _ := os.ReadFile(settings); !bytes.Equal(b, mine) {
				t.Errorf("settings.json changed:\n%s", b)
			}
			m := copilotUndo.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no undo line in:\n%s", out)
			}
			if left := shEnv(t, out+"\n"+m[1], []string{"PATH=/usr/bin:/bin", "SPILLWAY_TEST_COPILOT_KEY=" + key}); len(left) != 0 {
				t.Errorf("after the undo line: %v", left)
			}
		})
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// spillway exec wraps the real Copilot CLI pointed straight at the
// simulator: with its first model full it resumes the session on the next
// (--model beside --resume=<id>), exit 0; with every model full through
// the ladder it exits 75; with a key the provider refuses, 77.
func TestExecCopilot(t *testing.T) {
	t.Parallel()
	bin := spillwayBin(t)
	cases := []struct {
		name   string
		faults []sim.Fault
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"the next model, resumed", []sim.Fault{full("gpt-6-astra")}, []string{"--resume", "--models", "gpt-6-astra,gpt-6.1-sol"}, 0,
			"[gpt-6.1-sol]", []string{"gpt-6-astra is at capacity", "run 2 on gpt-6.1-sol, resuming session "}},
		{"every model full", []sim.Fault{full("gpt-6-luna")}, []string{"--models", "gpt-6-luna", "--ladder", "1m", "--max-wait", "1ms"}, 75,
			"", []string{"gpt-6-luna is at capacity", "exit 75"}},
		{"a refused key", []sim.Fault{{Model: "gpt-6-sol", Kind: "auth", Count: -1}}, []string{"--models", "gpt-6-sol,gpt-6-luna"}, 77,
			"", []string{"auth — stopping (exit 77)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, simURL := startCopilotSim(t, c.faults...)
			copilot, vars, home := clienttest.CopilotEnv(t, clienttest.CopilotOptions{BaseURL: simURL + "/v1", APIKey: "sk-test-copilot-exec"})
			env, work := clienttest.Env(t, home, vars)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			args := append(append([]string{"exec", "--events", "-"}, c.args...), "--", copilot, "-p", "Say hello", "--allow-all-tools")
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env, cmd.Dir = env, work
			code, stdout, stderr := runCmd(t, cmd)
			if code != c.code || !strings.Contains(stdout, c.stdout) {
				t.Fatalf("exit %d (want %d), stdout lacks %q?\nstdout:\n%s\nstderr:\n%s", code, c.code, c.stdout, stdout, stderr)
			}
			for _, w := range c.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// setup copilot's flags: what it refuses, and that it never writes.
func TestSetupCopilotFlags(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HOME": home, "SHELL": "/usr/bin/fish"}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"defaults: $SHELL's syntax, the configuration's codex chain", []string{"--url", "http://127.0.0.1:9000"}, 0,
			setup.CopilotEnv(setup.CopilotSetup{BaseURL: "http://127.0.0.1:9000", Model: "gpt-6-astra", EnvKey: "OPENAI_API_KEY"}, "fish")},
		{"--print is the same", []string{"--url", "http://127.0.0.1:9000", "--print"}, 0,
			setup.CopilotEnv(setup.CopilotSetup{BaseURL: "http://127.0.0.1:9000", Model: "gpt-6-astra", EnvKey: "OPENAI_API_KEY"}, "fish")},
		{"anthropic: its key and chain", []string{"--url", "http://127.0.0.1:9000", "--type", "anthropic", "--shell", "sh"}, 0,
			setup.CopilotEnv(setup.CopilotSetup{BaseURL: "http://127.0.0.1:9000", Type: "anthropic", Model: "claude-opus-5-5", EnvKey: "ANTHROPIC_API_KEY"}, "sh")},
		{"a model", []string{"--url", "http://127.0.0.1:9000", "--model", "gpt-6-luna", "--wire", "responses", "--shell", "sh"}, 0,
			setup.CopilotEnv(setup.CopilotSetup{BaseURL: "http://127.0.0.1:9000", Wire: "responses", Model: "gpt-6-luna", EnvKey: "OPENAI_API_KEY"}, "sh")},
		{"a key, not a name", []string{"--url", "http://127.0.0.1:9000", "--env-key", "sk-test-0123"}, ExitUsage, "never the key"},
		{"an unknown wire", []string{"--url", "http://127.0.0.1:9000", "--wire", "grpc"}, ExitUsage, "--wire \"grpc\""},
		{"wire with anthropic", []string{"--url", "http://127.0.0.1:9000", "--type", "anthropic", "--wire", "responses"}, ExitUsage, "--wire goes with --type openai"},
		{"an unknown type", []string{"--url", "http://127.0.0.1:9000", "--type", "azure"}, ExitUsage, "--type \"azure\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runSetup(t, env, append([]string{"copilot"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, errOut)
			}
			if c.code == 0 && out != c.want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out, c.want)
			}
			if c.code != 0 && !strings.Contains(errOut, c.want) {
				t.Fatalf("stderr lacks %q:\n%s", c.want, errOut)
			}
		})
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("setup copilot wrote %v", entries)
	}
}

// A configuration that cannot be read is an error (naming it), not the
// built-in chain silently.
func TestSetupCopilotBrokenConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spillway.yaml")
	if err := os.WriteFile(cfg, []byte("chains: [not, a, map\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir, "SPILLWAY_CONFIG": cfg}
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"no --model: the chain is read", []string{"copilot", "--url", "http://127.0.0.1:9000", "--shell", "sh"}, ExitFail},
		{"--model: no chain needed", []string{"copilot", "--url", "http://127.0.0.1:9000", "--shell", "sh", "--model", "gpt-6-luna"}, ExitOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runSetup(t, env, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, errOut)
			}
			if c.code != ExitOK && (!strings.Contains(errOut, cfg) || out != "") {
				t.Fatalf("want an error naming %s and nothing on stdout:\n%s\n%s", cfg, out, errOut)
			}
		})
	}
}
