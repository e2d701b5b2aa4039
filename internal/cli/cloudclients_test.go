package cli

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/clienttest"
)

// Claude Code in its Bedrock mode as the docs set it up: `spillway sim`
// with two Bedrock regions and the cloud-pools scenario (the Anthropic
// API's claude-sonnet-5-5 full, and Bedrock's in us-east-1), `spillway
// serve` with testdata/config/good/clouds.yaml, and the environment
// `spillway setup claude --bedrock` prints, evaluated by sh. The real
// Claude Code, given only that environment, is answered by Bedrock
// us-west-2, and the event log names the pool.
func TestClaudeCodeBedrockModeAsSetupSays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	clienttest.Claude(t)
	const (
		keyID   = "AKIDCLICLAUDE0000001"
		secret  = "CANARYcliClaudeAwsSecret1f2e3d"
		session = "CANARYcliClaudeAwsSession9a8b"
	)
	docs := docsClouds(t, keyID, secret, session)
	bin, dir, events := docs.bin, docs.dir, docs.events
	base, logs, stop := startServeStop(t, bin, dir, docs.config, "--listen", "127.0.0.1:0", "--events", events)

	// what setup prints, evaluated in sh from an empty environment: the
	// variables it leaves set are Claude Code's whole setup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-c", `eval "$("$0" setup claude --bedrock --url "$1" --shell sh)" && env`, bin, base)
	sh.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	out, err := sh.Output()
	if err != nil {
		t.Fatalf("eval of setup's output: %v\n%s", err, out)
	}
	var env []string
	for _, kv := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_":
		default:
			env = append(env, kv)
		}
	}
	for _, want := range []string{"CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_BEDROCK_BASE_URL=" + base + "/bedrock", "CLAUDE_CODE_SKIP_BEDROCK_AUTH=1"} {
		if !strings.Contains("\n"+strings.Join(env, "\n")+"\n", "\n"+want+"\n") {
			t.Fatalf("setup's environment %q lacks %s", env, want)
		}
	}

	zero := 0
	res := clienttest.RunClaude(t, ctx, clienttest.ClaudeOptions{Env: env, Model: "claude-sonnet-5-5", Prompt: "Reply with pong", MaxRetries: &zero})
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "[bedrock/claude-sonnet-5-5]") {
		t.Fatalf("exit %d: stdout %q is not Bedrock's answer\nstderr: %s\nserve's log:\n%s", res.ExitCode, res.Stdout, res.Stderr, logs())
	}
	// the event log is written in the background, its record of the
	// stream's end a moment after Claude Code may have read that end:
	// serve, stopped, has finished its requests and flushed its log
	stop()
	if !recordsName(t, events, "/bedrock/model/{model}/invoke-with-response-stream", "bedrock-west") {
		b, _ := os.ReadFile(events)
		t.Fatalf("no ok record of Claude Code's turn names bedrock-west:\n%s", b)
	}
	if strings.Contains(logs(), secret) || strings.Contains(logs(), session) {
		t.Fatal("serve's log holds an AWS secret")
	}
}
