package classify

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCloudAdvice(t *testing.T) {
	bedrockH := func(typ string) http.Header {
		return http.Header{"X-Amzn-Errortype": {typ + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}}
	}
	cases := []struct {
		name     string
		in       Input
		class    Class
		provider Provider
		summary  string // a phrase the summary must hold
		action   string // a phrase the action must hold
	}{
		{"bedrock service unavailable", Input{Status: 503, Header: bedrockH("ServiceUnavailableException"), Body: []byte(`{"message":"Bedrock is unable to process your request."}`)},
			Capacity, Bedrock, "in this region is full", "another region"},
		{"bedrock model not ready", Input{Status: 429, Header: bedrockH("ModelNotReadyException"), Body: []byte(`{"message":"Model is not ready to serve inference requests."}`)},
			Capacity, Bedrock, "not ready to serve requests in this region", "another region"},
		{"bedrock throttling", Input{Status: 429, Header: bedrockH("ThrottlingException"), Body: []byte(`{"message":"Too many requests, please wait before trying again."}`)},
			RateLimit, Bedrock, "AWS account's Bedrock quota", "quota increase"},
		{"bedrock access denied", Input{Status: 403, Header: bedrockH("AccessDeniedException"), Body: []byte(`{"message":"You don't have access to the model with the specified model ID."}`)},
			Auth, Bedrock, "refused", "bedrock:InvokeModel"},
		{"bedrock unknown model", Input{Status: 404, Header: bedrockH("ResourceNotFoundException"), Body: []byte(`{"message":"Model not found."}`)},
			ModelNotFound, Bedrock, "does not exist", "inference profile"},
		{"bedrock model timeout in a stream", Input{Event: "error", Body: []byte(`{"type":"error","error":{"type":"modelTimeoutException","message":"Model has timed out in processing the request."}}`)},
			Timeout, Bedrock, "ModelTimeoutException", "next model"},
		{"vertex pay-as-you-go", Input{Status: 429, Body: []byte(`{"error":{"code":429,"message":"Resource exhausted, please try again later.","status":"RESOURCE_EXHAUSTED"}}`)},
			Capacity, Vertex, "shared pay-as-you-go pool", "Provisioned Throughput"},
		{"vertex provisioned throughput", Input{Status: 429, Body: []byte(`{"error":{"code":429,"message":"Too many requests. Exceeded the Provisioned Throughput.","status":"RESOURCE_EXHAUSTED"}}`)},
			RateLimit, Vertex, "Provisioned Throughput for this model is used up", "GSUs"},
		{"vertex project quota", Input{Status: 429, Body: []byte(`{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude-sonnet-4.","status":"RESOURCE_EXHAUSTED"}}`)},
			RateLimit, Vertex, "project's Vertex AI quota", "quota increase"},
		{"vertex auth", Input{Status: 401, Provider: Vertex, Body: []byte(`{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`)},
			Auth, Vertex, "refused", "roles/aiplatform.user"},
		{"azure token rate limit", Input{Status: 429, Header: http.Header{"X-Ms-Retry-After-Ms": {"5500"}}, Body: []byte(`{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`)},
			RateLimit, Azure, "(TPM)", "after 5.5s"},
		{"azure high demand", Input{Status: 429, Body: []byte(`{"error":{"code":"429","message":"The system is currently experiencing high demand and cannot process your request."}}`)},
			Capacity, Azure, "no capacity for this model in this region", "another region"},
		{"azure content filter", Input{Status: 400, Body: []byte(`{"error":{"code":"content_filter","message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","innererror":{"code":"ResponsibleAIPolicyViolation"}}}`)},
			ContentFilter, Azure, "ResponsibleAIPolicyViolation", "content filter configuration"},
		{"azure unknown deployment", Input{Status: 404, Header: http.Header{"X-Ms-Region": {"East US"}}, Body: []byte(`{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`)},
			ModelNotFound, Azure, "does not exist", "deployment name in base_url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = time.Unix(1_800_000_000, 0)
			v := Classify(c.in)
			if v.Class != c.class || v.Provider != c.provider {
				t.Fatalf("got %s from %s, want %s from %s (%q)", v.Class, v.Provider, c.class, c.provider, v.Message)
			}
			if !strings.Contains(v.Summary, c.summary) {
				t.Errorf("summary %q lacks %q", v.Summary, c.summary)
			}
			if !strings.Contains(v.Action, c.action) {
				t.Errorf("action %q lacks %q", v.Action, c.action)
			}
		})
	}
}

func TestAWSNames(t *testing.T) {
	cases := []struct {
		name, msg string
		want      Class
		ok        bool
	}{
		{"ThrottlingException", "too many requests, please wait before trying again.", RateLimit, true},
		{"throttlingException", "too many tokens, please wait before trying again.", RateLimit, true},
		{"Throttling", "rate exceeded", RateLimit, true},
		{"THROTTLINGEXCEPTION", "the service is at capacity", Capacity, true},
		{"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "high demand", Capacity, true},
		{"com.amazon.coral.service#ServiceUnavailableException", "", Capacity, true},
		{"ValidationException", "input is too long for requested model.", ContextLength, true},
		{"ValidationException", "max_tokens: 100000 exceeds the model's limit", ContextLength, true},
		{"ValidationException", "the provided model identifier is invalid.", ModelNotFound, true},
		{"ValidationException", "malformed input request", BadRequest, true},
		{"ModelStreamErrorException", "", ServerError, true},
		{"overloaded_error", "", "", false},
		{"invalid_request_error", "", "", false},
		{"", "", "", false},
	}
	for _, c := range cases {
		got, ok := awsClass(c.name, c.msg)
		if got != c.want || ok != c.ok {
			t.Errorf("awsClass(%q, %q) = %s, %v; want %s, %v", c.name, c.msg, got, ok, c.want, c.ok)
		}
	}
}

func TestRetryAfterPrefersAzureMilliseconds(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"X-Ms-Retry-After-Ms": {"5500"}, "Retry-After-Ms": {"7000"}, "Retry-After": {"9"}}, 5500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"7000"}, "Retry-After": {"9"}}, 7 * time.Second},
		{http.Header{"X-Ms-Retry-After-Ms": {"soon"}, "Retry-After": {"9"}}, 9 * time.Second},
	}
	for _, c := range cases {
		if got, ok := RetryAfter(c.h, now); !ok || got != c.want {
			t.Errorf("RetryAfter(%v) = %v, %v; want %v", c.h, got, ok, c.want)
		}
	}
}

func TestPastedAnswer(t *testing.T) {
	cases := []struct {
		name, text string
		class      Class
		provider   Provider
		wait       time.Duration
	}{
		{"crlf, bedrock", "HTTP/1.1 503 Service Unavailable\r\nx-amzn-ErrorType: ServiceUnavailableException:http://internal.amazon.com/coral/com.amazon.bedrock/\r\n\r\n{\"message\":\"Bedrock is unable to process your request.\"}", Capacity, Bedrock, 0},
		{"lf, http/2, azure, chunked", "HTTP/2 429\ntransfer-encoding: chunked\nx-ms-retry-after-ms: 2500\nretry-after: 3\n\n{\"error\":{\"code\":\"429\",\"message\":\"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier.\"}}", RateLimit, Azure, 2500 * time.Millisecond},
		{"status line alone", "HTTP/1.1 503 Service Unavailable", Capacity, NoGuess, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(Input{Text: c.text, Now: time.Unix(1_800_000_000, 0)})
			if v.Class != c.class || v.Provider != c.provider || v.Wait != c.wait {
				t.Errorf("got %s from %s, wait %v; want %s from %s, wait %v", v.Class, v.Provider, v.Wait, c.class, c.provider, c.wait)
			}
		})
	}
}

// A cloud's wordings count only on that cloud's answers: a vendor's answer
// that happens to share a phrase keeps its vendor and its own class.
func TestCloudWordsNeedTheCloud(t *testing.T) {
	openaiH := http.Header{"Openai-Processing-Ms": {"12"}}
	cases := []struct {
		name     string
		in       Input
		class    Class
		provider Provider
	}{
		{"anthropic 500 asking to wait", Input{Status: 500, Body: []byte(`{"type":"error","error":{"type":"api_error","message":"Internal server error, please wait before trying again"}}`)},
			ServerError, Anthropic},
		{"openai 429 rate limit is exceeded", Input{Status: 429, Header: openaiH, Body: []byte(`{"error":{"message":"Rate limit is exceeded. Try again in 10 seconds.","type":"requests","code":"rate_limit_exceeded"}}`)},
			RateLimit, OpenAI},
		{"openai 429 rate limit is exceeded, no code", Input{Status: 429, Header: openaiH, Body: []byte(`{"error":{"message":"Rate limit is exceeded. Try again in 10 seconds.","type":null}}`)},
			RateLimit, OpenAI},
		{"openai 503 temporarily unable", Input{Status: 503, Body: []byte(`{"error":{"message":"The service is temporarily unable to process your request","type":"server_error"}}`)},
			Capacity, OpenAI},
		{"openai 429 have been limited", Input{Status: 429, Header: openaiH, Body: []byte(`{"error":{"message":"Your requests have been limited.","type":null}}`)},
			RateLimit, OpenAI},
		{"anthropic 429 too many requests (Bedrock's full phrase: any provider)", Input{Status: 429, Body: []byte(`{"type":"error","error":{"type":"api_error","message":"Too many requests, please wait before trying again."}}`)},
			RateLimit, Anthropic},
		{"anthropic 500 too many tokens (Bedrock's full phrase: any provider)", Input{Status: 500, Body: []byte(`{"type":"error","error":{"type":"api_error","message":"Too many tokens, please wait before trying again."}}`)},
			RateLimit, Anthropic},
		// the same wordings on the cloud's own answers still count
		{"azure 429 rate limit is exceeded by header", Input{Status: 429, Header: http.Header{"X-Ms-Region": {"East US"}}, Body: []byte(`{"error":{"code":"429","message":"Rate limit is exceeded. Try again in 10 seconds."}}`)},
			RateLimit, Azure},
		{"azure 503 temporarily unable by hint", Input{Status: 429, Provider: Azure, Body: []byte(`{"error":{"code":"429","message":"The service is temporarily unable to process your request."}}`)},
			Capacity, Azure},
		{"bedrock too many connections by header", Input{Status: 429, Header: http.Header{"X-Amzn-Bedrock-Invocation-Latency": {"1"}}, Body: []byte(`{"message":"Too many connections, please wait before trying again."}`)},
			Capacity, Bedrock},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(c.in)
			if v.Class != c.class || v.Provider != c.provider {
				t.Errorf("got %s from %s, want %s from %s (code %q)", v.Class, v.Provider, c.class, c.provider, v.Code)
			}
		})
	}
}

// A Bedrock ModelErrorException passes on the model's own failure: an
// overloaded model is capacity, not a server error.
func TestBedrockModelErrorOverloaded(t *testing.T) {
	cases := []struct {
		name, msg string
		want      Class
	}{
		{"ModelErrorException", `The model returned the following errors: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Capacity},
		{"ModelErrorException", "Received error code 529 from the model: Overloaded", Capacity},
		{"modelStreamErrorException", "The model is overloaded. Try again later.", Capacity},
		{"ModelErrorException", "The system encountered an unexpected error during processing. Try your request again.", ServerError},
		// "capacity" alone is not the service's limit
		{"ThrottlingException", "You have exceeded the capacity of your account's quota of tokens per minute.", RateLimit},
		{"ThrottlingException", "Your account's capacity reservation limit is reached, please wait before trying again.", RateLimit},
		{"ThrottlingException", "Bedrock has insufficient capacity for this model.", Capacity},
		{"ThrottlingException", "The model's capacity is exhausted in this region.", Capacity},
	}
	for _, c := range cases {
		if got, _ := awsClass(c.name, strings.ToLower(c.msg)); got != c.want {
			t.Errorf("awsClass(%q, %q) = %s, want %s", c.name, c.msg, got, c.want)
		}
	}
}
