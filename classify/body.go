package classify

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// errInfo is what a JSON failure body says, whatever the provider's shape.
type errInfo struct {
	found      bool
	code       string // OpenAI error.code, Gemini error.status
	typ        string // OpenAI/Anthropic error.type
	message    string
	httpCode   int // Gemini error.code, a status inside a client's record
	detailCode string
	reasons    []string // Gemini ErrorInfo.reason
	quotaIDs   []string // Gemini QuotaFailure violations[].quotaId
	retryDelay time.Duration
	resetsAt   time.Time // usage_limit_reached resets_at
	resetsIn   time.Duration
	shape      Provider
	class      Class // a spillway event record names its class
}

// maxParse bounds how much of a body is parsed as JSON.
const maxParse = 1 << 20

// parseBody extracts the error of a JSON body. It understands the OpenAI,
// Anthropic and Gemini error envelopes, Responses API response.failed and
// error events, Chat Completions chunks carrying an error, Codex --json lines
// and session records, and spillway's own event records.
func parseBody(b []byte) errInfo {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > maxParse || (b[0] != '{' && b[0] != '[') {
		return errInfo{}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return errInfo{}
	}
	if arr, ok := v.([]any); ok && len(arr) > 0 { // Gemini sometimes wraps in a list
		v = arr[0]
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return errInfo{}
	}
	return fromObject(obj)
}

func fromObject(obj map[string]any) errInfo {
	var info errInfo
	// spillway event record
	if c, ok := ParseClass(str(obj["class"])); ok && obj["request_id"] != nil {
		info.found, info.class = true, c
		info.message = str(obj["error"])
		info.httpCode = num(obj["status"])
		info.shape = Provider(str(obj["provider"]))
		return info
	}
	top := str(obj["type"])
	switch {
	case top == "error" && isObj(obj["error"]):
		info.shape = Anthropic
	case strings.HasPrefix(top, "response."):
		info.shape = OpenAI
	}
	e := findError(obj, 0)
	if e == nil && str(obj["object"]) == "error" && obj["message"] != nil {
		// an error object at the top (Mistral's OpenAI-compatible API:
		// {"object":"error","message","type","code"})
		e = obj
	}
	if e == nil {
		return fromEvent(obj, top, info)
	}
	info.found = true
	fromErrorObject(e, &info)
	return info
}

// fromEvent is info with what an object that holds no error object says
// of a failure (its type is top): a Responses API stream "error" event or
// Codex --json {"type":"error","message":…}, or a response left
// incomplete by a content filter.
func fromEvent(obj map[string]any, top string, info errInfo) errInfo {
	// Responses API stream "error" event and Codex --json {"type":"error","message":…}
	if top == "error" && obj["message"] != nil {
		info.found = true
		info.message = str(obj["message"])
		info.code = str(obj["code"])
		if info.shape == "" && info.code != "" {
			info.shape = OpenAI
		}
		return info
	}
	if top == "response.incomplete" {
		if r, ok := obj["response"].(map[string]any); ok {
			if d, ok := r["incomplete_details"].(map[string]any); ok && str(d["reason"]) == "content_filter" {
				info.found, info.code = true, "content_filter"
				info.message = "response incomplete: content_filter"
			}
		}
	}
	return info
}

// fromErrorObject reads the error object e into info: its message, type, code,
// status, Codex's error info, Anthropic's and Gemini's details, and a
// ChatGPT plan's usage limit reset.
func fromErrorObject(e map[string]any, info *errInfo) {
	info.message = str(e["message"])
	info.typ = str(e["type"])
	switch c := e["code"].(type) {
	case json.Number:
		info.httpCode = num(c)
		if info.shape == "" {
			info.shape = Gemini
		}
	case string:
		info.code = c
	}
	if s := str(e["status"]); s != "" && strings.ToUpper(s) == s && strings.ToLower(s) != s {
		// (a word in capitals; Azure's numeric "status": 400 is not one)
		info.code = s // Gemini RPC status, e.g. UNAVAILABLE
		info.shape = Gemini
	}
	if info.httpCode == 0 {
		info.httpCode = findStatus(e, 0)
	}
	if cei := str(e["codex_error_info"]); cei != "" && info.code == "" {
		info.code = cei // Codex session files: "server_overloaded"
		info.shape = OpenAI
	}
	if info.shape == "" && (info.typ != "" || info.code != "") {
		info.shape = OpenAI
	}
	// Anthropic details.error_code (spend limits)
	if d, ok := e["details"].(map[string]any); ok {
		info.detailCode = str(d["error_code"])
	}
	// Gemini details list
	if ds, ok := e["details"].([]any); ok {
		fromDetails(ds, info)
	}
	// Azure OpenAI's innererror (its content filter's
	// ResponsibleAIPolicyViolation)
	if ie, ok := e["innererror"].(map[string]any); ok {
		if c := str(ie["code"]); c != "" {
			info.reasons = append(info.reasons, c)
		}
	}
	// a Bedrock exception carried in an error event (the gateway's form of
	// an event-stream exception frame)
	if awsName(info.typ) != "" {
		info.shape = Bedrock
	}
	// ChatGPT plan usage limits
	if ra := num(e["resets_at"]); ra > 0 {
		info.resetsAt = time.Unix(int64(ra), 0)
	}
	if ri := num(e["resets_in_seconds"]); ri > 0 {
		info.resetsIn = time.Duration(ri) * time.Second
	}
}

// fromDetails reads Gemini's details list into info: the reasons, the
// retry delay and the quota ids.
func fromDetails(ds []any, info *errInfo) {
	for _, d := range ds {
		dm, ok := d.(map[string]any)
		if !ok {
			continue
		}
		if r := str(dm["reason"]); r != "" {
			info.reasons = append(info.reasons, r)
		}
		if rd := str(dm["retryDelay"]); rd != "" {
			if w, ok := ParseDuration(rd); ok {
				info.retryDelay = w
			}
		}
		if vs, ok := dm["violations"].([]any); ok {
			for _, v := range vs {
				if vm, ok := v.(map[string]any); ok {
					if q := str(vm["quotaId"]); q != "" {
						info.quotaIDs = append(info.quotaIDs, q)
					}
				}
			}
		}
	}
}

// findError returns the first error object (or a string error turned into
// one) at most a few levels down: body.error, response.error, payload.error.
func findError(obj map[string]any, depth int) map[string]any {
	if depth > 4 {
		return nil
	}
	switch e := obj["error"].(type) {
	case map[string]any:
		return e
	case string:
		if e != "" {
			return map[string]any{"message": e}
		}
	}
	for _, k := range []string{"response", "payload", "data", "msg", "item"} {
		if inner, ok := obj[k].(map[string]any); ok {
			if e := findError(inner, depth+1); e != nil {
				return e
			}
		}
	}
	return nil
}

// findStatus looks for an HTTP status inside a client's error record, such as
// the codex_error_info Codex stores in its session files.
func findStatus(obj map[string]any, depth int) int {
	if depth > 3 {
		return 0
	}
	for k, v := range obj {
		lk := strings.ToLower(k)
		switch x := v.(type) {
		case json.Number:
			if strings.Contains(lk, "status") {
				if n := num(x); n >= 100 && n <= 599 {
					return n
				}
			}
		case map[string]any:
			if n := findStatus(x, depth+1); n != 0 {
				return n
			}
		}
	}
	return 0
}

func isObj(v any) bool { _, ok := v.(map[string]any); return ok }

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

func num(v any) int {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil && i >= 0 && i < 1<<40 {
			return int(i)
		}
		if f, err := x.Float64(); err == nil && f >= 0 && f < 1<<40 {
			return int(f)
		}
	case string:
		if i, err := strconv.Atoi(x); err == nil && i >= 0 {
			return i
		}
	}
	return 0
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// jsonUnmarshalPrefix decodes the first JSON value of b, ignoring what follows
// (a client prints "{…}]" or "{…} url: …").
func jsonUnmarshalPrefix(b []byte, v any) error {
	return json.NewDecoder(bytes.NewReader(b)).Decode(v)
}
