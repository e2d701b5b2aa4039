package redact

import (
	"net/http"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	cases := []struct {
		name, in, secret string
	}{
		{"openai key", "Incorrect API key provided: sk-proj-abcdefghijklmnop1234.", "abcdefghijklmnop1234"},
		{"anthropic key", "key sk-ant-api03-AAAABBBBCCCCDDDD-xyz failed", "AAAABBBBCCCCDDDD"},
		{"bearer", "Authorization: Bearer tok_0123456789abcdef", "tok_0123456789abcdef"},
		{"x-api-key header", "x-api-key: secretsecret123", "secretsecret123"},
		{"json api_key", `{"api_key":"abcdef123456"}`, "abcdef123456"},
		{"gemini query key", "POST /v1beta/models/x:generateContent?key=AIzaSyA-1234567890abcdefghij&alt=sse", "1234567890abcdefghij"},
		{"url password", "queue: connect postgres://spill:hunter2hunter2@db.internal:5432/q refused", "hunter2hunter2"},
		{"url password with an @", "connect Postgresql://spill:p@ss-w0rd@db/q", "ss-w0rd"},
		{"redis password alone", "dial rediss://:s3cr3t-pass@10.0.0.5:6379/0: timeout", "s3cr3t-pass"},
		{"jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk", "eyJzdWIiOiIxMjM0NTY3ODkwIn0"},
		{"aws access key id", "Credential=AKIAIOSFODNN7EXAMPLE/20261206/us-east-1/bedrock/aws4_request", "IOSFODNN7EXAMPLE"},
		{"aws temporary key id", "key ASIAQ3EGUZ2XOEXAMPLE expired", "Q3EGUZ2XOEXAMPLE"},
		{"aws secret in a credentials file", "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "wJalrXUtnFEMI/K7MDENG"},
		{"aws secret in JSON", `{"SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`, "bPxRfiCYEXAMPLEKEY"},
		{"aws session token header", "X-Amz-Security-Token: FwoGZXIvYXdzEBYaDHqa0AP1/FAKE+SESSION/token==", "FwoGZXIvYXdzEBYaDHqa0AP1"},
		{"aws session token query", "GET /x?X-Amz-Security-Token=FwoGZXIvYXdzEBYaDHqa0AP1%2FFAKE&X-Amz-Date=1", "FwoGZXIvYXdzEBYaDHqa0AP1"},
		{"aws_session_token", "aws_session_token=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ", "IQoJb3JpZ2luX2VjEJr"},
		{"sigv4 signature", "SignedHeaders=host;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024", "fe5f80f77d5fa3beca038a248ff027d0445342fe"},
		{"google access token", `{"access_token":"ya29.a0AfB_byC-FAKE_token.value-0123456789","expires_in":3599}`, "a0AfB_byC-FAKE_token"},
		{"pem private key", "key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQDjWzAP\n-----END PRIVATE KEY-----\n", "BKcwggSjAgEAAoIBAQDjWzAP"},
		{"pem in escaped JSON, cut", `echo -----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIB…`, "BKcwggSjAgEAAoIB"},
		{"private_key field", `{"type":"service_account","private_key":"not-a-pem-but-secret\\nstill","client_email":"x@y"}`, "not-a-pem-but-secret"},
		{"client secret", `{"client_id":"1.apps","client_secret":"d-FL95Q19q7MQmFpd7hHD0Ty","refresh_token":"1//0gFAKErefresh-token_value"}`, "d-FL95Q19q7MQmFpd7hHD0Ty"},
		{"refresh token form", "grant_type=refresh_token&refresh_token=1//0gFAKErefresh-token_value&client_id=x", "1//0gFAKErefresh-token_value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := String(c.in)
			if strings.Contains(got, c.secret) {
				t.Fatalf("String(%q) = %q still contains the secret", c.in, got)
			}
			if !strings.Contains(got, "redacted") {
				t.Fatalf("String(%q) = %q has no redaction marker", c.in, got)
			}
		})
	}
	for _, plain := range []string{"Our servers are currently overloaded. Please try again later.",
		"dial tcp http://127.0.0.1:8787/v1: connection refused", "postgres://spill@db:5432/q",
		"UnrecognizedClientException: The security token included in the request is invalid.",
		"ExpiredTokenException: The security token included in the request is expired",
		"InvalidSignatureException: The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
		"RESOURCE_EXHAUSTED: Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model",
		"ThrottlingException: Too many tokens, please wait before trying again."} {
		if got := String(plain); got != plain {
			t.Fatalf("plain text changed: %q", got)
		}
	}
}

func TestMask(t *testing.T) {
	if got := Mask("sk-proj-0123456789"); got != "sk-****" {
		t.Fatalf("Mask = %q", got)
	}
	if got := Mask("short"); got != "****" {
		t.Fatalf("Mask(short) = %q", got)
	}
	if got := Mask(""); got != "" {
		t.Fatalf("Mask(empty) = %q", got)
	}
}

func TestSecrets(t *testing.T) {
	s := NewSecrets("team-provider-secret-42", "short", "", "team-provider-secret-42-and-more")
	in := "upstream said: you sent team-provider-secret-42-and-more and team-provider-secret-42; sk-proj-abcdefghijklmnop1234 too"
	got := s.String(in)
	for _, secret := range []string{"team-provider-secret-42", "and-more", "abcdefghijklmnop1234"} {
		if strings.Contains(got, secret) {
			t.Fatalf("String left %q in %q", secret, got)
		}
	}
	if got := s.String("a short word stays"); got != "a short word stays" {
		t.Fatalf("a value under 6 bytes is no secret: %q", got)
	}
	b := []byte(`{"error":{"message":"key team-provider-secret-42 is wrong"}}`)
	if got := string(s.With("per-request-key-7").Bytes(b)); strings.Contains(got, "team-provider-secret-42") || !strings.Contains(got, "[redacted]") {
		t.Fatalf("Bytes: %s", got)
	}
	h := http.Header{"X-Echo": {"Bearer team-provider-secret-42"}, "Content-Type": {"application/json"}}
	s.Header(h)
	if h.Get("X-Echo") != "Bearer [redacted]" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("Header: %v", h)
	}
	var none Secrets
	if got := none.String("nothing known"); got != "nothing known" {
		t.Fatal(got)
	}
}

// The hints only skip work: String redacts exactly what the patterns'
// regexps alone do, on any input.
func FuzzString(f *testing.F) {
	for _, s := range []string{"Incorrect API key provided: sk-proj-abcdefghijklmnop1234.", "Authorization: BEARER tok_0123456789abcdef",
		"X-Api-Key: secretsecret123", "?key=AIzaSyA-1234567890abcdefghij&alt=sse", "postgres://spill:hunter2@db/q", "HTTPS://u:p@h",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk", "Our servers are currently overloaded.", "aPi_KeY=abcdefgh", "",
		"Credential=AKIAIOSFODNN7EXAMPLE/x, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "x-amz-security-token: FwoGZXIvYXdzEBYaDHqa0AP1",
		`"private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"`, "ya29.a0AfB_byC", `{"refresh_token":"1//0gx","client_secret":"abcdef"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := s
		for _, p := range patterns {
			want = p.re.ReplaceAllString(want, p.repl)
		}
		if got := String(s); got != want {
			t.Fatalf("String(%q) = %q, the regexps alone give %q", s, got, want)
		}
	})
}

// A message with no secret in it, as a failed attempt's usually is.
func BenchmarkStringPlain(b *testing.B) {
	msg := "Our servers are currently overloaded. Please try again later. (request id req_0123456789abcdef, model gpt-6-astra)"
	for b.Loop() {
		String(msg)
	}
}
