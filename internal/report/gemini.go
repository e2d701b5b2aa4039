package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/wire"
)

// Gemini CLI (0.61) records a session under
// ~/.gemini/tmp/<project>/chats/session-*.jsonl: message lines (type "user"
// or "gemini"; a gemini one has model and tokens.input), "$set" lines that
// replace the message list and "$rewindTo" lines. In non-interactive runs
// it records no error message: a request that failed shows as a user
// message rewound away with no answer after it. Its error report,
// gemini-client-error-*-<time>.json in the temp directory, holds the
// error's message ({"error":{"message"}}), which gives the class. Written
// by hand: nothing else reads these files.

func geminiFiles(home string) []string {
	return walkFiles(filepath.Join(home, "tmp"), func(p, name string) bool {
		return strings.HasPrefix(name, "session-") && (strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json")) &&
			filepath.Base(filepath.Dir(p)) == "chats"
	})
}

// geminiError is one of Gemini CLI's error reports.
type geminiError struct {
	at      time.Time
	class   string
	message string
}

// geminiErrors reads the error reports in dir, oldest first.
func geminiErrors(dir string) []geminiError {
	names, _ := filepath.Glob(filepath.Join(dir, "gemini-client-error-*.json"))
	var out []geminiError
	for _, n := range names {
		// …-2026-11-30T21-16-15-012Z: the time is the last 24 characters,
		// an ISO time with its colons and point written as dashes
		base := strings.TrimSuffix(filepath.Base(n), ".json")
		if len(base) < 24 {
			continue
		}
		ts := []byte(base[len(base)-24:])
		ts[13], ts[16], ts[19] = ':', ':', '.'
		at, err := time.Parse(time.RFC3339Nano, string(ts))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		var rep struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &rep) != nil {
			continue
		}
		v := classify.Classify(classify.Input{Text: rep.Error.Message, Provider: classify.Gemini})
		out = append(out, geminiError{at: at, class: string(v.Class), message: rep.Error.Message})
	}
	slices.SortFunc(out, func(a, b geminiError) int { return a.at.Compare(b.at) })
	return out
}

// reportWithin is how long after a prompt its error report may come:
// Gemini CLI retries a 503 ten times by default (minutes) before it gives
// up and writes one.
const reportWithin = 15 * time.Minute

// classAfter is the class of the first error report within reportWithin
// after t, or "error".
func classAfter(errs []geminiError, t time.Time) (string, string) {
	for _, e := range errs {
		if !e.at.Before(t) && e.at.Sub(t) <= reportWithin {
			if e.class == string(classify.Unknown) {
				return "error", e.message
			}
			return e.class, e.message
		}
	}
	return "error", ""
}

type geminiRecord struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Model     string          `json:"model"`
	Content   json.RawMessage `json:"content"`
	Tokens    *struct {
		Input int `json:"input"`
	} `json:"tokens"`
	Rewind string `json:"$rewindTo"`
	Set    *struct {
		Messages *[]geminiRecord `json:"messages"`
	} `json:"$set"`
	Messages []geminiRecord `json:"messages"` // the older one-object format
}

// userTurn reports a user message that is a prompt, not Gemini CLI's
// session context or a command.
func userTurn(r geminiRecord) bool {
	if r.Type != "user" {
		return false
	}
	s := strings.TrimSpace(wire.ContentText(r.Content))
	return s != "" && !strings.HasPrefix(s, "<session_context>") && !strings.HasPrefix(s, "/")
}

// readGeminiChats reads one session file, judging rewound prompts by errs.
func readGeminiChats(errs []geminiError) func(string, *Aggregate, dedup) Input {
	return func(path string, a *Aggregate, dup dedup) Input {
		var in Input
		var (
			pending *geminiRecord // a prompt not yet answered
			model   string
			size    int
		)
		add := func(e Event, start time.Time) {
			e.Source, e.First = "gemini", true
			if e.Model == "" {
				e.Model = model
			}
			switch {
			case dup.inLog("gemini", start, e.Model):
				in.Duplicates++
			case a.Add(e):
				in.Events++
			}
		}
		fail := func() {
			if pending != nil {
				class, msg := classAfter(errs, pending.Timestamp)
				add(Event{TS: pending.Timestamp, Class: class, InTokens: size, Latency: -1, Message: msg}, pending.Timestamp)
				pending = nil
			}
		}
		answer := func(r geminiRecord) {
			if r.Model != "" {
				model = r.Model
			}
			if r.Tokens != nil && r.Tokens.Input > 0 {
				size = r.Tokens.Input
			}
			e := Event{TS: r.Timestamp, Class: "ok", Model: r.Model, InTokens: size, Latency: -1}
			start := r.Timestamp
			if pending != nil {
				e.Latency = r.Timestamp.Sub(pending.Timestamp).Milliseconds()
				start = pending.Timestamp
			}
			pending = nil
			add(e, start)
		}
		message := func(r geminiRecord) {
			switch {
			case userTurn(r):
				fail() // a prompt left unanswered before this one
				pending = &r
			case r.Type == "gemini":
				answer(r)
			}
		}
		if strings.HasSuffix(path, ".json") { // the older format: one object
			b, err := os.ReadFile(path)
			var rec geminiRecord
			switch {
			case err != nil:
				in.Error = err.Error()
			case json.Unmarshal(b, &rec) != nil:
				in.Unreadable++
			}
			for _, m := range rec.Messages {
				message(m)
			}
			return in
		}
		jsonLines(path, nil, &in, func(line []byte) bool {
			var r geminiRecord
			if json.Unmarshal(line, &r) != nil {
				return false
			}
			switch {
			case r.Rewind != "":
				if pending != nil && pending.ID == r.Rewind {
					fail()
				}
			case r.Set != nil && r.Set.Messages != nil:
				// the list replaced: a prompt no longer in it was rewound
				if pending != nil && !slices.ContainsFunc(*r.Set.Messages, func(m geminiRecord) bool { return m.ID == pending.ID }) {
					fail()
				}
			case r.ID != "":
				message(r)
			}
			return true
		})
		return in
	}
}
