package classify

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// The clouds that carry the vendors' formats answer with their own error
// shapes: Amazon Bedrock names an exception (the x-amzn-errortype header
// of a whole answer, the type of the error event the gateway makes of an
// event-stream exception frame), Google Vertex AI uses Google's error
// envelope with its own wordings for a full pool, and Azure OpenAI
// speaks OpenAI's envelope with its own headers and messages.

// awsExceptions maps Bedrock's exception names, lower case and without
// their "Exception" suffix (AWS spells them both ways, and the event
// stream's exception frames start them in lower case: throttlingException),
// to a class. Source: the Amazon Bedrock API Reference (InvokeModel,
// InvokeModelWithResponseStream: Errors) and the Bedrock User Guide's
// "Troubleshooting Amazon Bedrock API Error Codes".
var awsExceptions = map[string]Class{
	// 503 ServiceUnavailable: "the service is experiencing high demand or
	// temporary capacity constraints; not related to your account-level
	// quotas": the region's pool for the model is full
	"serviceunavailable": Capacity,
	// 429 ModelNotReady: the model is not ready to serve requests (yet)
	"modelnotready": Capacity,
	// 429 Throttling: the account's quota, unless its words say capacity
	// (awsThrottleClass)
	"throttling": RateLimit,
	// 400 ServiceQuotaExceeded: the account's service quota
	"servicequotaexceeded": RateLimit,
	// 408 ModelTimeout: the model took too long to answer
	"modeltimeout": Timeout,
	// 424 ModelError and the event stream's ModelStreamError: the model
	// failed while answering
	"modelerror":       ServerError,
	"modelstreamerror": ServerError,
	"internalserver":   ServerError,
	"internalfailure":  ServerError,
	// credentials, signature and permissions
	"accessdenied":               Auth,
	"unrecognizedclient":         Auth,
	"expiredtoken":               Auth,
	"invalidsignature":           Auth,
	"incompletesignature":        Auth,
	"missingauthenticationtoken": Auth,
	"invalidclienttokenid":       Auth,
	"notauthorized":              Auth,
	"requestexpired":             Auth, // a signature too old: the clock is off
	"optinrequired":              Auth,
	// model access not granted to the account: the account's permission,
	// not a fault of the request (the use-case form of Anthropic models,
	// an account Bedrock does not let use a model)
	"ftuformnotfilled": Auth,
	"badcscore":        Auth,
	// a validation failure: bad request unless its words say context
	// length or an unusable model id (awsValidationClass)
	"validation":       BadRequest,
	"validationerror":  BadRequest,
	"resourcenotfound": ModelNotFound,
	"conflict":         BadRequest,
}

// awsName is name (an exception type) lower case, without an "Exception"
// suffix or a ":namespace" tail; "" when Bedrock does not use that name.
func awsName(name string) string {
	n := strings.TrimSuffix(strings.ToLower(awsBareName(name)), "exception")
	if _, ok := awsExceptions[n]; !ok {
		return ""
	}
	return n
}

// awsBareName is an exception's name without the namespace AWS may put
// after it (x-amzn-errortype: ThrottlingException:http://internal.amazon.com/coral/…)
// or before it (__type: com.amazon.coral.service#ThrottlingException).
func awsBareName(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, '#'); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSpace(name)
}

// awsClass is the class of a Bedrock exception given its message (lower
// case); ok is false when name is not one of Bedrock's.
func awsClass(name, lowerMsg string) (Class, bool) {
	n := awsName(name)
	if n == "" {
		return "", false
	}
	switch c := awsExceptions[n]; {
	case n == "throttling":
		return awsThrottleClass(lowerMsg), true
	case c == BadRequest:
		return awsValidationClass(lowerMsg), true
	case n == "modelerror" || n == "modelstreamerror":
		return awsModelErrorClass(lowerMsg), true
	default:
		return c, true
	}
}

// awsCapacityPhrases, in a ThrottlingException's message, say the limit
// is the service's, not the account's: the words Bedrock uses for a full
// pool (its ServiceUnavailable's "high demand or temporary capacity
// constraints", "Too many connections", "unable to process your
// request") or that name the service or the model's capacity. Without
// them a ThrottlingException is the account's quota: "Too many requests,
// please wait before trying again.", "Too many tokens, please wait before
// trying again.", "Too many tokens per day, ...", "Your request rate is
// too high.": rate limits per account and region, which AWS raises on
// request. "capacity" alone is not among them: an account's quota is
// also spoken of as its capacity.
var awsCapacityPhrases = []string{"at capacity", "insufficient capacity", "out of capacity", "capacity is ", "capacity constraints",
	"capacity exhausted", "capacity exceeded", "high demand", "too many connections", "unable to process your request",
	"temporarily unable", "service-wide", "service wide", "not related to your account"}

func awsThrottleClass(lowerMsg string) Class {
	for _, p := range awsCapacityPhrases {
		if strings.Contains(lowerMsg, p) {
			return Capacity
		}
	}
	return RateLimit
}

// awsModelErrorClass is the class of a ModelErrorException or
// ModelStreamErrorException, which pass on the model's own failure: a
// model that says it is overloaded (Anthropic's 529 overloaded_error,
// "Overloaded") has no capacity for the request, which another region or
// cloud may have; any other failure of the model is a server error.
func awsModelErrorClass(lowerMsg string) Class {
	if strings.Contains(lowerMsg, "overloaded") || strings.Contains(lowerMsg, " 529") {
		return Capacity
	}
	return ServerError
}

// awsContextPhrases, in a ValidationException's message, say the request
// is too large for the model's context window. Bedrock's own: "Input is
// too long for requested model."; the model's, passed on after "The model
// returned the following errors: ": Anthropic's "prompt is too long:
// 200049 tokens > 200000 maximum" and "input length and `max_tokens`
// exceed context limit: 187537 + 20000 > 200000", and "too many input
// tokens".
var awsContextPhrases = []string{"input is too long", "prompt is too long", "too many input tokens", "exceed context limit",
	"exceeds context limit", "context window", "context length", "maximum context"}

// awsModelPhrases, in a ValidationException's message, say the model id
// cannot be served as given: another deployment of the model (another
// region, a cross-region inference profile) can, so it is the
// deployment's model that is not found, not a request to refuse
// everywhere.
var awsModelPhrases = []string{"model identifier is invalid", "could not resolve the foundation model", "with on-demand throughput isn",
	"with on-demand throughput is not supported", "model is not supported in this region"}

func awsValidationClass(lowerMsg string) Class {
	for _, p := range awsContextPhrases {
		if strings.Contains(lowerMsg, p) {
			return ContextLength
		}
	}
	if strings.Contains(lowerMsg, "max_tokens") && strings.Contains(lowerMsg, "exceed") {
		return ContextLength
	}
	for _, p := range awsModelPhrases {
		if strings.Contains(lowerMsg, p) {
			return ModelNotFound
		}
	}
	return BadRequest
}

// bedrockAnswer reads a whole Bedrock error answer into info: the
// exception named by x-amzn-errortype (or a JSON body's __type), and the
// body's message ({"message": …}, or {"Message": …} in some AWS
// services' answers). It does nothing to an answer that names no AWS
// exception.
func bedrockAnswer(h http.Header, body []byte, info *errInfo) {
	name := ""
	if h != nil {
		name = h.Get("X-Amzn-Errortype")
	}
	var obj map[string]any
	b := bytes.TrimSpace(body)
	if len(b) > 0 && len(b) <= maxParse && b[0] == '{' {
		if json.Unmarshal(b, &obj) != nil {
			obj = nil
		}
	}
	if name == "" {
		name = str(obj["__type"]) // the AWS JSON protocol's name of the error
	}
	if awsName(name) == "" {
		return
	}
	info.typ, info.shape = awsBareName(name), Bedrock
	if !info.found {
		info.found = true
		info.message = firstNonEmpty(str(obj["message"]), str(obj["Message"]))
	}
}

// vertexPhrases say an answer came from Vertex AI: its documented
// wordings for a 429 and the links its messages carry.
var vertexPhrases = []string{"cloud.google.com/vertex-ai", "aiplatform.googleapis.com", "resource exhausted, please try again later",
	"resource exhausted. please try again later", "exceeded the provisioned throughput"}

func isVertex(lower string) bool {
	for _, p := range vertexPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// vertexClass is the class of a Vertex AI 429 RESOURCE_EXHAUSTED. Source:
// Vertex AI's "Error code 429" page, whose table gives one message per
// quota framework: pay-as-you-go's "Resource exhausted, please try again
// later." is the shared pool, full (capacity: "If resources aren't
// available when you make a request, Vertex AI returns a 429"), and
// Provisioned Throughput's "Too many requests. Exceeded the Provisioned
// Throughput." is the project's reserved throughput used up (a rate
// limit). A project quota (models that still have one, Claude's among
// them: "Quota exceeded for aiplatform.googleapis.com/…_per_minute… Please
// submit a quota increase request.") is the project's rate limit too.
func vertexClass(lowerMsg string) Class {
	switch {
	case strings.Contains(lowerMsg, "exceeded the provisioned throughput"):
		return RateLimit
	case strings.Contains(lowerMsg, "quota exceeded for"), strings.Contains(lowerMsg, "quota increase"):
		return RateLimit
	}
	return Capacity
}

// azureCapacityReasons are the values of x-ms-throttle-reason that say
// Azure's capacity for the model is full, not the deployment's TPM.
var azureCapacityReasons = []string{"modelcapacityexceeded", "capacity"}

// azurePhrases say an answer came from Azure OpenAI: its name and links,
// and its capacity sentence, which OpenAI's own API does not use (its
// "We're currently experiencing high demand" differs). Azure's generic
// wordings ("Rate limit is exceeded", "The service is temporarily unable
// to process your request") say nothing of where an answer came from.
var azurePhrases = []string{"azure openai", "aka.ms/oai", "responsibleaipolicyviolation", "azure.com",
	"system is currently experiencing high demand and cannot process your request", "system is experiencing high demand"}

func isAzure(lower string) bool {
	for _, p := range azurePhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// azureClass is the class Azure's own headers give a 429, "" when they
// say nothing: x-ms-throttle-reason naming the model's capacity.
func azureClass(status int, h http.Header) Class {
	if h == nil || (status != http.StatusTooManyRequests && status != 0) {
		return ""
	}
	r := strings.ToLower(h.Get("X-Ms-Throttle-Reason"))
	for _, c := range azureCapacityReasons {
		if r != "" && strings.Contains(r, c) {
			return Capacity
		}
	}
	return ""
}

// isCloud reports a provider that is one of the clouds.
func isCloud(p Provider) bool { return p == Bedrock || p == Vertex || p == Azure }

// cloudVerdict refines v with the caller's hint when the hint is a cloud:
// the verdict names the cloud the answer came from (a vendor's shape seen
// through it, Anthropic's on Vertex say, is still that cloud's answer),
// and a Vertex 429 RESOURCE_EXHAUSTED is read by Vertex's rules whatever
// its words.
func cloudVerdict(v *Verdict, hint Provider) {
	if !isCloud(hint) {
		return
	}
	switch v.Provider {
	case "", NoGuess, OpenAI, Anthropic, Gemini:
		v.Provider = hint
	}
	if hint == Vertex && v.Provider == Vertex && v.Class == RateLimit && strings.EqualFold(v.Code, "RESOURCE_EXHAUSTED") {
		v.Class = vertexClass(strings.ToLower(v.Message))
	}
}

// cloudHeader is the cloud an answer's headers name, "" for none: Bedrock
// answers carry x-amzn-errortype on an error and x-amzn-bedrock-* on
// success,
// Azure's x-ms-region, x-ms-client-request-id, apim-request-id and the
// like.
func cloudHeader(h http.Header) Provider {
	bedrock, azure := false, false
	for k := range h {
		lk := strings.ToLower(k)
		switch {
		case lk == "x-amzn-errortype" || strings.HasPrefix(lk, "x-amzn-bedrock-"):
			// (x-amzn-requestid alone is any AWS front door's, API
			// Gateway's too)
			bedrock = true
		case strings.HasPrefix(lk, "x-ms-") || lk == "apim-request-id" || lk == "azureml-model-session":
			azure = true
		}
	}
	switch {
	case bedrock:
		return Bedrock
	case azure:
		return Azure
	}
	return ""
}

// answerCloud is the cloud an answer is known to come from, "" for none:
// the caller's hint when it is a cloud, else the cloud the answer's shape,
// headers or words show (cloudShape).
func answerCloud(hint, shape Provider, lowerRaw string, h http.Header) Provider {
	if isCloud(hint) {
		return hint
	}
	if c := cloudShape(shape, lowerRaw, h); isCloud(c) {
		return c
	}
	return ""
}

// cloudShape is p, or the cloud the answer shows it came from: its
// headers (cloudHeader) or its words (Vertex's links and 429 wordings,
// Azure's name and links). A vendor's guess gives way to the cloud that
// carried it; a cloud already named stays.
func cloudShape(p Provider, lowerRaw string, h http.Header) Provider {
	if isCloud(p) {
		return p
	}
	if c := cloudHeader(h); c != "" {
		return c
	}
	switch {
	case (p == "" || p == Gemini) && isVertex(lowerRaw):
		return Vertex
	case (p == "" || p == OpenAI) && isAzure(lowerRaw):
		return Azure
	}
	return p
}
