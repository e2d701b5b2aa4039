package classify

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/sse"
)

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func TestTransportErrors(t *testing.T) {
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://127.0.0.1:8790/v1/responses", Err: err}
	}
	cases := []struct {
		name string
		err  error
		want Class
	}{
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), Network},
		{"connection reset", wrap(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), Network},
		{"broken pipe", wrap(syscall.EPIPE), Network},
		{"dns", wrap(&net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}), Network},
		{"tls unknown authority", wrap(x509.UnknownAuthorityError{}), Network},
		{"unexpected eof mid-body", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), Network},
		{"eof", io.EOF, Network},
		{"truncated sse", fmt.Errorf("stream: %w", sse.ErrTruncated), Network},
		{"deadline", wrap(context.DeadlineExceeded), Timeout},
		{"net timeout", wrap(timeoutErr{}), Timeout},
		{"os deadline", os.ErrDeadlineExceeded, Timeout},
		{"cancelled", wrap(context.Canceled), Unknown},
		{"opaque op error", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("weird")}, Network},
		{"text idle", errors.New("stream idle for 120s"), Unknown},
		{"text says overloaded but is a transport error", errors.New("overloaded"), Unknown},
		{"failure carries verdict", &Failure{Verdict: Verdict{Class: Capacity}}, Capacity},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Err(c.err)
			if v.Class != c.want {
				t.Fatalf("Err(%v).Class = %s, want %s", c.err, v.Class, c.want)
			}
			if c.want == Network || c.want == Timeout {
				if !v.Retryable {
					t.Fatal("transport failures are retryable")
				}
				if v.Class == Capacity {
					t.Fatal("network mistaken for capacity")
				}
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{"seconds", map[string]string{"Retry-After": "30"}, 30 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"ms wins", map[string]string{"Retry-After-Ms": "250", "Retry-After": "30"}, 250 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": "Sun, 29 Nov 2026 10:01:00 GMT"}, time.Minute, true},
		{"date in the past", map[string]string{"Retry-After": "Sun, 29 Nov 2026 09:00:00 GMT"}, 0, true},
		{"negative", map[string]string{"Retry-After": "-5"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"absent", nil, 0, false},
		{"bad ms falls back", map[string]string{"Retry-After-Ms": "x", "Retry-After": "2"}, 2 * time.Second, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.h {
				h.Set(k, v)
			}
			got, ok := RetryAfter(h, now)
			if got != c.want || ok != c.ok {
				t.Fatalf("RetryAfter = %v,%v want %v,%v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestResetWait(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"openai go durations, longest", map[string]string{"X-Ratelimit-Reset-Requests": "12ms", "X-Ratelimit-Reset-Tokens": "6m0s"}, 6 * time.Minute},
		{"exhausted one counts", map[string]string{"X-Ratelimit-Reset-Requests": "1s", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Tokens": "6m0s", "X-Ratelimit-Remaining-Tokens": "5"}, time.Second},
		{"anthropic rfc3339", map[string]string{"Anthropic-Ratelimit-Tokens-Reset": "2026-11-29T10:00:30Z"}, 30 * time.Second},
		{"bare seconds", map[string]string{"X-Ratelimit-Reset-Requests": "2"}, 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.h {
				h.Set(k, v)
			}
			got, ok := ResetWait(h, now)
			if !ok || got != c.want {
				t.Fatalf("ResetWait = %v,%v want %v", got, ok, c.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"11.054s", 11054 * time.Millisecond, true},
		{"6m0s", 6 * time.Minute, true},
		{"20ms", 20 * time.Millisecond, true},
		{"37s", 37 * time.Second, true},
		{"1h2m3s", time.Hour + 2*time.Minute + 3*time.Second, true},
		{"30", 30 * time.Second, true},
		{"4 days 3 hours 20 minutes", 99*time.Hour + 20*time.Minute, true},
		{"30 seconds", 30 * time.Second, true},
		{"2 minutes.", 2 * time.Minute, true},
		{"", 0, false},
		{"-3s", 0, false},
		{"soon", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseDuration(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseDuration(%q) = %v,%v want %v,%v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestTextWait(t *testing.T) {
	cases := map[string]time.Duration{
		"Please try again in 11.054s.":                            11054 * time.Millisecond,
		"Please retry in 37.152951927s.":                          37152951927 * time.Nanosecond,
		"try again in 4 days 3 hours 20 minutes.":                 99*time.Hour + 20*time.Minute,
		"Rate limit reached. Please try again in 20ms. Visit ...": 20 * time.Millisecond,
	}
	for in, want := range cases {
		if got, ok := TextWait(in); !ok || got != want {
			t.Errorf("TextWait(%q) = %v,%v want %v", in, got, ok, want)
		}
	}
	if _, ok := TextWait("try again later"); ok {
		t.Error("no number, no wait")
	}
}

func TestMessageRedacted(t *testing.T) {
	v := HTTP(401, nil, []byte(`{"error":{"message":"Incorrect API key provided: sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX.","type":"invalid_request_error","code":"invalid_api_key"}}`))
	if strings.Contains(v.Message, "ABCDEFGHIJKLMNOP") {
		t.Fatalf("message leaks the key: %q", v.Message)
	}
}

func TestVerdictJSON(t *testing.T) {
	v := HTTP(429, http.Header{"Retry-After": {"3"}}, []byte(`{"error":{"message":"x","type":"requests","code":"rate_limit_exceeded"}}`))
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"class":"rate_limit","provider":"openai","retryable":true,"wait_seconds":3,"summary":`
	if !strings.HasPrefix(string(b), want) || !strings.Contains(string(b), `"action":`) {
		t.Fatalf("json = %s", b)
	}
}

// An answer spillway refused for its size (an event past the frame limit)
// is the upstream's, in spillway's words: explain reads it back as such,
// not as a network failure to retry on the same model.
func TestTooLargeIsTyped(t *testing.T) {
	for _, line := range []string{
		"spillway: server_error: tried claude-x (server_error) in 1 attempt; waited 0s; last upstream message: the upstream sent an event larger than 16 MiB, larger than spillway holds for a request",
		`{"type":"error","error":{"type":"api_error","message":"spillway: the upstream sent an event larger than 16 MiB, larger than spillway holds for a request"}}`,
	} {
		v := Classify(Input{Text: line})
		if v.Class != ServerError || v.Code != TooLarge || !strings.Contains(v.Summary, "larger than spillway holds") || !strings.Contains(v.Action, "max_body_mb") {
			t.Fatalf("%s: %+v", line, v)
		}
	}
	if v := Classify(Input{Text: "spillway: server_error: the upstream answered 500"}); v.Code == TooLarge {
		t.Fatalf("another server error: %+v", v)
	}
}

// A model that takes no partial assistant turn says so in a bad request:
// its Code tells the driver a continuation must go elsewhere.
func TestPrefillRefusedIsTyped(t *testing.T) {
	v := HTTP(400, nil, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"This model does not support assistant message prefill. The conversation must end with a user message."}}`))
	if v.Class != BadRequest || v.Code != PrefillRefused {
		t.Fatalf("%+v", v)
	}
	if v := HTTP(400, nil, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`)); v.Code == PrefillRefused {
		t.Fatalf("another bad request: %+v", v)
	}
}
