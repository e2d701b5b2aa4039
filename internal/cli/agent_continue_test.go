package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/agent"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/simtest"
	"github.com/spillway/spillway/sim"
)

// cnUserConfig is a config.yaml of cn's user: comments, a model of their
// own, rules.
const cnUserConfig = `# Continue CLI configuration (mine)
name: My Assistant   # shown in cn's header
version: 1.0.0
schema: v1

models:
  # the model I use at work
  - name: Work Claude
    provider: anthropic
    model: claude-sonnet-5-5
    apiKey: ${{ secrets.WORK_ANTHROPIC_KEY }}
    roles:
      - chat
      - edit

rules:
  - Answer briefly.
`

// cnGateway runs `spillway serve` in front of an in-process simulator:
// the codex chain's models, every gpt- model full spilling over to the
// claude chain (spillway's own Anthropic key). Its environment is its own
// (a home, the key), nothing of the test's. It returns the simulator, the
// gateway's URL, its event log and a stop after which the log is whole.
func cnGateway(t *testing.T) (srv *sim.Server, base, events string, stop func()) {
	t.Helper()
	srv, simURL := simtest.Start(t, nil)
	dir := t.TempDir()
	events = filepath.Join(dir, "events.jsonl")
	body := `providers:
  openai: { base_url: "` + simURL + `/v1" }
  anthropic: { base_url: "` + simURL + `", api_key: env:CN_TEST_ANTHROPIC_KEY }
chains:
  codex:
    models: [gpt-6-astra, gpt-6.1-sol, gpt-6-luna]
    overflow: claude
`
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "data"), "CN_TEST_ANTHROPIC_KEY=sk-test-ant-own"}
	base, _, stop = startServeEnv(t, spillwayBin(t), env, dir, body, "--listen", "127.0.0.1:0", "--events", events)
	return srv, base, events, stop
}

// cnToolLoop scripts model's answer: cn's own Bash tool runs cat on a
// file that the test writes into the run's working directory, then the
// answer quotes what it printed. It returns the token.
func cnToolLoop(t *testing.T, srv *sim.Server, model, home string) string {
	t.Helper()
	token := "spill-cn-" + strings.ReplaceAll(filepath.Base(home), "0", "o")
	if err := os.MkdirAll(filepath.Join(home, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "work", "token.txt"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := srv.AddScript(sim.Script{Model: model, Turns: []sim.ScriptTurn{
		{Call: sim.ScriptCalls{{Tool: "shell", Arguments: map[string]any{"command": "cat token.txt"}}}},
		{Text: "The command printed {result}"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// `spillway setup continue` merges into the user's own config.yaml, whose
// comments and model stay; cn then answers through the gateway with its
// model (gpt-6-astra) full: the chain's next model ran cn's Bash tool and
// the answer quotes the command's output; the printed undo line puts the
// original bytes back.
func TestContinueSetUpAnswersThroughTheGateway(t *testing.T) {
	t.Parallel()
	clienttest.Continue(t)
	srv, gw, events, stop := cnGateway(t)
	home := t.TempDir()
	dir := filepath.Join(home, ".continue")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cnUserConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runSetup(t, map[string]string{"HOME": home}, "continue", "--url", gw)
	if code != 0 {
		t.Fatalf("setup continue: exit %d\n%s\n%s", code, out, errOut)
	}
	merged, _ := os.ReadFile(path)
	if !bytes.HasSuffix(merged, []byte("\n  # the model I use at work\n  - name: Work Claude\n    provider: anthropic\n    model: claude-sonnet-5-5\n    apiKey: ${{ secrets.WORK_ANTHROPIC_KEY }}\n    roles:\n      - chat\n      - edit\n\nrules:\n  - Answer briefly.\n")) ||
		!bytes.HasPrefix(merged, []byte("# Continue CLI configuration (mine)\nname: My Assistant   # shown in cn's header\nversion: 1.0.0\nschema: v1\n\nmodels:\n  - name: spillway\n")) {
		t.Fatalf("the user's bytes did not stay:\n%s", merged)
	}
	undo := undoCommand(t, out)

	if err := srv.AddFault(sim.Fault{Model: "gpt-6-astra", Kind: "capacity", Count: -1}); err != nil {
		t.Fatal(err)
	}
	token := cnToolLoop(t, srv, "gpt-6.1-sol", home)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := clienttest.RunContinue(t, ctx, clienttest.ContinueOptions{Home: home, Prompt: "Run cat token.txt and tell me what it printed",
		Env: []string{"OPENAI_API_KEY=sk-test-cn-setup"}, Timeout: 2 * time.Minute})
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "The command printed "+token) {
		t.Fatalf("cn: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	stop()
	const want = "openai/gpt-6-astra:capacity > openai/gpt-6.1-sol:ok"
	if got := routes(t, events, "/v1/chat/completions"); strings.Count(got, want) != 2 {
		t.Errorf("routes %q: want both turns (the tool call and its result) %q", got, want)
	}

	cmd := exec.Command("sh", "-c", undo)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", undo, err, b)
	}
	if b, _ := os.ReadFile(path); string(b) != cnUserConfig {
		t.Fatalf("undo did not restore the original bytes:\n%s", b)
	}
}

// With every gpt- model full, the codex chain's overflow (the claude
// chain, from its model of gpt-6-astra's tier, with spillway's own key)
// answers cn's Chat Completions requests, translated,
// its Bash tool call and the tool's result included.
func TestContinueAnsweredByClaudeWhenOpenAIIsFull(t *testing.T) {
	t.Parallel()
	clienttest.Continue(t)
	srv, gw, events, stop := cnGateway(t)
	for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"} {
		if err := srv.AddFault(sim.Fault{Model: m, Kind: "capacity", Count: -1}); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	token := cnToolLoop(t, srv, "claude-opus-5-5", home) // the claude chain's model of gpt-6-astra's tier
	os.MkdirAll(filepath.Join(home, ".continue"), 0o700)
	os.WriteFile(filepath.Join(home, ".continue", "config.yaml"), []byte(clienttest.ContinueConfig(gw, "gpt-6-astra")), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := clienttest.RunContinue(t, ctx, clienttest.ContinueOptions{Home: home, APIKey: "sk-test-cn-cross",
		Prompt: "Run cat token.txt and tell me what it printed", Timeout: 2 * time.Minute})
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "The command printed "+token) {
		t.Fatalf("cn: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	stop()
	const want = "anthropic/claude-opus-5-5:ok"
	if got := routes(t, events, "/v1/chat/completions"); strings.Count(got, want) != 2 || !strings.HasPrefix(got, "openai/gpt-6-astra:capacity") {
		t.Errorf("routes %q: want both turns ending at %s", got, want)
	}
}

// `spillway exec` with cn pointed straight at the simulator: cn names its
// model only in its configuration, so the command takes one file per
// model through the {model} placeholder. A model that does not exist (a
// 404 cn does not retry) moves exec to the next model; a refused key
// stops at 77. cn retries a full model itself for about 130 s (no
// setting turns that off), so each capacity case costs that much wall
// time (all cases run side by side; the all-full one walks once: its
// ladder's first wait is beyond --max-wait).
func TestExecContinue(t *testing.T) {
	t.Parallel()
	cn := clienttest.Continue(t)
	bin := spillwayBin(t)
	cases := []struct {
		name   string
		faults []sim.Fault
		args   []string
		code   int
		stdout string // in the answer
	}{
		{"the next model after a 404", []sim.Fault{{Model: "gpt-6-astra", Kind: "model_not_found", Count: -1}}, nil, 0, "[gpt-6.1-sol]"},
		{"a refused key stops at 77", []sim.Fault{{Model: "*", Kind: "auth", Count: -1}}, nil, agent.ExitAuth, ""},
		{"the next model when the first is full", []sim.Fault{{Model: "gpt-6-astra", Kind: "capacity", Count: -1}}, nil, 0, "[gpt-6.1-sol]"},
		// one model, one walk (cn's 130 s): the ladder's first wait passes the budget
		{"every model full: 75", []sim.Fault{{Model: "*", Kind: "capacity", Count: -1}}, []string{"--models", "gpt-6-astra", "--ladder", "1m", "--max-wait", "1ms"}, agent.ExitCapacity, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, simURL := simtest.Start(t, nil)
			for _, f := range c.faults {
				if err := srv.AddFault(f); err != nil {
					t.Fatal(err)
				}
			}
			home := t.TempDir()
			dir := filepath.Join(home, ".continue")
			os.MkdirAll(dir, 0o700)
			for _, m := range []string{"gpt-6-astra", "gpt-6.1-sol"} {
				os.WriteFile(filepath.Join(dir, m+".yaml"), []byte(clienttest.ContinueConfig(simURL, m)), 0o600)
			}
			work := filepath.Join(home, "work")
			os.MkdirAll(work, 0o700)
			ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
			defer cancel()
			args := []string{"exec", "--events", "-"}
			if !slices.Contains(c.args, "--models") {
				args = append(args, "--models", "gpt-6-astra,gpt-6.1-sol")
			}
			args = append(args, c.args...)
			args = append(args, "--", cn, "-p", "--config", filepath.Join(dir, "{model}.yaml"), "Say hello")
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = work
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + t.TempDir()},
				clienttest.ContinueQuiet(clienttest.ContinueKeyVar+"=sk-test-cn-exec")...)
			code, stdout, stderr := runCmd(t, cmd)
			t.Logf("spillway %s: exit %d\n--- stdout:\n%s\n--- stderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
			if code != c.code || !strings.Contains(stdout, c.stdout) {
				t.Fatalf("exit %d, want %d; stdout %q, want %q in it", code, c.code, stdout, c.stdout)
			}
			if !strings.Contains(stderr, `{"status":"error"`) {
				t.Errorf("cn's own failure line is not in its output:\n%s", stderr)
			}
		})
	}
}
