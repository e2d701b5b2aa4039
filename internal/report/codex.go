package report

import (
	"bytes"
	"encoding/json"
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
	"server_overloaded": classify.Capacity, "usage_limit_exceeded": classify.Quota, "context_window_exceeded": classify.ContextLength,
	"unauthorized": classify.Auth, "internal_server_error": classify.ServerError, "bad_request": classify.BadRequest,
	"sandbox_error": "", "other": "",
}

type codexLine struct {
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type  string `json:"type"`
	Model string `json:"model"`
	Info  *struct {
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
var codexWanted = [][]byte{[]byte(`"turn_context"`), []byte(`"token_count"`), []byte(`"task_complete"`), []byte(`"thread_settings_applied"`)}

func readCodex(path string, a *Aggregate) Input {
	var in Input
	model, size, turnSize := "", 0, 0
	jsonLines(path, codexWanted, &in, func(line []byte) bool {
		var l codexLine
		var p codexPayload
		if json.Unmarshal(line, &l) != nil || json.Unmarshal(l.Payload, &p) != nil {
			return false
		}
		switch {
		case l.Type == "turn_context" && p.Model != "":
			model = p.Model
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
			if a.Add(e) {
				in.Events++
			}
			turnSize = 0
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
