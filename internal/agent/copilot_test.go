package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
)

func TestCopilotArgs(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		want []string
		ok   bool
	}{
		{"adds --model after the command", []string{"copilot", "-p", "fix it", "--allow-all-tools"}, []string{"copilot", "--model", "m2", "-p", "fix it", "--allow-all-tools"}, true},
		{"replaces --model", []string{"copilot", "--model", "m1", "-p", "x"}, []string{"copilot", "--model", "m2", "-p", "x"}, true},
		{"replaces --model=", []string{"copilot", "-p", "x", "--model=m1"}, []string{"copilot", "-p", "x", "--model=m2"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := WithModel(c.in, "m2")
			if !reflect.DeepEqual(got, c.want) || ok != c.ok {
				t.Fatalf("WithModel = %v %v, want %v %v", got, ok, c.want, c.ok)
			}
		})
	}
	if KindOf("/opt/bin/copilot") != Copilot {
		t.Errorf("KindOf(copilot) = %q", KindOf("/opt/bin/copilot"))
	}
	if m := ModelIn([]string{"copilot", "--model", "gpt-6-luna", "-p", "x"}); m != "gpt-6-luna" {
		t.Errorf("ModelIn = %q", m)
	}
}

func TestCopilotResumeArgs(t *testing.T) {
	const id = "1e4a9c20-672c-45c5-86cf-d59e6482d4dd"
	cases := []struct {
		name string
		in   []string
		id   string
		want []string
		ok   bool
	}{
		{"a headless run", []string{"copilot", "-p", "fix it", "--allow-all-tools"}, id,
			[]string{"copilot", "--model", "m2", "-p", "go on", "--allow-all-tools", "--resume=" + id}, true},
		{"its model replaced, its own session flags dropped", []string{"copilot", "--model", "m1", "--resume", "old", "--continue", "--session-id", "x", "--prompt=fix", "-s"}, id,
			[]string{"copilot", "--model", "m2", "--prompt=go on", "-s", "--resume=" + id}, true},
		{"a bare --resume before a flag", []string{"copilot", "-r", "-p", "fix"}, id,
			[]string{"copilot", "--model", "m2", "-p", "go on", "--resume=" + id}, true},
		{"no session", []string{"copilot", "-p", "fix"}, "", nil, false},
		{"not headless", []string{"copilot", "-i", "fix"}, id, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := resumeArgs(c.in, c.id, "m2", "go on")
			if !reflect.DeepEqual(got, c.want) || ok != c.ok {
				t.Fatalf("resumeArgs = %q %v, want %q %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// What Copilot CLI 1.0.102 printed, against the simulator, when a request
// failed (stderr; the JSON event with --output-format json), and what it
// prints that is not its own failure.
func TestCopilotJudge(t *testing.T) {
	cases := []struct {
		name           string
		stderr, stdout string
		want           classify.Class
	}{
		{"full", "Failed to get response from the AI model; retried 5 times (total retry wait time: 14.49 seconds) Last error: 503 Our servers are currently overloaded. Please try again later.\n\n\nChanges    +0 -0\n",
			"● Request failed due to a transient API error. Retrying...\n", classify.Capacity},
		{"bad key", "Authentication failed with provider at http://127.0.0.1:18701/v1 (HTTP 401).\n  Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or COPILOT_PROVIDER_BEARER_TOKEN.\n", "", classify.Auth},
		{"quota", "Failed to get response from the AI model; retried 5 times (total retry wait time: 58.76 seconds) Last error: 429 You exceeded your current quota, please check your plan and billing details.", "", classify.Quota},
		{"rate limited", "Failed to get response from the AI model; retried 5 times (total retry wait time: 5.73 seconds) Last error: 429 Rate limit reached for gpt-6-luna in organization org-spillway-sim on requests per min (RPM). Please try again in 1s.", "", classify.RateLimit},
		{"no such model", "Model 'gpt-6-mini' not found on provider at http://127.0.0.1:18701/v1 (HTTP 404).\n  Check that the model is available on your provider.\n", "", classify.ModelNotFound},
		{"unreachable", "Could not connect to local model provider at http://127.0.0.1:18799/v1.\n  Check that the service is running and the port is correct.\n", "● Response was interrupted due to a server error. Retrying...\n", classify.Network},
		{"the gateway's last word", "503 spillway: capacity: every model of the chain is at capacity; tried gpt-6-astra (capacity, breaker_open), gpt-6.1-sol (capacity) in 14 attempts; waited 31.942s\n", "", classify.Capacity},
		{"context", "400 This model's maximum context length is 272000 tokens. However, your messages resulted in 13194 tokens. Please reduce the length of the messages.\n", "", classify.ContextLength},
		{"json", "", `{"type":"session.error","data":{"errorType":"authentication","message":"Authentication failed with provider at http://127.0.0.1:18701/v1 (HTTP 401).","statusCode":401}}`, classify.Auth},
		{"tool output", "", "● Run cat log (shell)\n  │ cat log\n  └ 503 Service Unavailable: overloaded\n\nThe log says: 503 overloaded, rate limit exceeded\n", classify.Unknown},
		{"its retry notice alone", "", "● Request failed due to a transient API error. Retrying...\n", classify.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := printed(c.stdout, c.stderr)
			if got := judge(classify.Classify, Copilot, out).Class; got != c.want {
				t.Fatalf("judge = %s, want %s", got, c.want)
			}
		})
	}
}

func TestCopilotSession(t *testing.T) {
	const id = "1e4a9c20-672c-45c5-86cf-d59e6482d4dd"
	home := t.TempDir()
	onDisk := "62025b12-f336-4bc4-aa26-830ab66acad1"
	dir := filepath.Join(home, ".copilot", "session-state", onDisk)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte("{}\n"), 0o600)
	since := time.Now()
	cases := []struct {
		name           string
		stderr, stdout string
		env            []string
		want           string
	}{
		{"the resume line", "\nChanges    +0 -0\nDuration   16s\nResume     copilot --resume=" + id + "\n", "", []string{"HOME=" + home}, id},
		{"the JSON result", "", `{"type":"result","timestamp":"2026-12-06T15:30:00.856Z","sessionId":"` + id + `","exitCode":1}`, []string{"HOME=" + home}, id},
		{"silent: the newest session on disk", "", "hi", []string{"HOME=" + home}, onDisk},
		{"COPILOT_HOME moves it", "", "hi", []string{"HOME=/nonexistent", "COPILOT_HOME=" + filepath.Join(home, ".copilot")}, onDisk},
		{"none", "", "", []string{"HOME=" + t.TempDir()}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := printed(c.stdout, c.stderr)
			if got := sessionOf(t.Context(), Copilot, []string{"copilot", "-p", "x"}, out, Options{Env: c.env}, since); got != c.want {
				t.Fatalf("session %q, want %q", got, c.want)
			}
		})
	}
}

func TestCopilotDefaultModel(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".copilot"), 0o700)
	// settings.json's model is for GitHub's models; with a provider Copilot
	// CLI refuses to start without COPILOT_MODEL or --model
	os.WriteFile(filepath.Join(home, ".copilot", "settings.json"), []byte(`{"model":"claude-sonnet-5.5"}`), 0o600)
	for _, c := range []struct {
		name        string
		env         map[string]string
		model, from string
	}{
		{"COPILOT_MODEL", map[string]string{"HOME": home, "COPILOT_MODEL": "gpt-6-luna"}, "gpt-6-luna", "COPILOT_MODEL"},
		{"settings.json's model is not it", map[string]string{"HOME": home}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, from := DefaultModel(Copilot, func(k string) string { return c.env[k] })
			if m != c.model || from != c.from {
				t.Fatalf("%q from %q, want %q from %q", m, from, c.model, c.from)
			}
		})
	}
}
