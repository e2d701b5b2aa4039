package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/gateway"
	"github.com/spillway/spillway/sim"
)

// The real Claude Code (2.1.328) in its Bedrock mode, in an AWS region of
// the eu prefix, asked for its "sonnet" alias: its first call lists the
// gateway's inference profiles, which its AWS SDK reads without an error
// (its debug log says "Failed to list Bedrock inference profiles" when it
// cannot: the broken case proves the check), and its turn is answered.
//
// In a -p run the list comes too late to choose the turn's model: Claude
// Code sends its own id for the alias (eu.anthropic.claude-sonnet-4-5-
// 20250929-v1:0), which the gateway serves only when a model of that name
// (or a deployment of that id) is configured, as here: the name of
// Claude Code's default routed to claude-sonnet-5-5 on Bedrock.
func TestCloudClaudeCodeReadsTheProfiles(t *testing.T) {
	bin := clienttest.Claude(t)
	const alias = "claude-sonnet-4-5" // Claude Code's sonnet on Bedrock
	for _, broken := range []bool{false, true} {
		name := "the gateway's list"
		if broken {
			name = "a broken list"
		}
		t.Run(name, func(t *testing.T) {
			cr := newCloudRig(t, func(o *gateway.Options) {
				o.Config.Models[alias] = config.Model{Tier: config.Medium, Deployments: []config.Deployment{
					{Provider: "bedrock-east", Upstream: "eu.anthropic.claude-sonnet-5-5-20261001-v1:0"}}}
			})
			var mu sync.Mutex
			var calls []string
			h := cr.gw.Handler()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				calls = append(calls, r.Method+" "+r.URL.EscapedPath())
				mu.Unlock()
				if broken && strings.HasPrefix(r.URL.Path, "/bedrock/inference-profiles") {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"inferenceProfileSummaries":{"not":"a list"}}`)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(hs.Close)
			_, env, home := clienttest.ClaudeEnv(t, clienttest.ClaudeOptions{BaseURL: "http://127.0.0.1:1"})
			env = append(env, "CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_BEDROCK_BASE_URL="+hs.URL+"/bedrock", "AWS_REGION=eu-west-1",
				"CLAUDE_CODE_SKIP_BEDROCK_AUTH=1", "CLAUDE_CODE_MAX_RETRIES=0")
			full, work := clienttest.Env(t, home, env)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			const prompt = "Reply with pong"
			cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--model", "sonnet", "--debug")
			cmd.Dir, cmd.Env = work, full
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			err := cmd.Run()
			if cmd.Process != nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			var failed []string
			logs, _ := filepath.Glob(filepath.Join(home, ".claude", "debug", "*"))
			for _, f := range logs {
				b, _ := os.ReadFile(f)
				for _, l := range strings.Split(string(b), "\n") {
					if strings.Contains(l, "inference profiles") {
						failed = append(failed, l)
					}
				}
			}
			mu.Lock()
			seen := strings.Join(calls, "\n")
			mu.Unlock()
			if err != nil || len(logs) == 0 {
				t.Fatalf("claude: %v (%d debug logs)\ncalls:\n%s\nstdout: %s\nstderr: %s", err, len(logs), seen, stdout.String(), stderr.String())
			}
			if want := sim.Answer("bedrock/"+cloudModel, prompt, 16); !strings.Contains(stdout.String(), want) {
				t.Errorf("stdout %q lacks %q", stdout.String(), want)
			}
			if !strings.HasPrefix(seen, "GET /bedrock/inference-profiles\n") || !strings.Contains(seen, "POST /bedrock/model/eu.anthropic."+alias+"-20250929-v1:0/invoke") {
				t.Errorf("Claude Code's calls:\n%s", seen)
			}
			if got := strings.Join(failed, "\n"); broken != strings.Contains(got, "Failed to list Bedrock inference profiles") {
				t.Errorf("Claude Code's log of the list (broken: %v): %q", broken, got)
			}
		})
	}
}
