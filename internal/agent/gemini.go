package agent

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

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
