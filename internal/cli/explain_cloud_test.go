package cli

import (
	"strings"
	"testing"
)

// TestExplainCloudErrors gives explain each cloud's errors in the three
// forms a user has them (pasted text, a whole HTTP answer with its
// headers, a stream's error event) and checks the class, the cloud and
// the cloud's own advice.
func TestExplainCloudErrors(t *testing.T) {
	t.Parallel()
	const throttle = `{"message":"Too many tokens, please wait before trying again."}`
	cases := []struct {
		name  string
		args  []string
		stdin string
		want  []string // lines or phrases the output must hold
	}{
		{"bedrock capacity, pasted text", []string{"explain", "API Error (503 Too many connections, please wait before trying again.)"}, "",
			[]string{"capacity: Amazon Bedrock's capacity for this model in this region is full", "another region", "provider:  bedrock", "retry:     yes"}},
		{"bedrock throttling, status and header", []string{"explain", "--status", "429", "--header", "x-amzn-errortype: ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", throttle}, "",
			[]string{"rate_limit: your AWS account's Bedrock quota", "ask AWS for a quota increase", "provider:  bedrock", "upstream:  ThrottlingException: Too many tokens"}},
		{"bedrock throttling, a whole answer on stdin", []string{"explain", "-"},
			"HTTP/1.1 429 Too Many Requests\r\nx-amzn-RequestId: ca47a5ce-e260-4824-aa0e-2e62669d5d6e\r\nx-amzn-ErrorType: ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/\r\n\r\n" + throttle + "\n",
			[]string{"rate_limit: your AWS account's Bedrock quota", "status:    429"}},
		{"bedrock service unavailable, a stream's event", []string{"explain", "-"},
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"serviceUnavailableException\",\"message\":\"Bedrock is unable to process your request.\"}}\n\n",
			[]string{"capacity: Amazon Bedrock's capacity", "spill", "provider:  bedrock"}},
		{"bedrock validation, context length", []string{"explain", "--status", "400", "--header", "x-amzn-errortype: ValidationException", `{"message":"Input is too long for requested model."}`}, "",
			[]string{"context_length:", "provider:  bedrock", "retry:     no"}},
		{"vertex pay-as-you-go 429", []string{"explain", "--status", "429", `{"error":{"code":429,"message":"Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.","status":"RESOURCE_EXHAUSTED"}}`}, "",
			[]string{"capacity: Vertex AI's shared pay-as-you-go pool", "Provisioned Throughput", "provider:  vertex"}},
		{"vertex 429 with the hint", []string{"explain", "--provider", "vertex", "--status", "429", `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`}, "",
			[]string{"capacity: Vertex AI's shared pay-as-you-go pool", "provider:  vertex"}},
		{"vertex provisioned throughput", []string{"explain", "-"},
			"HTTP/2 429\ncontent-type: application/json\n\n{\"error\":{\"code\":429,\"message\":\"Too many requests. Exceeded the Provisioned Throughput.\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n",
			[]string{"rate_limit: your project's Provisioned Throughput", "GSUs", "provider:  vertex"}},
		{"claude on vertex, overloaded event", []string{"explain", "--provider", "vertex", "-"},
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			[]string{"capacity: Vertex AI's shared pay-as-you-go pool", "provider:  vertex"}},
		{"azure token rate limit", []string{"explain", "--status", "429", "--header", "x-ms-retry-after-ms: 5500", "--header", "retry-after: 6",
			`{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`}, "",
			[]string{"rate_limit: the Azure OpenAI deployment's tokens-per-minute (TPM)", "Retry after 5.5s", "retry:     yes, wait 5.5s", "provider:  azure"}},
		{"azure capacity by its header", []string{"explain", "-"},
			"HTTP/1.1 429 Too Many Requests\nx-ms-throttle-reason: ModelCapacityExceeded\nretry-after: 3\n\n{\"error\":{\"code\":\"429\",\"message\":\"Rate limit is exceeded.\"}}\n",
			[]string{"capacity: Azure OpenAI has no capacity for this model in this region", "provider:  azure", "wait 3s"}},
		{"azure content filter", []string{"explain", "--status", "400", `{"error":{"code":"content_filter","message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","innererror":{"code":"ResponsibleAIPolicyViolation"}}}`}, "",
			[]string{"content_filter: Azure's content filter (ResponsibleAIPolicyViolation)", "provider:  azure", "retry:     no"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := run(t, nil, c.stdin, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestExplainCloudJSON checks the --json contract on a cloud's error: the
// provider is the cloud, the wait Azure's milliseconds.
func TestExplainCloudJSON(t *testing.T) {
	t.Parallel()
	out, _, code := run(t, nil, "", "explain", "--json", "--status", "429", "--header", "x-ms-retry-after-ms: 1500", "--header", "x-ms-throttle-reason: ModelCapacityExceeded",
		`{"error":{"code":"429","message":"Rate limit is exceeded."}}`)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{`"class":"capacity"`, `"provider":"azure"`, `"retryable":true`, `"wait_seconds":1.5`} {
		if !strings.Contains(out, w) {
			t.Errorf("json lacks %s: %s", w, out)
		}
	}
}
