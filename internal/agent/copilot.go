package agent

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spillway/spillway/internal/wire"
)

// GitHub Copilot CLI (1.0.102) in its bring-your-own-provider mode
// (COPILOT_PROVIDER_BASE_URL and friends, no GitHub sign-in): the model is
// COPILOT_MODEL or --model (settings.json's "model" is not read in this
// mode: without one of the two it refuses to start); `copilot -p PROMPT`
// runs headless and prints, on stderr, a stats block ending in
// "Resume     copilot --resume=<id>" (also after a failure; not with -s);
// with --output-format json its last line is {"type":"result",…,
// "sessionId":…}. `--resume=<id>` keeps the session's model and ignores
// COPILOT_MODEL, but --model beside it switches the model (both
// observed); a session whose first request failed resumes with its prompt.
//
// Its retries of a 429 or 5xx are its native runtime's, and no setting or
// variable of 1.0.102 turns them off: copilotSpec has no failFast. Five
// retries, about 15 s in all (measured: "total retry wait time: 14.49
// seconds" for a 503 without retry-after; a retry-after is waited instead,
// at least 1 s each).

// copilotSpec is what exec knows of Copilot (see spec).
var copilotSpec = spec{
	names:      []string{"copilot"},
	format:     wire.OpenAI,
	modelFlags: []string{"--model"},
	resume:     copilotResume,
	session:    copilotSession,
	errorLine:  copilotErrorLine,
	model: &modelSource{env: "COPILOT_MODEL", dirEnv: "COPILOT_HOME", homeDir: ".copilot", file: "settings.json",
		model: func([]byte) string { return "" }}, // settings.json's "model" is for GitHub's models only
}

// copilotErrorLine matches what Copilot CLI prints about a failed request:
// on stderr "Failed to get response from the AI model; retried 5 times …
// Last error: 503 …", "Authentication failed with provider at URL (HTTP
// 401).", "Model 'M' not found on provider at …", "Could not connect to
// local model provider at …", a bare "400 <the provider's message>" (and
// "503 spillway: capacity: …", the gateway's last word, which it does not
// retry); with
// --output-format json its session.error event. Its tool output is shown
// indented ("  │ …", "  └ …") and never matches.
var copilotErrorLine = regexp.MustCompile(`^(Failed to get response from the AI model|Authentication failed with provider|Model '[^']*' not found on provider|Resource not found on provider|Could not connect to (local )?model provider|[45]\d\d \S|\{"type":"session\.error")`)

var (
	copilotResumeRe = regexp.MustCompile(`copilot --resume=([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
	copilotResultRe = regexp.MustCompile(`"type":"result".*"sessionId":"([0-9a-f-]{36})"`)
)

// copilotSession is the session a run used: the resume line it printed,
// its JSON result line, else the newest session under
// $COPILOT_HOME/session-state (~/.copilot) written since the run began.
func copilotSession(_ context.Context, args []string, out runOut, o Options, since time.Time) string {
	for _, t := range []*tail{out.stderr, out.stdout} {
		if t == nil {
			continue
		}
		if m := copilotResumeRe.FindAllStringSubmatch(t.String(), -1); m != nil {
			return m[len(m)-1][1]
		}
		if m := copilotResultRe.FindStringSubmatch(t.String()); m != nil {
			return m[1]
		}
	}
	return newestCopilotSession(copilotHome(o), since)
}

// copilotHome is Copilot CLI's directory as the agent sees it.
func copilotHome(o Options) string {
	env := childEnv(o)
	if d := env("COPILOT_HOME"); d != "" {
		return d
	}
	if h := env("HOME"); h != "" {
		return filepath.Join(h, ".copilot")
	}
	return ""
}

// newestCopilotSession is the session-state/<id> whose events.jsonl was
// written last, since t.
func newestCopilotSession(home string, since time.Time) string {
	if home == "" {
		return ""
	}
	dirs, _ := os.ReadDir(filepath.Join(home, "session-state"))
	best, bestT := "", since.Add(-2*time.Second)
	for _, d := range dirs {
		if !d.IsDir() || !uuidRe.MatchString(d.Name()) || len(d.Name()) != 36 {
			continue
		}
		fi, err := os.Stat(filepath.Join(home, "session-state", d.Name(), "events.jsonl"))
		if err == nil && fi.ModTime().After(bestT) {
			best, bestT = d.Name(), fi.ModTime()
		}
	}
	return best
}

// copilotResume is `copilot [flags] -p PROMPT` continuing session id on
// model: the flags that choose a session and the model go, --model
// MODEL follows the command, the prompt is replaced, and --resume=ID is added. Only a headless run (-p) resumes.
func copilotResume(args []string, id, model, prompt string) ([]string, bool) {
	if id == "" || flagValue(args, "-p", "--prompt") == "" {
		return nil, false
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasEq := strings.Cut(a, "=")
		switch {
		case name == "--resume" || name == "-r" || name == "--connect":
			// an optional value: the word after a bare --resume, unless a flag
			if !hasEq && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		case name == "--session-id":
			if !hasEq && i+1 < len(args) {
				i++
			}
			continue
		case name == "--model":
			if !hasEq && i+1 < len(args) {
				i++
			}
			continue
		case a == "--continue":
			continue
		}
		out = append(out, a)
	}
	// (not WithModel, which reads the specs, this one among them)
	out = append([]string{out[0], "--model", model}, out[1:]...)
	return append(replacePrompt(out, prompt), "--resume="+id), true
}
