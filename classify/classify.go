package classify

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spillway/spillway/internal/redact"
	"github.com/spillway/spillway/internal/sse"
)

// Input is everything known about one failure. Set the fields you have:
// Status/Header/Body for an HTTP answer, Event/Body for an SSE frame, Err for
// a transport error, Text for a printed or logged line.
type Input struct {
	Status   int
	Header   http.Header
	Body     []byte
	Event    string // SSE event name when Body is one frame's data
	Err      error
	Text     string
	Provider Provider // caller's hint, used when the failure itself does not tell
	// Now is the reference time for HTTP-date and RFC 3339 reset hints. When
	// zero, the wall clock is read.
	Now time.Time
}

// HTTP classifies an HTTP answer.
func HTTP(status int, h http.Header, body []byte) Verdict {
	return Classify(Input{Status: status, Header: h, Body: body})
}

// Event classifies one SSE frame (its event name and data).
func Event(name string, data []byte) Verdict {
	return Classify(Input{Event: name, Body: data})
}

// Err classifies a Go transport error.
func Err(err error) Verdict { return Classify(Input{Err: err}) }

// Text classifies a line (or lines) printed by a client or found in a log.
func Text(s string) Verdict { return Classify(Input{Text: s}) }

// Classify returns the verdict for in.
func Classify(in Input) Verdict {
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	var v Verdict
	switch {
	case in.Err != nil:
		v = fromError(in.Err)
	case in.Status == 0 && len(in.Body) == 0:
		v = fromText(in.Text, in.Header, now, in.Provider)
	default:
		v = fromHTTP(in.Status, in.Header, in.Body, in.Event, now, in.Provider)
	}
	if v.Provider == "" {
		v.Provider = guessHeader(in.Header)
	}
	if v.Provider == "" {
		v.Provider = in.Provider
	}
	cloudVerdict(&v, in.Provider)
	if v.Provider == "" {
		v.Provider = NoGuess
	}
	return finish(v)
}

func finish(v Verdict) Verdict {
	if v.Class == "" {
		v.Class = Unknown
	}
	if (v.Class == ServerError || v.Class == Network || v.Class == Unknown) && strings.Contains(strings.ToLower(v.Message), TooLargePhrase) {
		// spillway's own words for an answer past what it holds
		v.Class, v.Code = ServerError, TooLarge
	}
	v.Retryable = v.Class.Retryable()
	if v.Class == OK {
		v.Wait = 0
	}
	v.Message = clip(redact.String(strings.TrimSpace(v.Message)), 400)
	v.explain()
	return v
}

// Failure is an error that already carries its verdict, so that code passing
// it along (the library, the queue) does not classify it twice.
type Failure struct {
	Verdict Verdict
}

func (f *Failure) Error() string {
	if f.Verdict.Message != "" {
		return fmt.Sprintf("%s: %s", f.Verdict.Class, f.Verdict.Message)
	}
	return fmt.Sprintf("%s: %s", f.Verdict.Class, f.Verdict.Summary)
}

func fromError(err error) Verdict {
	var f *Failure
	if errors.As(err, &f) {
		return f.Verdict
	}
	v := Verdict{Message: err.Error()}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var timeoutErr interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.Canceled):
		v.Class = Unknown
		v.Message = "cancelled by the caller: " + err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		v.Class = Timeout
	case errors.As(err, &dnsErr):
		v.Class = Network
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr),
		errors.As(err, &invalidCert), errors.As(err, &recordErr), errors.As(err, &alertErr):
		v.Class = Network
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		v.Class = Network
	case errors.As(err, &timeoutErr) && timeoutErr.Timeout():
		v.Class = Timeout
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, sse.ErrTruncated):
		v.Class = Network
	default:
		// An error we have no type for: read its words, but only transport
		// classes may come out of a transport error.
		c, _, ok := matchRules(strings.ToLower(err.Error()), "")
		switch {
		case ok && (c == Network || c == Timeout):
			v.Class = c
		default:
			var opErr *net.OpError
			if errors.As(err, &opErr) {
				v.Class = Network
			} else {
				v.Class = Unknown
			}
		}
	}
	return v
}

func fromHTTP(status int, h http.Header, body []byte, event string, now time.Time, hint Provider) Verdict {
	if event == "" && sse.LooksLikeSSE(body) {
		return fromStream(status, h, body, now, hint)
	}
	info := parseBody(body)
	bedrockAnswer(h, body, &info)
	raw := string(clipBytes(body, 64<<10))
	if event != "" && !info.found && (event == "error" || event == "response.failed") {
		info.found = true
		info.message = raw
	}
	if status >= 200 && status < 300 && !info.found {
		return Verdict{Class: OK, Status: status, Provider: info.shape}
	}
	if !info.found && info.shape == "" && len(bytes.TrimSpace(body)) > 0 && bytes.TrimSpace(body)[0] != '{' {
		info.message = raw // HTML or plain text body: its words are the message
	}
	st := status
	if st >= 200 && st < 300 { // an error carried inside a 200 stream
		st = info.httpCode
	}
	return decide(st, info, raw, h, now, hint)
}

// fromStream classifies a pasted or captured event stream: the first error
// frame decides; a stream without one is ok if it completed, else cut short.
func fromStream(status int, h http.Header, body []byte, now time.Time, hint Provider) Verdict {
	r := sse.NewReader(bytes.NewReader(body))
	completed := false
	for done := false; !done; {
		ev, err := r.Next()
		if err != nil {
			// A pasted or cut stream often lacks the last blank line: judge
			// what the partial frame says, then stop.
			if !errors.Is(err, sse.ErrTruncated) {
				break
			}
			done = true
		}
		if ev.Comment {
			continue
		}
		d := bytes.TrimSpace(ev.Data)
		switch {
		case ev.Name == "response.completed" || ev.Name == "message_stop" || string(d) == "[DONE]":
			completed = true
			continue
		case ev.Name == "error" || ev.Name == "response.failed":
			return fromHTTP(0, h, d, ev.Name, now, hint)
		}
		if info := parseBody(d); info.found {
			return decide(info.httpCode, info, string(d), h, now, hint)
		}
		// Gemini streams end with a candidate carrying finishReason and no marker.
		if bytes.Contains(d, []byte(`"finishReason"`)) {
			completed = true
		}
	}
	if completed {
		return Verdict{Class: OK, Status: status}
	}
	return Verdict{Class: Network, Status: status, Message: "the stream ended before its final event"}
}

var (
	statusRes = []*regexp.Regexp{
		regexp.MustCompile(`(?i)api error:?\s*(\d{3})\b`),       // Claude Code
		regexp.MustCompile(`(?i)unexpected status\s+(\d{3})\b`), // Codex
		regexp.MustCompile(`(?i)last status:?\s*(\d{3})\b`),     // Codex
		regexp.MustCompile(`(?i)\bstatus(?:[ _]code)?\s*[:=]?\s*(\d{3})\b`),
		regexp.MustCompile(`(?i)\bHTTP/\d(?:\.\d)?\s+(\d{3})\b`),
		regexp.MustCompile(`\b(\d{3})\s+(?:Too Many Requests|Service Unavailable|Internal Server Error|Bad Gateway|Gateway Timeout|Unauthorized|Forbidden|Not Found|Bad Request|Payment Required|Request Timeout|Overloaded)\b`),
	}
	rpcStatusRe = regexp.MustCompile(`got status:?\s*([A-Z_]{4,})`) // Gemini CLI
	// an AWS exception's name in a printed line (awsName says which are Bedrock's)
	awsExceptionRe = regexp.MustCompile(`\b[A-Za-z]{4,60}Exception\b`)
	// spillway's own give-up message names the class it decided
	ownRe    = regexp.MustCompile(`^spillway: ([a-z_]+)[:;]`)
	noticeRe = regexp.MustCompile(`(?i)\b(?:re-?connecting|retrying)\b[.…\s]*(\d+)\s*/\s*(\d+)(?:\s*\((.*)\))?`)
)

func fromText(text string, h http.Header, now time.Time, hint Provider) Verdict {
	text = strings.TrimSpace(text)
	if text == "" {
		return Verdict{Class: Unknown}
	}
	if sse.LooksLikeSSE([]byte(text)) {
		return fromStream(0, h, []byte(text), now, hint)
	}
	if status, hh, body, ok := pastedAnswer(text, h); ok {
		return fromHTTP(status, hh, body, "", now, hint)
	}
	if text[0] == '{' || text[0] == '[' {
		if v, ok := fromJSONLine(text, h, now, hint); ok {
			return v
		}
	}
	if strings.Contains(text, "\n") {
		return fromLines(text, h, now, hint)
	}
	return fromLine(text, h, now, hint)
}

// fromLines classifies each line and keeps the last real failure: client
// output usually ends with the error that stopped it, after retry notices.
func fromLines(text string, h http.Header, now time.Time, hint Provider) Verdict {
	var last, lastNotice *Verdict
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		v := fromText(line, h, now, hint)
		switch {
		case v.Class == Unknown:
		case v.Notice:
			lastNotice = &v
		default:
			last = &v
		}
	}
	if last != nil {
		return *last
	}
	if lastNotice != nil {
		return *lastNotice
	}
	return Verdict{Class: Unknown, Message: clip(text, 400)}
}

func fromJSONLine(text string, h http.Header, now time.Time, hint Provider) (Verdict, bool) {
	var probe struct {
		Type           string `json:"type"`
		Subtype        string `json:"subtype"`
		IsError        bool   `json:"is_error"`
		Result         string `json:"result"`
		APIErrorStatus int    `json:"api_error_status"`
		APIErrorType   string `json:"api_error_type"`
		// Claude Code stream-json retry notices
		ErrorStatus  int     `json:"error_status"`
		Error        string  `json:"error"`
		RetryDelayMS float64 `json:"retry_delay_ms"`
	}
	if err := jsonUnmarshal([]byte(text), &probe); err != nil {
		probe.Type = ""
	}
	if info := parseBody([]byte(text)); info.found && probe.Type != "result" && probe.Type != "system" {
		return decide(info.httpCode, info, text, h, now, hint), true
	}
	switch {
	case probe.Type == "result" && probe.IsError: // Claude Code --output-format json
		var v Verdict
		if probe.APIErrorStatus > 0 || probe.APIErrorType != "" {
			v = decide(probe.APIErrorStatus, errInfo{found: true, typ: probe.APIErrorType, message: probe.Result, shape: Anthropic}, probe.Result, h, now, hint)
		} else {
			v = fromLine(probe.Result, h, now, hint)
		}
		if v.Provider == "" {
			v.Provider = Anthropic
		}
		return v, true
	case probe.Type == "system" && probe.Subtype == "api_retry": // Claude Code retrying by itself
		v := decide(probe.ErrorStatus, errInfo{found: true, message: probe.Error, shape: Anthropic}, probe.Error, h, now, hint)
		v.Notice = true
		if probe.RetryDelayMS > 0 {
			v.Wait = time.Duration(probe.RetryDelayMS * float64(time.Millisecond))
		}
		return v, true
	case probe.Type == "result" && probe.Subtype == "success",
		probe.Type == "turn.completed", probe.Type == "response.completed", probe.Type == "message_stop":
		return Verdict{Class: OK}, true
	}
	return Verdict{}, false
}

func fromLine(line string, h http.Header, now time.Time, hint Provider) Verdict {
	if m := ownRe.FindStringSubmatch(line); m != nil && slices.Contains(Classes, Class(m[1])) {
		v := Verdict{Class: Class(m[1]), Message: line, Provider: guessText(strings.ToLower(line))}
		return v
	}
	if strings.Contains(strings.ToLower(line), "waiting for network") { // Codex: "Reconnecting... waiting for network"
		return Verdict{Class: Network, Message: line, Notice: true, Provider: OpenAI}
	}
	if m := noticeRe.FindStringSubmatch(line); m != nil {
		inner := strings.TrimSpace(m[3])
		v := Verdict{Class: Network, Message: line}
		if inner != "" {
			iv := fromLine(inner, h, now, hint)
			if iv.Class != Unknown {
				v = iv
				v.Message = line
			}
		}
		v.Notice = true
		if v.Provider == "" {
			v.Provider = guessText(strings.ToLower(line))
		}
		return v
	}
	status := 0
	for _, re := range statusRes {
		if m := re.FindStringSubmatch(line); m != nil {
			fmt.Sscan(m[1], &status)
			break
		}
	}
	var info errInfo
	if i := strings.IndexByte(line, '{'); i >= 0 {
		info = parseBody([]byte(line[i:]))
		if !info.found {
			// a client prints the envelope's inner object, or an object with
			// just a message: {"message":"…","code":"…"}
			var inner map[string]any
			if jsonUnmarshalPrefix([]byte(line[i:]), &inner) == nil && (inner["message"] != nil || inner["code"] != nil) {
				info = fromObject(map[string]any{"error": inner})
			}
		}
	}
	if info.typ == "" {
		for _, m := range awsExceptionRe.FindAllString(line, 8) {
			if awsName(m) != "" { // botocore: "An error occurred (ThrottlingException) when calling …"
				info.typ, info.shape = m, Bedrock
				break
			}
		}
	}
	if m := rpcStatusRe.FindStringSubmatch(line); m != nil && info.code == "" {
		info.code = m[1]
		info.shape = Gemini
	}
	if !info.found {
		info.message = line
	}
	if status == 0 {
		status = info.httpCode
	}
	v := decide(status, info, line, h, now, hint)
	if v.Provider == "" {
		v.Provider = guessText(strings.ToLower(line))
	}
	if v.Message == "" {
		v.Message = line
	}
	return v
}

// decide turns the evidence into a class, provider and wait.
func decide(status int, info errInfo, raw string, h http.Header, now time.Time, hint Provider) Verdict {
	v := Verdict{Status: status, Provider: info.shape, Message: info.message, Code: firstNonEmpty(info.detailCode, info.code, info.typ)}
	lowerMsg := strings.ToLower(info.message)
	lowerRaw := strings.ToLower(raw)
	class, ruleProvider := classOf(status, info, lowerMsg, lowerRaw, h, answerCloud(hint, info.shape, lowerRaw, h))
	v.Class = class
	if class == BadRequest && strings.Contains(lowerMsg, "prefill") {
		v.Code = PrefillRefused // the model takes no partial assistant turn
	}
	if v.Provider == "" || v.Provider == NoGuess {
		// a rule's provider is a guess: it never replaces the provider the
		// answer's shape names (cloudShape below names the cloud that
		// carried a vendor's shape, from the cloud's headers or words)
		v.Provider = ruleProvider
	}
	if v.Provider == NoGuess {
		v.Provider = ""
	}
	if v.Provider == "" {
		v.Provider = guessText(lowerRaw)
	}
	v.Provider = cloudShape(v.Provider, lowerRaw, h)

	// The suggested wait: explicit hints first, reset headers for rate limits.
	v.Wait = suggestedWait(class, info, raw, h, now)
	if class == Quota || class == UsageLimit {
		// A quota resets on the plan's schedule; a Retry-After on it would
		// invite a pointless retry, so only an explicit reset time counts.
		v.Wait = planWait(class, info, raw, h, now, v.Wait)
		if class == UsageLimit && v.Wait > 0 {
			v.ResetsAt = now.Add(v.Wait).Truncate(time.Second)
		}
	}
	// Gemini quota ids carry the period.
	perDay := strings.Contains(lowerRaw, "perday") || strings.Contains(lowerRaw, "per day")
	// Gemini says "You exceeded your current quota" for per-minute limits too;
	// without a per-day quota id, a retry delay means it is a rate limit.
	if class == Quota && v.Provider == Gemini && !perDay && v.Wait > 0 && info.resetsAt.IsZero() {
		v.Class = RateLimit
	}
	return v
}

// classOf is the class the evidence says, and the provider of the rule
// that matched, if one did: the class the answer names (its own, spillway's,
// Gemini's quota ids, its codes), a plan's usage window, the rules on the
// message (or the raw text), weak codes, and last the HTTP status. cloud
// is the cloud the answer is known to come from ("" for none): only its
// own wordings count among the clouds' (matchRules).
func classOf(status int, info errInfo, lowerMsg, lowerRaw string, h http.Header, cloud Provider) (class Class, ruleProvider Provider) {
	if info.class != "" {
		class = info.class
	}
	if class == "" {
		class = azureClass(status, h) // x-ms-throttle-reason: the model's capacity
	}
	if m := ownRe.FindStringSubmatch(info.message); class == "" && m != nil && slices.Contains(Classes, Class(m[1])) {
		class = Class(m[1]) // spillway's own answer names the class it decided
	}
	if class == "" && len(info.quotaIDs) > 0 {
		class = RateLimit
		for _, q := range info.quotaIDs {
			if strings.Contains(strings.ToLower(q), "perday") {
				class = UsageLimit // a daily quota: back at the day's reset
			}
		}
	}

	if class == "" {
		class, _ = awsClass(info.typ, lowerMsg) // Bedrock's exceptions, read with their words
	}
	if class == "" {
		for _, c := range append([]string{info.detailCode}, append(info.reasons, info.code, info.typ)...) {
			if k, ok := codeClass[strings.ToLower(c)]; ok && c != "" {
				class = k
				break
			}
		}
	}
	// a Claude plan's window comes as a rate_limit_error: the unified rate
	// limit, or the message, says it is the plan's usage, used up
	if class == RateLimit || class == "" {
		if status == http.StatusTooManyRequests && h != nil && strings.EqualFold(h.Get("anthropic-ratelimit-unified-status"), "rejected") {
			class = UsageLimit
		} else if c, p, ok := matchRules(lowerMsg, cloud); ok && c == UsageLimit && p != Gemini {
			// (a plan's words only: "per day" in a rate limit's message is
			// the key's daily rate, which another model may not share)
			class, ruleProvider = c, p
		}
	}
	if class == "" {
		text := lowerMsg
		if text == "" {
			text = lowerRaw
		}
		if c, p, ok := matchRules(text, cloud); ok {
			class, ruleProvider = c, p
		}
	}
	if class == "" {
		for _, c := range []string{info.code, info.typ} {
			if k, ok := weakCodes[strings.ToLower(c)]; ok {
				class = k
				if k == ModelNotFound && !strings.Contains(lowerMsg, "model") {
					class = BadRequest
				}
				break
			}
		}
	}
	if class == "" {
		class = statusClass(status, lowerMsg)
	}
	return class, ruleProvider
}

// suggestedWait is the wait the answer suggests: Retry-After, Gemini's
// RetryInfo, a wait the message or the raw text says, and for a rate
// limit the reset headers; 0 when none does.
func suggestedWait(class Class, info errInfo, raw string, h http.Header, now time.Time) time.Duration {
	if w, ok := RetryAfter(h, now); ok {
		return w
	} else if info.retryDelay > 0 {
		return info.retryDelay
	} else if w, ok := TextWait(info.message); ok {
		return w
	} else if w, ok := TextWait(raw); ok {
		return w
	} else if class == RateLimit {
		if w, ok := ResetWait(h, now); ok {
			return w
		}
	}
	return 0
}

// planWait is the wait on a quota or a usage limit: only an explicit reset
// time counts (the answer's, the unified reset header's, the text's), or
// Gemini's RetryInfo on a daily quota (keep, the suggested wait); 0 when
// none says.
func planWait(class Class, info errInfo, raw string, h http.Header, now time.Time, keep time.Duration) time.Duration {
	switch {
	case !info.resetsAt.IsZero():
		return clampWait(max(info.resetsAt.Sub(now), 0))
	case info.resetsIn > 0:
		return info.resetsIn
	case class == UsageLimit && unifiedReset(h, now) > 0:
		return unifiedReset(h, now)
	case class == UsageLimit && textReset(raw, now) > 0:
		return textReset(raw, now)
	case class == UsageLimit && info.retryDelay > 0:
		return keep // Gemini's RetryInfo on a daily quota: the reset
	default:
		if w, ok := TextWait(raw); ok {
			return w
		}
	}
	return 0
}

func guessHeader(h http.Header) Provider {
	if p := cloudHeader(h); p != "" {
		return p
	}
	for k, vs := range h {
		lk := strings.ToLower(k)
		switch {
		case strings.HasPrefix(lk, "anthropic-"):
			return Anthropic
		case strings.HasPrefix(lk, "openai-") || lk == "x-ratelimit-limit-requests":
			return OpenAI
		case strings.HasPrefix(lk, "x-goog-"):
			return Gemini
		case lk == "request-id" && len(vs) > 0 && strings.HasPrefix(vs[0], "req_"):
			return Anthropic
		}
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// do not cut a UTF-8 sequence in half
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func clipBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[:n]
}

// unifiedReset is how long until a Claude plan's window resets, from
// anthropic-ratelimit-unified-reset (Unix seconds); 0 when not said.
func unifiedReset(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(h.Get("anthropic-ratelimit-unified-reset")), 10, 64)
	if err != nil || sec <= 0 {
		return 0
	}
	return clampWait(max(time.Unix(sec, 0).Sub(now), 0))
}

// resetTextRe finds a reset time in a message: "reset at
// 2026-12-02T01:46:00Z", or Claude Code's "usage limit reached|1764640000".
var resetTextRe = regexp.MustCompile(`(?i)(?:resets? (?:at|on) (\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d))|limit reached\|(\d{9,11}))`)

// clockResetRe finds a reset given as Codex prints it, in the local time of
// the machine it runs on, to the minute: "try again at 1:46 AM" (a reset
// later today) or "try again at Sep 18th, 2025 9:40 AM" (another day).
var clockResetRe = regexp.MustCompile(`(?i)try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d\d)\s*([AP]M)`)

// textReset is how long until the reset time a message names; 0 for none.
// A time of day alone is today's, in now's location (Codex prints it cut
// to the minute: within that minute it is the minute's end); one that has
// passed is tomorrow's.
func textReset(s string, now time.Time) time.Duration {
	if c := clockResetRe.FindStringSubmatch(s); c != nil {
		h, _ := strconv.Atoi(c[4])
		mi, _ := strconv.Atoi(c[5])
		if h < 1 || h > 12 || mi > 59 {
			return 0
		}
		h %= 12
		if strings.EqualFold(c[6], "PM") {
			h += 12
		}
		y, mo, d := now.Date()
		if c[1] != "" {
			t, err := time.Parse("Jan", c[1])
			day, _ := strconv.Atoi(c[2])
			year, _ := strconv.Atoi(c[3])
			if err != nil || day < 1 || day > 31 {
				return 0
			}
			y, mo, d = year, t.Month(), day
		}
		at := time.Date(y, mo, d, h, mi, 0, 0, now.Location())
		switch {
		case at.After(now):
		case now.Sub(at) < time.Minute: // within the printed minute
			at = at.Add(time.Minute)
		case c[1] == "":
			at = at.AddDate(0, 0, 1)
		default:
			return 0 // a date that has passed
		}
		return clampWait(at.Sub(now))
	}
	m := resetTextRe.FindStringSubmatch(s)
	switch {
	case m == nil:
		return 0
	case m[1] != "":
		t, err := time.Parse(time.RFC3339, m[1])
		if err != nil {
			return 0
		}
		return clampWait(max(t.Sub(now), 0))
	default:
		sec, _ := strconv.ParseInt(m[2], 10, 64)
		return clampWait(max(time.Unix(sec, 0).Sub(now), 0))
	}
}
