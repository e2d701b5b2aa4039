package behaviour_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/agent"
)

// execWant is a behaviour under spillway exec: the agent is this test
// binary playing a CLI agent (fakeAgent), sent to the row's upstream.
type execWant struct {
	models string // the chain, --models
	exit   int
	route  string // the event log's route
	stderr string // what spillway says
	// ladder replaces the configured one (nil: the configuration's);
	// budget is --max-wait
	ladder []time.Duration
	budget time.Duration
}

func TestMain(m *testing.M) {
	if os.Getenv("SPILLWAY_FAKE_AGENT") != "" {
		os.Exit(fakeAgent(os.Getenv("SPILLWAY_FAKE_AGENT"), os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// fakeAgent plays a CLI agent the way Codex behaves (see the wire notes,
// docs/client-notes.md): one Chat Completions request for model to the upstream at base;
// the answer on stdout and exit 0, or Codex's own error line on stderr and
// exit 1.
func fakeAgent(base, model string) int {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"fix the tests"}]}`, model)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-fake-agent-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR: stream disconnected before completion: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 {
		fmt.Println(text(b))
		return 0
	}
	var e struct {
		Error struct {
			Message, Code string
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	switch {
	case e.Error.Code == "server_is_overloaded":
		fmt.Fprintln(os.Stderr, "ERROR: Selected model is at capacity. Please try a different model.")
	case e.Error.Code == "insufficient_quota":
		fmt.Fprintln(os.Stderr, "ERROR: Quota exceeded. Check your plan and billing details.")
	case resp.StatusCode == 429:
		fmt.Fprintln(os.Stderr, "ERROR: exceeded retry limit, last status: 429 Too Many Requests")
	default:
		fmt.Fprintf(os.Stderr, "ERROR: unexpected status %s: %s, url: %s\n", resp.Status, e.Error.Message, req.URL)
	}
	return 1
}

// TestBehavioursUnderExec runs the rows that apply to a CLI agent under
// spillway exec.
func TestBehavioursUnderExec(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slices.Concat(capacityRows(), behaviourRows(), answerRows()) {
		if r.exec == nil {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			w := newWorld(t, r)
			x := r.exec
			var stdout, stderr bytes.Buffer
			res := agent.Run(context.Background(), agent.Options{
				Command: []string{bin, "{model}"}, Config: w.cfg, Engine: w.eng, Models: strings.Split(x.models, ","),
				Ladder: x.ladder, MaxWait: x.budget, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
				Env: append(os.Environ(), "SPILLWAY_FAKE_AGENT="+w.up), Events: w.sink(), Getenv: os.Getenv,
			})
			if res.ExitCode != x.exit {
				t.Fatalf("exit %d, want %d (%+v)\nstderr: %s", res.ExitCode, x.exit, res, stderr.String())
			}
			if x.route != "" && w.route() != x.route {
				t.Fatalf("route %q, want %q", w.route(), x.route)
			}
			if !strings.Contains(stderr.String(), x.stderr) {
				t.Fatalf("stderr lacks %q:\n%s", x.stderr, stderr.String())
			}
			for _, rec := range w.records() {
				if rec.Source != "exec" {
					t.Fatalf("record %+v", rec)
				}
			}
		})
	}
}
