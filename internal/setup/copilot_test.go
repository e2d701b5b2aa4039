package setup

import (
	"os/exec"
	"strings"
	"testing"
)

func TestCopilotEnv(t *testing.T) {
	cases := []struct {
		name  string
		c     CopilotSetup
		shell string
		want  []string // lines, in order
	}{
		{"chat, sh", CopilotSetup{BaseURL: "http://127.0.0.1:8787/v1/", Model: "gpt-6-astra", EnvKey: "OPENAI_API_KEY"}, "sh", []string{
			"unset COPILOT_PROVIDER_BEARER_TOKEN COPILOT_PROVIDER_API_KEY_COMMAND COPILOT_PROVIDER_WIRE_MODEL COPILOT_PROVIDER_MODEL_ID",
			"export COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:8787/v1",
			"export COPILOT_PROVIDER_TYPE=openai",
			"export COPILOT_PROVIDER_WIRE_API=completions",
			"export COPILOT_MODEL=gpt-6-astra",
			`export COPILOT_PROVIDER_API_KEY="$OPENAI_API_KEY"`}},
		{"responses, fish", CopilotSetup{BaseURL: "http://127.0.0.1:9000", Type: CopilotOpenAI, Wire: CopilotResponses, Model: "gpt-6.1-sol", EnvKey: "SPILLWAY_KEY"}, "fish", []string{
			"set -gx COPILOT_PROVIDER_BASE_URL http://127.0.0.1:9000/v1",
			"set -gx COPILOT_PROVIDER_WIRE_API responses",
			"set -gx COPILOT_PROVIDER_API_KEY $SPILLWAY_KEY"}},
		{"anthropic, powershell", CopilotSetup{BaseURL: "http://127.0.0.1:9000", Type: CopilotAnthropic, Model: "claude-opus-5-5", EnvKey: "ANTHROPIC_API_KEY"}, "pwsh", []string{
			`$env:COPILOT_PROVIDER_BASE_URL = "http://127.0.0.1:9000"`,
			`$env:COPILOT_PROVIDER_TYPE = "anthropic"`,
			`$env:COPILOT_MODEL = "claude-opus-5-5"`,
			`$env:COPILOT_PROVIDER_API_KEY = $env:ANTHROPIC_API_KEY`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CopilotEnv(c.c, c.shell)
			at := 0
			for _, w := range c.want {
				i := strings.Index(got[at:], w+"\n")
				if i < 0 {
					t.Fatalf("no line %q (in order) in:\n%s", w, got)
				}
				at += i + len(w)
			}
			if c.c.Type == CopilotAnthropic && strings.Contains(got, "WIRE_API=") {
				t.Errorf("a wire API for the anthropic type:\n%s", got)
			}
			// the variables unset are named, and that undo leaves them unset
			if !strings.Contains(got, "# The first line unsets what would override these (COPILOT_PROVIDER_BEARER_TOKEN, COPILOT_PROVIDER_API_KEY_COMMAND, COPILOT_PROVIDER_WIRE_MODEL, COPILOT_PROVIDER_MODEL_ID);\n# the undo line does not bring them back") {
				t.Errorf("it does not say the undo line leaves the overriding variables unset:\n%s", got)
			}
			if !strings.Contains(got, "writes no file") || !strings.Contains(got, "undo: ") {
				t.Errorf("it does not say it writes no file, or how to undo:\n%s", got)
			}
		})
	}
}

// The sh lines, run by sh: the key comes from the variable they name, when
// they run, and what would override them is gone.
func TestCopilotEnvInSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	lines := CopilotEnv(CopilotSetup{BaseURL: "http://127.0.0.1:8787", Model: "gpt-6-astra", EnvKey: "MY_KEY"}, "sh")
	cmd := exec.Command(sh, "-c", lines+"\nenv")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MY_KEY=sk-test-copilot 'quoted' $x", "COPILOT_PROVIDER_BEARER_TOKEN=old", "COPILOT_PROVIDER_WIRE_MODEL=old"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	for k, want := range map[string]string{"COPILOT_PROVIDER_API_KEY": "sk-test-copilot 'quoted' $x", "COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:8787/v1",
		"COPILOT_MODEL": "gpt-6-astra", "COPILOT_PROVIDER_BEARER_TOKEN": "", "COPILOT_PROVIDER_WIRE_MODEL": ""} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if strings.Contains(lines, "sk-test") {
		t.Errorf("the key's value is in the lines:\n%s", lines)
	}
}

func TestCopilotState(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		state string
	}{
		{"nothing", map[string]string{}, ""},
		{"the gateway", map[string]string{"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:8787/v1"}, "api key"},
		{"a bearer token", map[string]string{"COPILOT_PROVIDER_BASE_URL": "http://gw.internal:8787/v1", "COPILOT_PROVIDER_BEARER_TOKEN": "t"}, "bearer token"},
		{"OpenAI itself", map[string]string{"COPILOT_PROVIDER_BASE_URL": "https://api.openai.com/v1"}, ""},
		{"Azure", map[string]string{"COPILOT_PROVIDER_BASE_URL": "https://mine.openai.azure.com"}, ""},
		{"not a URL", map[string]string{"COPILOT_PROVIDER_BASE_URL": "127.0.0.1"}, ""},
		{"OpenRouter's /api/v1", map[string]string{"COPILOT_PROVIDER_BASE_URL": "https://openrouter.example.test/api/v1"}, ""},
		{"anthropic type: the gateway's root", map[string]string{"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:8787", "COPILOT_PROVIDER_TYPE": "anthropic"}, "api key"},
		{"openai type at a root: not the gateway's path", map[string]string{"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:11434"}, ""},
		{"a password in it", map[string]string{"COPILOT_PROVIDER_BASE_URL": "http://me:hunter2@gw.internal:8787/v1"}, "api key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state, where := CopilotState(func(k string) string { return c.env[k] })
			if state != c.state {
				t.Fatalf("state %q, want %q", state, c.state)
			}
			if (state != "") != strings.Contains(where, "COPILOT_PROVIDER_BASE_URL") {
				t.Errorf("where %q", where)
			}
			if strings.Contains(where, "hunter2") {
				t.Errorf("where %q shows the URL's password", where)
			}
		})
	}
}
