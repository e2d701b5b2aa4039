package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/wire"
)

// Gemini CLI (0.61) records each session under
// ~/.gemini/tmp/<project>/chats/session-<time>-<first 8 of its id>.jsonl
// ($GEMINI_CLI_HOME in place of ~ when set): a metadata line, then message
// lines, "$set" lines that replace the message list and "$rewindTo" lines
// that cut it. When a request fails, Gemini CLI rewinds the turn it was
// for, so a run that failed on its first request leaves nothing to resume
// (and `--resume` refuses such a session: "No previous sessions found").
// Only a run that got somewhere first (a tool call answered, say) leaves
// a session worth resuming; geminiResumable says which.
//
// Written here because no Go library reads Gemini CLI's files; it follows
// the rules of Gemini CLI's own loader (loadConversationRecord and
// isResumableMessageRecord).

// geminiDir is Gemini CLI's .gemini directory, as the agent sees it.
func geminiDir(o Options) string { return agentfiles.GeminiHome(childEnv(o)) }

// geminiResumable reports whether session id, under Gemini CLI's .gemini
// directory dir, holds a turn that Gemini CLI would resume.
func geminiResumable(dir, id string) bool {
	if len(id) < 8 || dir == "" {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tmp", "*", "chats", "session-*-"+id[:8]+".json*"))
	for _, f := range files {
		if sid, ok := readGeminiSession(f); sid == id && ok {
			return true
		}
	}
	return false
}

// geminiMessage is the part of a recorded message that decides.
type geminiMessage struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []any           `json:"toolCalls"`
	Thoughts  []any           `json:"thoughts"`
}

// readGeminiSession replays one session file: its id, and whether what is
// left of its messages holds anything resumable.
func readGeminiSession(path string) (id string, resumable bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if strings.HasSuffix(path, ".json") { // the older format: one object
		var rec struct {
			SessionID string          `json:"sessionId"`
			Messages  []geminiMessage `json:"messages"`
		}
		if json.NewDecoder(f).Decode(&rec) != nil {
			return "", false
		}
		return rec.SessionID, anyResumable(rec.Messages)
	}
	var msgs []geminiMessage
	put := func(m geminiMessage) { // a message id seen again keeps its place
		for i := range msgs {
			if msgs[i].ID == m.ID {
				msgs[i] = m
				return
			}
		}
		msgs = append(msgs, m)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	for sc.Scan() {
		var rec struct {
			geminiMessage
			SessionID string `json:"sessionId"`
			Rewind    string `json:"$rewindTo"`
			Set       *struct {
				Messages *[]geminiMessage `json:"messages"`
			} `json:"$set"`
			Messages []geminiMessage `json:"messages"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // Gemini CLI skips a line it cannot read too
		}
		switch {
		case rec.Rewind != "":
			cut := 0
			for i, m := range msgs {
				if m.ID == rec.Rewind {
					cut = i
					break
				}
			}
			msgs = msgs[:cut]
		case rec.ID != "":
			put(rec.geminiMessage)
		case rec.Set != nil:
			if rec.Set.Messages != nil {
				msgs = append([]geminiMessage{}, *rec.Set.Messages...)
			}
		case rec.SessionID != "":
			id = rec.SessionID
			for _, m := range rec.Messages {
				put(m)
			}
		}
	}
	return id, anyResumable(msgs)
}

func anyResumable(msgs []geminiMessage) bool {
	for _, m := range msgs {
		text := strings.TrimSpace(wire.ContentText(m.Content))
		switch m.Type {
		case "user":
			if text != "" && !strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "?") &&
				!strings.HasPrefix(text, "<session_context>") && !strings.HasPrefix(text, "<hook_context>") {
				return true
			}
		case "gemini":
			if text != "" || len(m.ToolCalls) > 0 || len(m.Thoughts) > 0 {
				return true
			}
		}
	}
	return false
}

// geminiOneAttempt reports whether the settings.json at path (the user's)
// gives general.maxAttempts 1, read as Gemini CLI reads it.
func geminiOneAttempt(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	s, _ := agentfiles.ParseGeminiSettings(b)
	g, _ := s["general"].(map[string]any)
	return g["maxAttempts"] == float64(1)
}

// geminiOneAttemptJSON is the system settings file exec gives Gemini CLI.
const geminiOneAttemptJSON = `{"general":{"maxAttempts":1}}` + "\n"

// geminiSystemSettings writes the system settings file that turns Gemini
// CLI's own retries off into gemini/settings.json of spillway's state
// directory (events.StateDir; the directory made 0700), and returns its
// path; or it says why Gemini CLI would not read it there (see
// geminiSkips), writing nothing. uid is the user spillway runs as: Gemini
// CLI reads no file but root's, so it must be 0.
func geminiSystemSettings(getenv func(string) string, uid int) (string, error) {
	state := events.StateDir(getenv)
	if state == "" {
		return "", errors.New("spillway has no state directory for Gemini CLI's settings (neither XDG_STATE_HOME nor HOME is set)")
	}
	dir := filepath.Join(state, "gemini")
	path := filepath.Join(dir, "settings.json")
	if uid != 0 {
		return "", fmt.Errorf("Gemini CLI reads a system settings file only when root owns it and every directory above it, and spillway runs as uid %d", uid)
	}
	if why := geminiSkips(path); why != "" { // before anything is made there
		return "", errors.New(why)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, []byte(geminiOneAttemptJSON)) {
		// a new file renamed into place: a run reading it never sees half
		f, err := os.CreateTemp(dir, ".settings-*.json")
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(geminiOneAttemptJSON)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
			return "", err
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", err
	}
	if why := geminiSkips(path); why != "" {
		return "", errors.New(why)
	}
	return path, nil
}

// geminiSkips says why Gemini CLI 0.61 would skip path as its system
// settings file, "" when it would read it. Its settings loader reads a
// system file only when its security check of the file and of every
// directory above it passes (isFileAndDirectorySecureSync, in Gemini
// CLI's core security utilities): on a POSIX system each of them must be
// owned by root (uid 0) and not writable by group or others, a symbolic
// link among them must be root's too, and the path the links resolve to
// must pass the same; a part that does not exist yet is no objection. A
// skipped file is only a warning to Gemini CLI, which then runs with its
// own retries.
func geminiSkips(path string) string {
	check := func(p string) string {
		lst, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		if err != nil {
			return fmt.Sprintf("Gemini CLI cannot check %s: %v", p, err)
		}
		if uid := owner(lst); lst.Mode()&fs.ModeSymlink != 0 && uid != 0 {
			return fmt.Sprintf("Gemini CLI skips a system settings file below a link root does not own, and the link %s is uid %d's", p, uid)
		}
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Sprintf("Gemini CLI cannot check %s: %v", p, err)
		}
		if uid := owner(st); uid != 0 {
			return fmt.Sprintf("Gemini CLI reads a system settings file only when root owns it and every directory above it, and %s is uid %d's", p, uid)
		}
		if mode := st.Sys().(*syscall.Stat_t).Mode & 0o7777; mode&0o022 != 0 {
			return fmt.Sprintf("Gemini CLI skips a system settings file below a directory that group or others can write, and %s is one (mode %o)", p, mode)
		}
		return ""
	}
	walk := func(file string) string {
		// the directories from the nearest up, then the file, as Gemini
		// CLI checks them
		for d := filepath.Dir(file); ; d = filepath.Dir(d) {
			if why := check(d); why != "" {
				return why
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		return check(file)
	}
	path = filepath.Clean(path)
	if why := walk(path); why != "" {
		return why
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		return walk(real)
	}
	return ""
}

// owner is the user id that owns fi's file.
func owner(fi fs.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }
