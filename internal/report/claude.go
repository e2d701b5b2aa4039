package report

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/wire"
)

// Claude Code (2.1) keeps a transcript per session under
// $CLAUDE_CONFIG_DIR (or ~/.claude)/projects/<dir>/<session>.jsonl. Each
// request is an "api-request" line (params.model); each failed attempt it
// retries is a {"type":"system","subtype":"api_error","error":{"status",
// "message"},"retryAttempt","maxRetries","retryInMs"} line; the answer is
// an assistant line (message.model, message.usage, one line per content
// block of the same message.id), or, when it gave up, an assistant line
// with isApiErrorMessage, apiErrorStatus and apiErrorType. Written by
// hand: nothing else reads these files.

func claudeFiles(home string) []string {
	return walkFiles(filepath.Join(home, "projects"), func(_, name string) bool { return strings.HasSuffix(name, ".jsonl") })
}

type claudeLine struct {
	Type      string    `json:"type"`
	Subtype   string    `json:"subtype"`
	Timestamp time.Time `json:"timestamp"`
	Params    *struct {
		Model string `json:"model"`
	} `json:"params"`
	Error          json.RawMessage `json:"error"`
	RetryInMS      int64           `json:"retryInMs"`
	IsAPIError     bool            `json:"isApiErrorMessage"`
	APIErrorStatus int             `json:"apiErrorStatus"`
	APIErrorType   string          `json:"apiErrorType"`
	Message        *struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"` // a string, or blocks
		Usage   *struct {
			Input       int `json:"input_tokens"`
			CacheCreate int `json:"cache_creation_input_tokens"`
			CacheRead   int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

var claudeWanted = [][]byte{[]byte(`"api-request"`), []byte(`"api_error"`), []byte(`"assistant"`), []byte(`"type":"user"`)}

func readClaude(path string, a *Aggregate, dup dedup) Input {
	var in Input
	var (
		model, asked string    // the current attempt's model; the request's first
		sent         time.Time // when the current attempt was sent
		size         int       // the last known input size of the session
		tries        int       // failed attempts of the current request
		wait         int64     // what the next attempt waited
		lastMsg      string    // the message id already counted
	)
	add := func(e Event) {
		e.Source, e.Model, e.InTokens, e.WaitMS = "claude", model, size, wait
		e.First, e.Fallback = tries == 0, asked != "" && model != asked
		start := sent // the turn's start: its request's, when it was logged
		if start.IsZero() {
			start = e.TS
		}
		switch {
		case dup.inLog("claude", start, model, asked):
			in.Duplicates++
		case a.Add(e):
			in.Events++
		}
		wait = 0
	}
	jsonLines(path, claudeWanted, &in, func(line []byte) bool {
		var l claudeLine
		if json.Unmarshal(line, &l) != nil {
			return false
		}
		switch {
		case l.Type == "user":
			// a new prompt (or a tool's result): retries never come after
			// one, so a sequence left unfinished (Esc) ends here
			tries, asked, wait = 0, "", 0
		case l.Type == "api-request" && l.Params != nil:
			model, sent = l.Params.Model, l.Timestamp
			if tries == 0 {
				asked = model
			}
		case l.Type == "system" && l.Subtype == "api_error":
			var e struct {
				Status  int    `json:"status"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(l.Error, &e)
			add(Event{TS: l.Timestamp, Class: claudeClass(e.Status, "", e.Message), Latency: -1, Message: e.Message})
			tries++
			wait = l.RetryInMS
		case l.Type == "assistant" && l.Message != nil && l.IsAPIError:
			text := wire.ContentText(l.Message.Content)
			add(Event{TS: l.Timestamp, Class: claudeClass(l.APIErrorStatus, l.APIErrorType, text), Latency: -1, Message: text})
			tries, asked = 0, ""
		case l.Type == "assistant" && l.Message != nil && l.Message.Usage != nil && l.Message.Model != "<synthetic>" &&
			(l.Message.ID == "" || l.Message.ID != lastMsg): // not another content block of a message counted
			lastMsg = l.Message.ID
			if l.Message.Model != "" {
				model = l.Message.Model
			}
			u := l.Message.Usage
			if n := u.Input + u.CacheCreate + u.CacheRead; n > 0 {
				size = n
			}
			e := Event{TS: l.Timestamp, Class: "ok", Latency: -1}
			if !sent.IsZero() {
				e.Latency = l.Timestamp.Sub(sent).Milliseconds()
			}
			add(e)
			tries, asked = 0, ""
		}
		return true
	})
	return in
}

// claudeClass judges a failure Claude Code recorded: its HTTP status and
// the error body in its message ("529 {…}"), or the error type of its last
// word.
func claudeClass(status int, errType, message string) string {
	body := message
	if i := strings.IndexByte(message, '{'); i >= 0 {
		body = message[i:]
	}
	if errType != "" && !strings.HasPrefix(body, "{") {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": errType, "message": message}})
		body = string(b)
	}
	v := classify.Classify(classify.Input{Status: status, Body: []byte(body), Provider: classify.Anthropic})
	if v.Class == classify.Unknown {
		v = classify.Classify(classify.Input{Text: message, Provider: classify.Anthropic})
	}
	return string(v.Class)
}
