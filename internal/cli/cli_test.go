package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/spillway/spillway/internal/classifytest"
)

// run executes one spillway command line in-process.
func run(t *testing.T, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	code = app.Run(context.Background(), args)
	return out.String(), errb.String(), code
}

func TestExplainCorpus(t *testing.T) {
	t.Parallel()
	for _, e := range classifytest.Load(t, "../../testdata/classify") {
		t.Run(e.File+"/"+e.Name, func(t *testing.T) {
			args := []string{"explain", "--json"}
			for k, v := range e.Headers {
				args = append(args, "--header", k+": "+v)
			}
			if e.Hint != "" {
				args = append(args, "--provider", e.Hint)
			}
			stdin := ""
			switch {
			case e.Event != "":
				stdin = fmt.Sprintf("event: %s\ndata: %s\n\n", e.Event, e.Body)
			case e.Status != 0:
				args = append(args, "--status", fmt.Sprint(e.Status))
				stdin = e.Body
			default:
				stdin = e.Text
			}
			if strings.TrimSpace(stdin) == "" {
				stdin = " " // explain refuses empty input; an empty 503 body is given as a blank
				if e.Status == 0 {
					t.Skip("no input")
				}
				args = append(args, " ")
			} else {
				args = append(args, "-")
			}
			out, errOut, code := run(t, nil, stdin, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got struct {
				Class       string  `json:"class"`
				Provider    string  `json:"provider"`
				Retryable   bool    `json:"retryable"`
				WaitSeconds float64 `json:"wait_seconds"`
				Summary     string  `json:"summary"`
				Action      string  `json:"action"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("bad json %q: %v", out, err)
			}
			if got.Class != e.Want.Class {
				t.Errorf("class = %s, want %s", got.Class, e.Want.Class)
			}
			if e.Want.Provider != "" && got.Provider != e.Want.Provider {
				t.Errorf("provider = %s, want %s", got.Provider, e.Want.Provider)
			}
			if e.Want.Retryable != nil && got.Retryable != *e.Want.Retryable {
				t.Errorf("retryable = %v, want %v", got.Retryable, *e.Want.Retryable)
			}
			if w, ok := e.WantWait(t); ok && e.Now == "" && math.Abs(got.WaitSeconds-w.Seconds()) > 1e-6 {
				t.Errorf("wait_seconds = %v, want %v", got.WaitSeconds, w.Seconds())
			}
			if got.Summary == "" || got.Action == "" {
				t.Errorf("no summary/action: %s", out)
			}
		})
	}
}

func TestExplainHuman(t *testing.T) {
	t.Parallel()
	out, _, code := run(t, nil, "", "explain", "ERROR: Selected model is at capacity. Please try a different model.")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := "capacity: the model's shared pool is full; this is not your account. Switch model or wait; spillway serve does it for you."
	if first, _, _ := strings.Cut(out, "\n"); first != want {
		t.Fatalf("first line = %q\nwant %q", first, want)
	}
	if !strings.Contains(out, "provider:  openai") || !strings.Contains(out, "retry:     yes") {
		t.Fatalf("details missing:\n%s", out)
	}
}

func TestExplainUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"empty stdin", "", []string{"explain"}, "nothing to explain"},
		{"bad header", "", []string{"explain", "--header", "nocolon", "x"}, "write it as 'Name: value'"},
		{"bad status", "", []string{"explain", "--status", "999", "x"}, "from 100 to 599"},
		{"huge input", strings.Repeat("x", maxExplainInput+10), []string{"explain", "-"}, "larger than 4 MiB"},
		{"empty TEXT", "", []string{"explain", ""}, "nothing to explain: TEXT is empty"},
		{"blank TEXT", "", []string{"explain", "  ", ""}, "nothing to explain: TEXT is empty"},
		{"a status that is not a number", "", []string{"explain", "--status", "abc", "x"}, "--status abc: give a whole number (see 'spillway explain --help')"},
		{"an unknown provider", "", []string{"explain", "--provider", "foo", "x"}, `--provider "foo": give openai, anthropic, gemini, bedrock, vertex or azure`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := run(t, nil, c.stdin, c.args...)
			if code != ExitUsage || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, ExitUsage, c.want)
			}
		})
	}
}

func TestExplainSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	body := `{"error":{"message":"Incorrect API key provided: sk-proj-AAAABBBBCCCCDDDDEEEE.","type":"invalid_request_error","code":"invalid_api_key"}}`
	out, _, _ := run(t, nil, body, "explain", "--status", "401", "-")
	if strings.Contains(out, "AAAABBBBCCCC") {
		t.Fatalf("key printed:\n%s", out)
	}
	if !strings.Contains(out, "auth:") {
		t.Fatalf("not auth:\n%s", out)
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	out, _, code := run(t, nil, "", "config", "check")
	if code != 0 || !strings.Contains(out, "# ok: built-in defaults") || !strings.Contains(out, "gpt-6-astra") {
		t.Fatalf("defaults: exit %d\n%s", code, out)
	}
	out, _, code = run(t, map[string]string{"OPENAI_API_KEY": "sk-proj-TOPSECRETTOPSECRET"}, "", "config", "check", "../../testdata/config/good/custom.yaml")
	if code != 0 || !strings.Contains(out, "custom.yaml over the built-in defaults") || !strings.Contains(out, "gpt-6-mini") {
		t.Fatalf("good file: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "TOPSECRET") || !strings.Contains(out, "env:OPENAI_API_KEY (set)") {
		t.Fatalf("secret not masked:\n%s", out)
	}
	_, errOut, code := run(t, nil, "", "config", "check", "../../testdata/config/bad/unknown_tier.yaml")
	if code != ExitFail || !strings.Contains(errOut, "unknown_tier.yaml:4:11: models.my-model.tier: unknown tier \"huge\"; allowed: heavy, medium, light") {
		t.Fatalf("bad file: exit %d\n%s", code, errOut)
	}
	out, _, code = run(t, nil, "", "config", "check", "../../testdata/config/good/one_of_each.yaml")
	if code != 0 || !strings.Contains(out, "; 1 model, 1 chain; secrets masked") {
		t.Fatalf("one of each: exit %d\n%s", code, out)
	}
	// every mistake at once, and the count is theirs
	_, errOut, code = run(t, nil, "", "config", "check", "../../testdata/config/bad/every_stage.yaml")
	if code != ExitFail || strings.Count(errOut, "every_stage.yaml:") != 5 || !strings.HasSuffix(errOut, "spillway: 5 problems in ../../testdata/config/bad/every_stage.yaml\n") {
		t.Fatalf("every stage: exit %d\n%s", code, errOut)
	}
	_, errOut, code = run(t, nil, "", "config", "check", "../../testdata/config/bad/unknown_field.yaml")
	if code != ExitFail || !strings.HasSuffix(errOut, "spillway: 1 problem in ../../testdata/config/bad/unknown_field.yaml\n") {
		t.Fatalf("one problem: exit %d\n%s", code, errOut)
	}
	_, errOut, code = run(t, nil, "", "config", "check", "does-not-exist.yaml")
	if code != ExitFail || !strings.Contains(errOut, "does-not-exist.yaml") {
		t.Fatalf("missing file: exit %d\n%s", code, errOut)
	}
	// a model's deployments, in the order a request spills through them
	out, _, code = run(t, map[string]string{"AZURE_OPENAI_API_KEY": "k"}, "", "config", "check", "../../testdata/config/good/deployments.yaml")
	if code != 0 || !strings.Contains(out, "# gpt-6-astra: openai (openai, weight 3), azure (azure as astra-prod, weight 1)") {
		t.Fatalf("deployments: exit %d\n%s", code, out)
	}
	// a model's pools on the clouds: the cloud, its region, the cloud's own id
	out, _, code = run(t, map[string]string{"BEDROCK_KEY": "k"}, "", "config", "check", "../../testdata/config/good/clouds_all.yaml")
	if code != 0 || !strings.Contains(out, "bedrock-east (bedrock-east: bedrock us-east-1 as arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0, weight 1)") ||
		!strings.Contains(out, "# gemini-3-pro: vertex-east (vertex-east: vertex us-east5 as gemini-2.5-pro, weight 1)") ||
		!strings.Contains(out, "vertex-global (vertex-global: vertex global as claude-sonnet-4-5@20250929, weight 1)") {
		t.Fatalf("pools: exit %d\n%s", code, out)
	}
	// --config and SPILLWAY_CONFIG are honoured
	out, _, code = run(t, map[string]string{"SPILLWAY_CONFIG": "../../testdata/config/good/custom.yaml"}, "", "config", "check", "-q")
	if code != 0 || !strings.Contains(out, "ok: ../../testdata/config/good/custom.yaml") {
		t.Fatalf("SPILLWAY_CONFIG: exit %d\n%s", code, out)
	}
}

// A chain that mixes vendors, or overflows into another vendor's chain:
// config check marks each cross-vendor step of a walk, says once where such
// steps are skipped, and warns (exit 0) when a step's provider has no key.
func TestConfigCheckCrossVendor(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mixed.yaml")
	os.WriteFile(file, []byte("models:\n  gpt-6-astra: { chain: mixed }\n  gpt-6.1-sol: { chain: mixed }\nchains:\n"+
		"  mixed: [gpt-6-astra, gpt-6.1-sol, claude-sonnet-5-5]\n  claude: [claude-opus-5-5, claude-haiku-5-5]\n"), 0o600)
	const note = "# note: [format, translated] is a cross-vendor step, sent with its provider's own api_key; the gateway and prompt steps translate it, spillway exec and queue command steps (an agent's -m) skip it"
	keyWarning := "warning: " + file + ":5: chains.mixed[2]: claude-sonnet-5-5 is another vendor's (anthropic) model: a cross-vendor step uses its provider's own api_key, and provider anthropic has none (ANTHROPIC_API_KEY is not set in this environment), so this step is always skipped"

	// a keyed anthropic provider: the step is marked, nothing is warned
	out, errOut, code := run(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-TOPSECRET"}, "", "config", "check", file)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"#   gpt-6-astra: gpt-6-astra > gpt-6.1-sol > claude-sonnet-5-5 [anthropic, translated] (chain mixed)\n",
		"#   gpt-6.1-sol: gpt-6.1-sol > claude-sonnet-5-5 [anthropic, translated] (chain mixed)\n",
		"#   claude-sonnet-5-5: claude-sonnet-5-5 (chain mixed)\n", // its own walk is not cross-vendor
		"#   claude-opus-5-5: claude-opus-5-5 > claude-haiku-5-5 (chain claude)\n",
		note + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "# note:") != 1 || strings.Contains(errOut, "another vendor's") || strings.Contains(out+errOut, "TOPSECRET") {
		t.Errorf("one note, no cross-vendor warning, no key:\n%s\n%s", out, errOut)
	}

	// no key: the same walk, and a warning with the file and line
	out, errOut, code = run(t, nil, "", "config", "check", file)
	if code != 0 || !strings.Contains(out, "gpt-6.1-sol > claude-sonnet-5-5 [anthropic, translated] (chain mixed)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, keyWarning+"\n") || strings.Count(errOut, "another vendor's") != 1 {
		t.Errorf("want one warning %q; got:\n%s", keyWarning, errOut)
	}

	// an overflow into another vendor's chain, from the models at or below
	// the asked tier, marked the same way
	out, errOut, code = run(t, map[string]string{"ANTHROPIC_API_KEY": "k"}, "", "config", "check", "../../testdata/config/good/cross_vendor.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"#   gpt-6-astra: gpt-6-astra > gpt-6.1-sol (chain openai) then overflow: claude-sonnet-5-5 [anthropic, translated] > claude-haiku-5-5 [anthropic, translated] (chain claude)\n",
		"#   gpt-6.1-sol: gpt-6.1-sol (chain openai) then overflow: claude-sonnet-5-5 [anthropic, translated] > claude-haiku-5-5 [anthropic, translated] (chain claude)\n",
		"#   claude-sonnet-5-5: claude-sonnet-5-5 > claude-haiku-5-5 (chain claude)\n",
		note + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if want := "warning: ../../testdata/config/good/cross_vendor.yaml:14: chains.openai.overflow: claude-haiku-5-5 is another vendor's (anthropic) model with images: false, and gpt-6-astra takes images: a cross-vendor step to it loses images, so a request with images skips it\n"; !strings.Contains(errOut, want) || strings.Contains(errOut, "api_key") {
		t.Errorf("want only the images warning %q; got:\n%s", want, errOut)
	}

	// an overflow of a heavy model's chain reaches no pricier model; a
	// chain of one vendor gets no marks and no note
	os.WriteFile(file, []byte("chains:\n  claude: { models: [claude-sonnet-5-5, claude-haiku-5-5], overflow: codex }\n"), 0o600)
	out, errOut, code = run(t, map[string]string{"OPENAI_API_KEY": "k"}, "", "config", "check", file)
	if code != 0 || !strings.Contains(out, "#   claude-sonnet-5-5: claude-sonnet-5-5 > claude-haiku-5-5 (chain claude) then overflow: gpt-6.1-sol [openai, translated] > gpt-6-luna [openai, translated] (chain codex)\n") ||
		!strings.Contains(out, "#   claude-haiku-5-5: claude-haiku-5-5 (chain claude) then overflow: gpt-6-luna [openai, translated] (chain codex)\n") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, _ = run(t, nil, "", "config", "check")
	if strings.Contains(out, "translated") || strings.Contains(out, "# note:") {
		t.Errorf("the built-in chains are marked cross-vendor:\n%s", out)
	}
}

func TestInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "spillway.yaml")
	out, _, code := run(t, nil, "", "init", path)
	if code != 0 || !strings.Contains(out, "wrote "+path) {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	if _, _, code := run(t, nil, "", "config", "check", "-q", path); code != 0 {
		t.Fatal("starter file does not pass config check")
	}
	os.WriteFile(path, []byte("listen: 127.0.0.1:1\n"), 0o600)
	_, errOut, code := run(t, nil, "", "init", path)
	if code != ExitFail || !strings.Contains(errOut, "already exists; use --force") {
		t.Fatalf("overwrite without --force: exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(path); string(b) != "listen: 127.0.0.1:1\n" {
		t.Fatal("file changed without --force")
	}
	if _, _, code := run(t, nil, "", "init", "--force", path); code != 0 {
		t.Fatal("--force failed")
	}
	if b, _ := os.ReadFile(path + ".bak"); string(b) != "listen: 127.0.0.1:1\n" {
		t.Fatal("no backup kept")
	}
	// default location under HOME
	home := t.TempDir()
	if _, _, code := run(t, map[string]string{"HOME": home}, "", "init"); code != 0 {
		t.Fatal("init to default path failed")
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "spillway", "spillway.yaml")); err != nil {
		t.Fatal(err)
	}
}

// What comes from a pasted log is never written raw to the terminal: an
// escape sequence in it could recolour, move or retitle it.
func TestExplainWritesNoControlCharacters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"a body", []string{"explain", "--status", "503", "{\"error\":{\"message\":\"overloaded \x1b[31mred\x1b]0;title\x07 \xff\"}}"}},
		{"a line", []string{"explain", "Error: 529 overloaded_error \x1b[2J\x9b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, code := run(t, nil, "", c.args...)
			if code != 0 || strings.ContainsAny(out, "\x1b\x07\u009b") || !utf8.ValidString(out) {
				t.Fatalf("exit %d, output %q", code, out)
			}
		})
	}
}

// A mistyped word under a group of commands is refused with the group's
// commands and a suggestion, as the root refuses one, not answered with
// help and 0.
func TestAMistypedCommandIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ args, want string }{
		{"config chek", `unknown command "chek" for "spillway config"; did you mean "check"? (its commands: check, hash-key; see 'spillway config --help')`},
		{"queue foo", `unknown command "foo" for "spillway queue" (its commands: add, cancel, ls, purge, retry, run, show;`},
		{"setup foo", `unknown command "foo" for "spillway setup" (its commands: claude, cline, codex, continue, copilot, gemini, opencode, qwen, service;`},
		{"bench overhed", `did you mean "overhead"?`},
	} {
		t.Run(c.args, func(t *testing.T) {
			out, errOut, code := run(t, nil, "", strings.Fields(c.args)...)
			if code != ExitUsage || !strings.Contains(errOut, c.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, ExitUsage, c.want)
			}
		})
	}
	if out, _, code := run(t, nil, "", "queue"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Fatalf("queue alone: exit %d, %q", code, out)
	}
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	out, _, code := run(t, nil, "", "version")
	if code != 0 || !strings.HasPrefix(out, "spillway ") {
		t.Fatalf("version: %d %q", code, out)
	}
	_, errOut, code := run(t, nil, "", "no-such-command")
	if code != ExitUsage || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	// the help says what the gateway serves today
	out, _, _ = run(t, nil, "", "serve", "--help")
	for _, w := range []string{"Gemini CLI", "/v1beta/models/MODEL:generateContent", ":countTokens (under /v1/ too)", "/backend-api/codex/", "/v1internal", "/readyz", "GET / (the dashboard)", "POST /spillway/reload", "X-Spillway-Budget", "X-Spillway-Hold"} {
		if !strings.Contains(out, w) {
			t.Errorf("serve --help lacks %q", w)
		}
	}
	out, _, code = run(t, nil, "", "help")
	if code != 0 || !strings.Contains(out, "explain") || !strings.Contains(out, "config") {
		t.Fatalf("help: %d %q", code, out)
	}
}

// A line of spillway's own event log is explained with where it went.
func TestExplainAnEventRecord(t *testing.T) {
	t.Parallel()
	line := `{"ts":"2026-11-30T09:47:41Z","request_id":"f9d8","attempt":2,"source":"gateway","provider":"openai-eu","model":"gpt-6-astra","deployment":"eu","status":503,"class":"capacity","error":"Our servers are currently overloaded. Please try again later."}`
	out, _, code := run(t, nil, line, "explain", "-")
	if code != 0 || !strings.HasPrefix(out, "capacity:") || !strings.Contains(out, "where:     gpt-6-astra@eu at openai-eu, request f9d8, attempt 2 (gateway)") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// The documented deployment stays valid: its configuration passes `config
// check` (with its secrets in the environment) and its compose file has
// two gateways that read it, Redis and Postgres.
func TestDeployFiles(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SPILLWAY_TEAM_KEY": "team-key", "SPILLWAY_ADMIN_KEY": "admin-key",
		"OPENAI_API_KEY": "sk-a", "ANTHROPIC_API_KEY": "sk-b", "GEMINI_API_KEY": "g"}
	out, errOut, code := run(t, env, "", "config", "check", "../../deploy/spillway.yaml")
	if code != 0 || !strings.Contains(out, "state: redis://redis:6379/0") {
		t.Fatalf("config check of deploy/spillway.yaml: %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile("../../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
			Ports   []string `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gateway-a", "gateway-b"} {
		s := compose.Services[name]
		if !slices.Contains(s.Command, "serve") || !slices.Contains(s.Command, "/etc/spillway/spillway.yaml") || len(s.Ports) != 1 {
			t.Fatalf("%s: %+v", name, s)
		}
	}
	for _, name := range []string{"redis", "postgres"} {
		if _, ok := compose.Services[name]; !ok {
			t.Fatalf("no %s service", name)
		}
	}
}

func TestBenchSoakUsageErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"short duration", []string{"--duration", "10ms"}, "--duration 10ms: at least 1s"},
		{"no rate", []string{"--rps", "0"}, "--rps 0: from above 0 to 2000"},
		{"missing dir", []string{"--dir", filepath.Join(t.TempDir(), "nope")}, "not a directory; create it first, or leave --dir out"},
		{"dir is a file", []string{"--dir", file}, "not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := run(t, nil, "", append([]string{"bench", "soak"}, c.args...)...)
			if code != ExitUsage || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, ExitUsage, c.want)
			}
		})
	}
}

func TestBenchResilienceRefusesAMissingEventsDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nope")
	_, errOut, code := run(t, nil, "", "bench", "resilience", "--tasks", "1", "--events", dir)
	if code != ExitUsage || !strings.Contains(errOut, "--events "+dir+": not a directory; create it first") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// A wrong number of arguments is said in the command's own words: what
// it takes and its usage line, not cobra's "requires at least 1 arg(s)".
func TestArgumentCountsAreSaid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exec"}, "spillway: exec: missing COMMAND [ARGS...]; usage: spillway exec [flags] -- COMMAND [ARGS...]\n"},
		{[]string{"queue", "show"}, "spillway: queue show: missing ID; usage: spillway queue show ID [flags]\n"},
		{[]string{"queue", "retry", "1", "2"}, "spillway: queue retry: takes ID, not 2 arguments; usage: spillway queue retry ID [flags]\n"},
		{[]string{"config", "check", "a.yaml", "b.yaml"}, "spillway: config check: takes [FILE], not 2 arguments; usage: spillway config check [FILE] [flags]\n"},
	} {
		_, errOut, code := run(t, nil, "", c.args...)
		if code != ExitUsage || errOut != c.want {
			t.Errorf("%v: exit %d, stderr %q\nwant 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// --give-back-after must be positive: the gateway gives memory back after
// that long with nothing in flight.
func TestServeGiveBackAfterUsage(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0s", "-1s"} {
		_, errOut, code := run(t, nil, "", "serve", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--events", "-", "--give-back-after", v)
		if code != ExitUsage || !strings.Contains(errOut, "--give-back-after "+v+": must be positive") {
			t.Fatalf("--give-back-after %s: exit %d, stderr %q", v, code, errOut)
		}
	}
}
