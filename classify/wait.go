package classify

import (
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxWait caps any hint: a wait longer than this is a different problem.
const maxWait = 31 * 24 * time.Hour

// RetryAfter reads the explicit retry hints of a response: the
// millisecond headers first (Azure OpenAI's x-ms-retry-after-ms, then
// retry-after-ms, which OpenAI and Azure send), then retry-after (seconds
// or an HTTP date).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	for _, name := range []string{"X-Ms-Retry-After-Ms", "Retry-After-Ms"} {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			continue
		}
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) && ms < float64(maxWait/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsNaN(s) || s > maxWait.Seconds() {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return clampWait(d), true
	}
	return 0, false
}

// ResetWait reads the rate-limit reset headers: OpenAI's
// x-ratelimit-reset-{requests,tokens} (Go-style durations such as 12ms or
// 6m0s) and Anthropic's anthropic-ratelimit-*-reset (RFC 3339 instants). Where
// a matching *-remaining header says 0, only the exhausted limits count;
// otherwise the longest reset wins.
func ResetWait(h http.Header, now time.Time) (time.Duration, bool) {
	var best, exhausted time.Duration
	found, foundExhausted := false, false
	for name, vals := range h {
		if len(vals) == 0 {
			continue
		}
		lname := strings.ToLower(name)
		var d time.Duration
		var ok bool
		var remaining string
		switch {
		case strings.HasPrefix(lname, "x-ratelimit-reset-"):
			d, ok = ParseDuration(vals[0])
			remaining = h.Get("X-Ratelimit-Remaining-" + strings.TrimPrefix(lname, "x-ratelimit-reset-"))
		case strings.HasPrefix(lname, "anthropic-ratelimit-") && strings.HasSuffix(lname, "-reset"):
			t, err := time.Parse(time.RFC3339, strings.TrimSpace(vals[0]))
			if err == nil {
				d, ok = clampWait(max(t.Sub(now), 0)), true
			}
			remaining = h.Get(strings.TrimSuffix(lname, "-reset") + "-remaining")
		default:
			continue
		}
		if !ok {
			continue
		}
		found = true
		best = max(best, d)
		if strings.TrimSpace(remaining) == "0" {
			foundExhausted = true
			exhausted = max(exhausted, d)
		}
	}
	if foundExhausted {
		return exhausted, true
	}
	return best, found
}

var (
	// "try again in 11.054s", "Please retry in 37.15s", "retry after 20 seconds",
	// "try again in 4 days 3 hours 20 minutes".
	waitTextRe = regexp.MustCompile(`(?i)(?:try again|retry|retrying|reset[s]?)\s+(?:in|after)\s+(?:about\s+|approximately\s+)?((?:\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b[\s,]*(?:and\s+)?)+)`)
	unitRe     = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b`)
	goDurRe    = regexp.MustCompile(`^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$`)
)

// TextWait finds a wait in free text, such as OpenAI's "Please try again in
// 11.054s." or Gemini's "Please retry in 37.152951927s.".
func TextWait(s string) (time.Duration, bool) {
	m := waitTextRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	return ParseDuration(m[1])
}

// ParseDuration accepts the duration forms providers use: Go-style (12ms,
// 6m0s, 1h2m3.5s), protobuf JSON (37s, 0.5s), bare seconds (11.054, 30), and
// words (4 days 3 hours 20 minutes, 30 seconds).
func ParseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "."))
	if s == "" || len(s) > 200 || strings.HasPrefix(s, "-") {
		return 0, false
	}
	if goDurRe.MatchString(s) {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, false
		}
		return clampWait(d), true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsNaN(f) || f > maxWait.Seconds() {
			return 0, false
		}
		return time.Duration(f * float64(time.Second)), true
	}
	parts := unitRe.FindAllStringSubmatch(s, -1)
	if parts == nil {
		return 0, false
	}
	var total float64
	for _, p := range parts {
		n, err := strconv.ParseFloat(p[1], 64)
		if err != nil {
			return 0, false
		}
		u := strings.ToLower(p[2])
		switch {
		case u == "ms" || strings.HasPrefix(u, "milli"):
			total += n * float64(time.Millisecond)
		case u == "s" || strings.HasPrefix(u, "sec"):
			total += n * float64(time.Second)
		case u == "m" || strings.HasPrefix(u, "min"):
			total += n * float64(time.Minute)
		case u == "h" || strings.HasPrefix(u, "h"):
			total += n * float64(time.Hour)
		default:
			total += n * 24 * float64(time.Hour)
		}
	}
	if total < 0 || total > float64(maxWait) {
		return 0, false
	}
	return time.Duration(total), true
}

func clampWait(d time.Duration) time.Duration {
	if d > maxWait {
		return maxWait
	}
	return d
}
