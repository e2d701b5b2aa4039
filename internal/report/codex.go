package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
)

// Codex CLI (0.169) writes a rollout per session under
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl (archived_sessions/ when
// archived): lines of {"timestamp","type","payload"}. A turn's model is in
// its turn_context line (payload.model); its input size in token_count
// event lines (payload.info.last_token_usage.input_tokens, info null when
// the turn failed before an answer); its end is a task_complete event line,
// with payload.error {message, codex_error_info} when it failed
// (codex_error_info a string such as "server_overloaded" or an object such
// as {"response_too_many_failed_attempts":{"http_status_code":429}}).
// A turn starts with a task_started event line, then its turn_context
// line, written as its first request is made (tens to hundreds of ms
// before it): the turn's start, matched to the gateway's request.
// Written by hand: nothing else reads these files.

func codexFiles(home string) []string {
	var out []string
	for _, dir := range []string{"sessions", "archived_sessions"} {
		out = append(out, walkFiles(filepath.Join(home, dir), func(_, name string) bool {
			return strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".jsonl")
		})...)
	}
	return out
}

// codexInfo maps Codex's error kinds to classes.
var codexInfo = map[string]classify.Class{
	"server_overloaded": classify.Capacity, "usage_limit_exceeded": classify.UsageLimit, "context_window_exceeded": classify.ContextLength,
	"unauthorized": classify.Auth, "internal_server_error": classify.ServerError, "bad_request": classify.BadRequest,
	"sandbox_error": "", "other": "",
}

type codexLine struct {
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type     string `json:"type"`
	Model    string `json:"model"`
	Provider string `json:"model_provider"` // session_meta's
	Info     *struct {
		Last struct {
			InputTokens int `json:"input_tokens"`
		} `json:"last_token_usage"`
	} `json:"info"`
	Error      json.RawMessage `json:"error"`
	DurationMS *int64          `json:"duration_ms"`
	Settings   *struct {
		Model string `json:"model"`
	} `json:"thread_settings"`
}

// codexWanted are the markers of the lines worth decoding.
var codexWanted = [][]byte{[]byte(`"session_meta"`), []byte(`"turn_context"`), []byte(`"task_started"`), []byte(`"token_count"`), []byte(`"task_complete"`), []byte(`"thread_settings_applied"`)}

func readCodex(path string, a *Aggregate, dup dedup) Input {
	var in Input
	model, size, turnSize := "", 0, 0
	provider := ""      // the session's model provider
	var start time.Time // the turn's start: its turn_context's, else its task_started's
	fromContext := false
	jsonLines(path, codexWanted, &in, func(line []byte) bool {
		var l codexLine
		var p codexPayload
		if json.Unmarshal(line, &l) != nil || json.Unmarshal(l.Payload, &p) != nil {
			return false
		}
		switch {
		case l.Type == "session_meta":
			provider = p.Provider
		case l.Type == "turn_context":
			if p.Model != "" {
				model = p.Model
			}
			if !fromContext {
				start, fromContext = l.Timestamp, true
			}
		case p.Type == "task_started":
			start, fromContext = l.Timestamp, false
		case p.Type == "thread_settings_applied" && p.Settings != nil && p.Settings.Model != "" && model == "":
			model = p.Settings.Model
		case p.Type == "token_count" && p.Info != nil && p.Info.Last.InputTokens > 0:
			size, turnSize = p.Info.Last.InputTokens, p.Info.Last.InputTokens
		case p.Type == "task_complete":
			e := Event{TS: l.Timestamp, Source: "codex", Model: model, Class: "ok", First: true, InTokens: turnSize, Latency: -1}
			if turnSize == 0 {
				e.InTokens = size // a failed turn: the context it had, at least
			}
			if p.DurationMS != nil {
				e.Latency = *p.DurationMS
			}
			if len(p.Error) > 0 && string(p.Error) != "null" {
				e.Class, e.Message = codexClass(p.Error)
				e.Latency = -1
			}
			if start.IsZero() { // no line said when it started: its end less its duration
				start = l.Timestamp
				if p.DurationMS != nil {
					start = start.Add(-time.Duration(*p.DurationMS) * time.Millisecond)
				}
			}
			switch {
			case dup.codexInLog(provider, start, model):
				in.Duplicates++
			case a.Add(e):
				in.Events++
			}
			turnSize, start, fromContext = 0, time.Time{}, false
		}
		return true
	})
	return in
}

// wanted reports whether line holds one of the markers (before decoding).
func wanted(line []byte, markers [][]byte) bool {
	for _, m := range markers {
		if bytes.Contains(line, m) {
			return true
		}
	}
	return false
}

// codexClass reads a failed turn's error: a string, or {message,
// codex_error_info}.
func codexClass(raw json.RawMessage) (string, string) {
	var msg string
	if json.Unmarshal(raw, &msg) == nil {
		return string(classify.Classify(classify.Input{Text: msg, Provider: classify.OpenAI}).Class), msg
	}
	var e struct {
		Message string          `json:"message"`
		Info    json.RawMessage `json:"codex_error_info"`
	}
	_ = json.Unmarshal(raw, &e)
	var kind string
	if json.Unmarshal(e.Info, &kind) == nil {
		if c := codexInfo[kind]; c != "" {
			return string(c), e.Message
		}
	}
	status := 0
	var obj map[string]struct {
		Status int `json:"http_status_code"`
	}
	if json.Unmarshal(e.Info, &obj) == nil {
		for _, v := range obj {
			status = max(status, v.Status)
		}
	}
	v := classify.Classify(classify.Input{Text: e.Message, Provider: classify.OpenAI})
	if v.Class == classify.Unknown && status > 0 {
		v = classify.Classify(classify.Input{Status: status, Body: []byte(e.Message), Provider: classify.OpenAI})
	}
	return string(v.Class), e.Message
}

// CodexLimit is one of the usage windows of a Codex plan (ChatGPT login),
// as Codex's newest rollout last saw it: token_count lines carry
// payload.rate_limits.primary and .secondary ({used_percent,
// window_minutes, resets_at}).
type CodexLimit struct {
	Name          string    `json:"name"` // primary, secondary
	UsedPercent   float64   `json:"used_percent"`
	WindowMinutes int       `json:"window_minutes"`
	ResetsAt      time.Time `json:"resets_at,omitzero"`
	Seen          time.Time `json:"seen"`
}

type codexWindow struct {
	UsedPercent   *float64        `json:"used_percent"`
	WindowMinutes int             `json:"window_minutes"`
	ResetsAt      json.RawMessage `json:"resets_at"`
	ResetsIn      *float64        `json:"resets_in_seconds"`
}

// CodexLimits reads the usage windows from the newest rollout under home
// (sessions/ and archived_sessions/), and names the file; none when no
// token_count line carried them (an API key has none).
func CodexLimits(home string) ([]CodexLimit, string) {
	newest, newestT := "", time.Time{}
	for _, f := range codexFiles(home) {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().After(newestT) {
			newest, newestT = f, fi.ModTime()
		}
	}
	if newest == "" {
		return nil, ""
	}
	var last []CodexLimit
	var in Input
	jsonLines(newest, [][]byte{[]byte(`"rate_limits"`)}, &in, func(line []byte) bool {
		var l codexLine
		var p struct {
			Limits *struct {
				Primary   *codexWindow `json:"primary"`
				Secondary *codexWindow `json:"secondary"`
			} `json:"rate_limits"`
		}
		if json.Unmarshal(line, &l) != nil || json.Unmarshal(l.Payload, &p) != nil {
			return false
		}
		if p.Limits == nil {
			return true
		}
		var got []CodexLimit
		for _, w := range []struct {
			name string
			w    *codexWindow
		}{{"primary", p.Limits.Primary}, {"secondary", p.Limits.Secondary}} {
			if w.w == nil || w.w.UsedPercent == nil {
				continue
			}
			lim := CodexLimit{Name: w.name, UsedPercent: *w.w.UsedPercent, WindowMinutes: w.w.WindowMinutes, Seen: l.Timestamp}
			var secs float64
			var ts time.Time
			switch {
			case json.Unmarshal(w.w.ResetsAt, &secs) == nil && secs > 0:
				lim.ResetsAt = time.Unix(int64(secs), 0)
			case json.Unmarshal(w.w.ResetsAt, &ts) == nil:
				lim.ResetsAt = ts
			case w.w.ResetsIn != nil:
				lim.ResetsAt = l.Timestamp.Add(time.Duration(*w.w.ResetsIn * float64(time.Second)))
			}
			got = append(got, lim)
		}
		if len(got) > 0 {
			last = got
		}
		return true
	})
	return last, newest
}
