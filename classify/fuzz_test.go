package classify

import (
	"net/http"
	"testing"
	"time"
)

func FuzzClassify(f *testing.F) {
	f.Add(503, "retry-after", "5", `{"error":{"code":"server_is_overloaded"}}`, "")
	f.Add(429, "x-ratelimit-reset-tokens", "6m0s", `{"type":"error","error":{"type":"rate_limit_error"}}`, "")
	f.Add(0, "", "", "", "API Error: 529 {\"type\":\"error\"")
	f.Add(0, "", "", "", "event: response.failed\ndata: {\"response\":{\"error\":{}}}")
	f.Add(200, "", "", "data: {\"error\":[1,2]}\n\n", "")
	f.Add(0, "", "", "", "Reconnecting... 1/5 (Reconnecting... 2/5 (x))")
	f.Add(0, "", "", "", "ERROR: You’ve hit your usage limit. try again at Feb 31st, 2026 12:99 PM.")
	f.Add(429, "anthropic-ratelimit-unified-status", "rejected", `{"type":"error","error":{"type":"rate_limit_error","message":"Claude usage limit reached|99999999999"}}`, "")
	f.Add(0, "", "", "", "Claude usage limit reached. Your limit will reset at 9999-12-31T23:59:59Z.")
	f.Add(429, "x-amzn-errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Too many tokens, please wait before trying again."}`, "")
	f.Add(0, "", "", `{"type":"error","error":{"type":"throttlingException","message":"x"}}`, "")
	f.Add(400, "", "", `{"__type":"a#ValidationException","Message":"max_tokens exceed"}`, "")
	f.Add(429, "x-ms-retry-after-ms", "1e400", `{"error":{"code":"429","status":400,"innererror":{"code":7}}}`, "")
	f.Add(0, "", "", "", "HTTP/2 429\nx-ms-throttle-reason: ModelCapacityExceeded\n\n{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}")
	f.Add(0, "", "", "", "HTTP/1.1 200\r\n\r\n")
	f.Fuzz(func(t *testing.T, status int, hk, hv, body, text string) {
		h := http.Header{}
		if hk != "" {
			h.Set(hk, hv)
		}
		v := Classify(Input{Status: status, Header: h, Body: []byte(body), Text: text, Now: time.Unix(1_800_000_000, 0)})
		if _, ok := ParseClass(string(v.Class)); !ok {
			t.Fatalf("invalid class %q", v.Class)
		}
		if v.Wait < 0 || v.Wait > maxWait {
			t.Fatalf("wait %v out of range", v.Wait)
		}
		if v.Retryable != v.Class.Retryable() {
			t.Fatalf("retryable %v disagrees with class %s", v.Retryable, v.Class)
		}
		if v.Summary == "" || v.Action == "" {
			t.Fatal("no explanation")
		}
		if len(v.Message) > 404 {
			t.Fatalf("message not clipped: %d bytes", len(v.Message))
		}
	})
}

func FuzzHeaderParsers(f *testing.F) {
	f.Add("30", "250", "6m0s", "2026-11-29T10:00:30Z")
	f.Add("Sun, 29 Nov 2026 10:01:00 GMT", "", "1h2m3.5s", "bad")
	f.Add("1e400", "NaN", "99999999999h", "")
	f.Fuzz(func(t *testing.T, ra, ram, reset, anthropicReset string) {
		now := time.Unix(1_800_000_000, 0)
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ram)
		h.Set("X-Ratelimit-Reset-Tokens", reset)
		h.Set("Anthropic-Ratelimit-Requests-Reset", anthropicReset)
		if d, ok := RetryAfter(h, now); ok && (d < 0 || d > maxWait) {
			t.Fatalf("RetryAfter = %v", d)
		}
		if d, ok := ResetWait(h, now); ok && (d < 0 || d > maxWait) {
			t.Fatalf("ResetWait = %v", d)
		}
		if d, ok := ParseDuration(reset); ok && (d < 0 || d > maxWait) {
			t.Fatalf("ParseDuration = %v", d)
		}
		if d, ok := TextWait("try again in " + ra); ok && (d < 0 || d > maxWait) {
			t.Fatalf("TextWait = %v", d)
		}
	})
}
