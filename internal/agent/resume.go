package agent

import (
	"context"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spillway/spillway/internal/agentfiles"
)

// DefaultResumePrompt is sent when a session is resumed and Options say
// no prompt of their own.
const DefaultResumePrompt = "Continue the task from where you left off."

// refusedHistory reports a provider's refusal of a conversation's history
// (the tool calls and results a resumed session holds), as against a
// request refused for another reason (a model name, a parameter).
func refusedHistory(msg string) bool {
	m := strings.ToLower(msg)
	for _, w := range []string{"function response parts", "function call turn", "tool_use", "tool_result", "tool_call", "thinking", "roles must alternate", "messages."} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

var (
	uuidRe   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	threadRe = regexp.MustCompile(`"type":"thread\.started","thread_id":"([^"]+)"`)
	claudeRe = regexp.MustCompile(`"session_id":"([^"]+)"`)
)

// sessionOf finds the session the run used: Codex's thread.started line
// (--json) or its newest rollout file; Claude's session_id (json output);
// for Gemini CLI the one its command line names, if it holds a turn to
// resume.
func sessionOf(ctx context.Context, kind Kind, args []string, out runOut, o Options, since time.Time) string {
	switch kind {
	case Gemini:
		id := flagValue(args, "--session-id", "--resume", "-r")
		if uuidRe.MatchString(id) && geminiResumable(geminiDir(o), id) {
			return id
		}
	case Codex:
		if m := threadRe.FindStringSubmatch(out.stdout.String()); m != nil {
			return m[1]
		}
		if f := newestRollout(codexHome(o), since); f != "" {
			return uuidRe.FindString(filepath.Base(f))
		}
	case Claude:
		if m := claudeRe.FindStringSubmatch(out.stdout.String()); m != nil {
			return m[1]
		}
	default:
		if s := specOf(kind); s != nil && s.session != nil {
			return s.session(ctx, args, out, o, since)
		}
	}
	return ""
}

func codexHome(o Options) string { return agentfiles.CodexHome(childEnv(o)) }

// newestRollout is the newest $CODEX_HOME/sessions/**/rollout-*.jsonl
// written since t.
func newestRollout(home string, since time.Time) string {
	return newestSince(filepath.Join(home, "sessions"), since, func(name string) bool {
		return strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".jsonl")
	})
}

// newestSince is the path of the newest file under root whose name is
// one of an agent's session files (match), written since a run started
// (less 2 s: a file system's times are coarse), or "" for none: the
// session that run wrote. Every agent whose sessions are files finds its
// run's this way.
func newestSince(root string, since time.Time, match func(name string) bool) string {
	best, bestT := "", since.Add(-2*time.Second)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !match(d.Name()) {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(bestT) {
			best, bestT = p, fi.ModTime()
		}
		return nil
	})
	return best
}
