package setup

import (
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// cloudVars are the variables each cloud mode may set, and the other
// providers' switches a run of it must leave unset.
var cloudVars = []string{
	"CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "AWS_REGION", "CLAUDE_CODE_SKIP_BEDROCK_AUTH", "AWS_BEARER_TOKEN_BEDROCK",
	"CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_BASE_URL", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "CLAUDE_CODE_SKIP_VERTEX_AUTH",
	"ANTHROPIC_CUSTOM_HEADERS", "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CODE_USE_ANTHROPIC_AWS", "CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD",
	"CLAUDE_CODE_USE_MANTLE",
}

var cloudCases = []struct {
	name string
	env  func(string, string, Cloud) string
	c    Cloud
	want map[string]string // the variables of cloudVars set afterwards
}{
	{"bedrock", ClaudeBedrockEnv, Cloud{}, map[string]string{
		"CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:8787/bedrock",
		"AWS_REGION": "us-east-1", "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1"}},
	{"bedrock with key and region", ClaudeBedrockEnv, Cloud{Region: "eu-west-3", Key: `k'e"y $x` + "`"}, map[string]string{
		"CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:8787/bedrock",
		"AWS_REGION": "eu-west-3", "AWS_BEARER_TOKEN_BEDROCK": `k'e"y $x` + "`"}},
	{"vertex", ClaudeVertexEnv, Cloud{}, map[string]string{
		"CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_BASE_URL": "http://127.0.0.1:8787/vertex/v1",
		"ANTHROPIC_VERTEX_PROJECT_ID": "spillway", "CLOUD_ML_REGION": "us-east5", "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1"}},
	{"vertex with key, project and region", ClaudeVertexEnv, Cloud{Region: "europe-west1", Project: "my-proj", Key: "sk-gw 1"}, map[string]string{
		"CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_BASE_URL": "http://127.0.0.1:8787/vertex/v1",
		"ANTHROPIC_VERTEX_PROJECT_ID": "my-proj", "CLOUD_ML_REGION": "europe-west1", "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1",
		"ANTHROPIC_CUSTOM_HEADERS": "Authorization: Bearer sk-gw 1"}},
}

// TestClaudeCloudEnv: the lines set what the mode needs, every other line
// is a comment or an unset, the comments say what is (not) used, and the
// undo names every variable set.
func TestClaudeCloudEnv(t *testing.T) {
	for _, tt := range cloudCases {
		for _, shell := range Shells {
			t.Run(tt.name+"/"+shell, func(t *testing.T) {
				got := tt.env("http://127.0.0.1:8787/v1/", shell, tt.c)
				set, undo := map[string]string{}, ""
				for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
					switch {
					case strings.HasPrefix(l, "# Add the lines below"):
						_, undo, _ = strings.Cut(l, "; undo: ")
					case strings.HasPrefix(l, "# "):
					case strings.HasPrefix(l, "unset "), strings.HasPrefix(l, "set -e "), strings.HasPrefix(l, "Remove-Item "):
					default:
						name, value, ok := parseSet(l, shell)
						if !ok {
							t.Fatalf("not a comment, unset or set line: %q", l)
						}
						set[name] = value
					}
				}
				want := map[string]string{}
				for k, v := range tt.want {
					want[k] = v
				}
				// the sh and fish lines are single-quoted; PowerShell's parse below is rough
				if shell != "powershell" && !reflect.DeepEqual(set, want) {
					t.Errorf("sets %v\nwant %v\n%s", set, want, got)
				}
				if shell == "powershell" && len(set) != len(want) {
					t.Errorf("sets %v\nwant %v\n%s", set, want, got)
				}
				for name := range want {
					if !strings.Contains(undo, name) {
						t.Errorf("undo %q does not unset %s", undo, name)
					}
				}
				for _, w := range []string{"ANTHROPIC_BASE_URL is not read", "Nothing of"} {
					if !strings.Contains(got, w) {
						t.Errorf("no %q in:\n%s", w, got)
					}
				}
				if tt.c.Key != "" && !strings.Contains(got, "gateway key") {
					t.Errorf("the key is not explained:\n%s", got)
				}
			})
		}
	}
}

// parseSet reads a sh or fish set line (values single-quoted or plain).
func parseSet(l, shell string) (name, value string, ok bool) {
	switch shell {
	case "fish":
		rest, ok := strings.CutPrefix(l, "set -gx ")
		if !ok {
			return "", "", false
		}
		name, value, _ = strings.Cut(rest, " ")
	case "powershell":
		rest, ok := strings.CutPrefix(l, "$env:")
		if !ok {
			return "", "", false
		}
		name, value, _ = strings.Cut(rest, " = ")
		return name, value, true
	default:
		rest, ok := strings.CutPrefix(l, "export ")
		if !ok {
			return "", "", false
		}
		name, value, _ = strings.Cut(rest, "=")
	}
	if strings.HasPrefix(value, "'") {
		value = strings.ReplaceAll(strings.Trim(value, "'"), `'\''`, `'`)
	}
	return name, value, true
}

// TestClaudeCloudEnvEval runs each mode's output through the real shells
// installed (sh always; bash, dash, fish and pwsh when present) in an
// environment where the other providers' switches and the other auth are
// set, and reads the environment back: the mode's variables, nothing of the
// others; then the undo line leaves none of them.
func TestClaudeCloudEnvEval(t *testing.T) {
	stale := []string{"CLAUDE_CODE_USE_VERTEX=1", "CLAUDE_CODE_USE_BEDROCK=1", "CLAUDE_CODE_USE_FOUNDRY=1",
		"CLAUDE_CODE_USE_MANTLE=1", "CLAUDE_CODE_SKIP_BEDROCK_AUTH=1"}
	type shellRun struct {
		name, syntax string
		args         func(script string) []string
	}
	var shells []shellRun
	for _, sh := range []string{"sh", "bash", "dash"} {
		shells = append(shells, shellRun{sh, "sh", func(s string) []string { return []string{"-c", s} }})
	}
	shells = append(shells, shellRun{"fish", "fish", func(s string) []string { return []string{"-c", s} }},
		shellRun{"pwsh", "powershell", func(s string) []string { return []string{"-NoProfile", "-Command", s} }})
	ran := 0
	for _, sr := range shells {
		bin, err := exec.LookPath(sr.name)
		if err != nil {
			continue
		}
		ran++
		for _, tt := range cloudCases {
			t.Run(sr.name+"/"+tt.name, func(t *testing.T) {
				out := tt.env("http://[::1]:8787", sr.syntax, tt.c)
				want := map[string]string{}
				for k, v := range tt.want {
					want[k] = strings.Replace(v, "127.0.0.1", "[::1]", 1)
				}
				for _, undo := range []bool{false, true} {
					script := evalScript(sr.syntax, out, undo)
					cmd := exec.Command(bin, sr.args(script)...)
					cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, stale...)
					b, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("%s: %v\n%s\nscript:\n%s", sr.name, err, b, script)
					}
					got := map[string]string{}
					for _, l := range strings.Split(string(b), "\n") {
						if k, v, ok := strings.Cut(l, "="); ok && slices.Contains(cloudVars, k) {
							got[k] = v
						}
					}
					if strings.HasPrefix(tt.name, "vertex") {
						delete(got, "CLAUDE_CODE_SKIP_BEDROCK_AUTH") // Bedrock's own: Vertex mode does not read it
					}
					w := want
					if undo {
						// the stale switches the mode unset stay unset; its own are gone
						w = map[string]string{}
					}
					if !reflect.DeepEqual(got, w) {
						t.Errorf("undo=%v: environment %v\nwant %v\noutput:\n%s", undo, got, w, out)
					}
				}
			})
		}
	}
	if ran == 0 {
		t.Skip("no shell")
	}
}

// evalScript evaluates out as the docs say (eval, source, Invoke-Expression),
// then with undo runs the undo line of its comment, and prints the
// environment.
func evalScript(syntax, out string, undo bool) string {
	undoLine := "true"
	if syntax == "powershell" {
		undoLine = "$null"
	}
	if undo {
		for _, l := range strings.Split(out, "\n") {
			if _, u, ok := strings.Cut(l, "; undo: "); ok {
				undoLine = u
			}
		}
	}
	switch syntax {
	case "fish":
		return "echo " + shQuote(out) + " | source; " + undoLine + "; env"
	case "powershell":
		return "'" + strings.ReplaceAll(out, "'", "''") + "' | Invoke-Expression; " + undoLine +
			`; Get-ChildItem Env: | ForEach-Object { "$($_.Name)=$($_.Value)" }`
	}
	return `eval "$(printf '%s' ` + shQuote(out) + `)"; ` + undoLine + "; env"
}
