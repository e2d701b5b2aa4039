package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/spillway/spillway/internal/clienttest"
	"github.com/spillway/spillway/internal/format/bedrock"
)

// cloudCall is one request the fake cloud front end saw.
type cloudCall struct{ method, path, auth string }

// fakeCloud stands for the gateway's /bedrock and /vertex front ends:
// it answers Claude Code's calls the way the clouds do (a stream as an AWS
// event stream for Bedrock, as server-sent events for Vertex AI), and
// keeps what came (at most 100 calls).
type fakeCloud struct {
	mu    sync.Mutex
	calls []cloudCall
}

// answerEvents are a whole answer, as Messages events.
var answerEvents = []string{
	`{"type":"message_start","message":{"id":"msg_setup","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello from the cloud modes."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`,
	`{"type":"message_stop"}`,
}

func (f *fakeCloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, 8<<20))
	f.mu.Lock()
	if len(f.calls) < 100 {
		f.calls = append(f.calls, cloudCall{r.Method, r.URL.Path, r.Header.Get("Authorization")})
	}
	f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/bedrock/inference-profiles"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"inferenceProfileSummaries":[]}`)
	case strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream"):
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		for _, e := range answerEvents {
			bedrock.WriteChunk(w, []byte(e))
		}
	case strings.HasSuffix(r.URL.Path, ":streamRawPredict"):
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range answerEvents {
			var ev struct{ Type string }
			json.Unmarshal([]byte(e), &ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, e)
		}
	case strings.HasSuffix(r.URL.Path, "/invoke"), strings.HasSuffix(r.URL.Path, ":rawPredict"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_probe","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[{"type":"text","text":"."}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeCloud) seen() []cloudCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cloudCall(nil), f.calls...)
}

// TestRealClaudeInCloudModes runs the real Claude Code with the environment
// ClaudeBedrockEnv and ClaudeVertexEnv print, evaluated by sh as the docs
// say (eval "$(…)"), in an environment where the other mode's switch and
// ANTHROPIC_BASE_URL (a dead address) are set: Claude Code answers from the
// base URL the output names, on the paths of its mode, with no credential or
// exactly the gateway key.
func TestRealClaudeInCloudModes(t *testing.T) {
	bin := clienttest.Claude(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	const key = "sk-spillway-setup-key-42"
	tests := []struct {
		name  string
		env   func(string, string, Cloud) string
		c     Cloud
		stale string // the switch that would win, set before the eval
		turn  string // the path of the turn
		auth  string // every call's Authorization
	}{
		{"bedrock", ClaudeBedrockEnv, Cloud{}, "CLAUDE_CODE_USE_VERTEX=1",
			"/bedrock/model/us.anthropic.claude-sonnet-5-5/invoke-with-response-stream", ""},
		{"bedrock with a gateway key", ClaudeBedrockEnv, Cloud{Key: key}, "CLAUDE_CODE_SKIP_BEDROCK_AUTH=1",
			"/bedrock/model/us.anthropic.claude-sonnet-5-5/invoke-with-response-stream", "Bearer " + key},
		{"vertex", ClaudeVertexEnv, Cloud{}, "CLAUDE_CODE_USE_BEDROCK=1",
			"/vertex/v1/projects/spillway/locations/us-east5/publishers/anthropic/models/claude-sonnet-5-5:streamRawPredict", ""},
		{"vertex with a gateway key", ClaudeVertexEnv, Cloud{Key: key, Project: "my-proj"}, "CLAUDE_CODE_USE_BEDROCK=1",
			"/vertex/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-5-5:streamRawPredict", "Bearer " + key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeCloud{}
			srv := httptest.NewServer(f)
			defer srv.Close()
			out := tt.env(srv.URL, "sh", tt.c)
			home := t.TempDir()
			cfg := filepath.Join(home, ".claude")
			if err := os.Mkdir(cfg, 0o700); err != nil {
				t.Fatal(err)
			}
			env, work := clienttest.Env(t, home, []string{"CLAUDE_CONFIG_DIR=" + cfg, "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_MAX_RETRIES=0",
				"ANTHROPIC_BASE_URL=http://127.0.0.1:1", "ANTHROPIC_API_KEY=sk-ant-not-for-the-cloud-modes", tt.stale,
				"SETUP_OUT=" + out, "CLAUDE_BIN=" + bin})
			ctx, cancel := context.WithTimeout(context.Background(), clienttest.DefaultTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, sh, "-c", `eval "$SETUP_OUT" && exec "$CLAUDE_BIN" -p hi --model claude-sonnet-5-5`)
			cmd.Dir, cmd.Env = work, env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			err := cmd.Run()
			if cmd.Process != nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			calls := f.seen()
			if err != nil || !strings.Contains(stdout.String(), "Hello from the cloud modes.") {
				t.Fatalf("claude: %v\nstdout: %s\nstderr: %s\ncalls: %+v", err, stdout.String(), stderr.String(), calls)
			}
			t.Logf("%d calls: %+v", len(calls), calls)
			turns := 0
			for _, c := range calls {
				if c.path == tt.turn {
					turns++
				}
				if c.auth != tt.auth {
					t.Errorf("%s %s: Authorization %q, want %q", c.method, c.path, c.auth, tt.auth)
				}
			}
			if turns != 1 {
				t.Errorf("%d calls of %s, want 1: %+v", turns, tt.turn, calls)
			}
		})
	}
}
