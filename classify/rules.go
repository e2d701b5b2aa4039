package classify

import "strings"

// codeClass maps specific upstream codes and types (lower case) to a class.
// These win over wording and status: a provider that says
// "server_is_overloaded" means it.
var codeClass = map[string]Class{
	// capacity
	"server_is_overloaded":     Capacity,
	"server_overloaded":        Capacity, // Codex session files: codex_error_info
	"slow_down":                Capacity,
	"overloaded_error":         Capacity,
	"model_capacity_exhausted": Capacity,
	"unavailable":              Capacity, // Gemini 503 UNAVAILABLE
	// a 429 saying the service tier's shared pool is full (Mistral's
	// OpenAI-compatible API): the pool, not the caller's limit
	"service_tier_capacity_exceeded": Capacity,
	// rate limits
	"rate_limit_exceeded": RateLimit,
	"rate_limit_error":    RateLimit,
	"tokens":              RateLimit, // OpenAI 429 type for TPM
	"requests":            RateLimit, // OpenAI 429 type for RPM
	"tokens_usage_based":  RateLimit,
	// quota and billing
	"insufficient_quota":                Quota,
	"credit_balance_exhausted":          Quota,
	"organization_spend_limit_exceeded": Quota,
	"project_spend_limit_exceeded":      Quota,
	"organization_usage_limit_exceeded": Quota,
	"usage_limit_reached":               UsageLimit, // a ChatGPT plan's window, with resets_at
	"usage_limit_exceeded":              UsageLimit, // Codex's codex_error_info for it
	"billing_hard_limit_reached":        Quota,
	"billing_not_active":                Quota,
	"billing_error":                     Quota,
	"enforced_spend_limit_reached":      Quota,
	// auth
	"invalid_api_key":                      Auth,
	"invalid_authentication":               Auth,
	"authentication_error":                 Auth,
	"permission_error":                     Auth,
	"unauthenticated":                      Auth,
	"permission_denied":                    Auth,
	"api_key_invalid":                      Auth,
	"account_deactivated":                  Auth,
	"unsupported_country_region_territory": Auth,
	"invalid_organization":                 Auth,
	// model
	"model_not_found":    ModelNotFound,
	"deploymentnotfound": ModelNotFound, // Azure OpenAI: the deployment in the URL does not exist
	// context window
	"context_length_exceeded": ContextLength,
	// content
	"content_policy_violation": ContentFilter,
	"content_filter":           ContentFilter,
	// Azure OpenAI's content filter, in its innererror
	"responsibleaipolicyviolation": ContentFilter,
	// server / timeout
	"internal_error":    ServerError,
	"internal":          ServerError,
	"timeout_error":     Timeout,
	"deadline_exceeded": Timeout,
	"request_too_large": BadRequest,
}

// weakCodes name a family, not a cause: they count only when neither the
// wording nor a specific code says more.
var weakCodes = map[string]Class{
	"invalid_request_error":     BadRequest,
	"invalid_argument":          BadRequest,
	"failed_precondition":       BadRequest,
	"not_found_error":           ModelNotFound,
	"not_found":                 ModelNotFound,
	"api_error":                 ServerError,
	"server_error":              ServerError,
	"resource_exhausted":        RateLimit, // refined by Gemini quota ids
	"service_unavailable_error": Capacity,
}

type rule struct {
	class    Class
	provider Provider
	phrases  []string
	// anyShape marks a cloud's rule whose phrases are specific enough to
	// mean the same on any provider's answer; a cloud's other rules count
	// only on that cloud's answers (matchRules).
	anyShape bool
}

// rules are tried in order on the lower-cased message or line. Order encodes
// precedence: provider-side signals (capacity, quota, rate, auth, request
// shape) before transport wording, so that "stream disconnected before
// completion: Our servers are currently overloaded" is capacity, while a bare
// "connection reset by peer" stays network.
var rules = []rule{
	{Capacity, OpenAI, []string{"selected model is at capacity", "server_is_overloaded", "servers are currently overloaded", "server is overloaded or not ready", "slow_down", "we're currently experiencing high demand"}, false},
	{Capacity, Anthropic, []string{"overloaded_error", "529 overloaded", "\"overloaded\""}, false},
	{Capacity, Gemini, []string{"the model is overloaded", "model_capacity_exhausted", "no capacity available for model", "this model is currently experiencing high demand"}, false},
	// the clouds' documented wordings (classify/cloud.go says where from):
	// they count only on that cloud's answers (its hint, headers or
	// words), as the generic ones among them ("rate limit is exceeded",
	// "service is temporarily unable to process your request") mean
	// nothing about a cloud on another provider's answer
	// (Bedrock's full ServiceUnavailable sentences: no vendor says them
	// meaning anything else, so they count on any answer, as the
	// ThrottlingException's below)
	{Capacity, Bedrock, []string{"too many connections, please wait before trying again", "bedrock is unable to process your request"}, true},
	{Capacity, Vertex, []string{"resource exhausted, please try again later", "resource exhausted. please try again later"}, false},
	{Capacity, Azure, []string{"system is experiencing high demand", "currently experiencing high demand and cannot process your request", "service is temporarily unable to process your request"}, false},
	{Capacity, NoGuess, []string{"at capacity", "overloaded", "high demand", "capacity exhausted", "insufficient capacity", "out of capacity", "tier capacity exceeded",
		"service is temporarily unable to process your request"}, false},
	// Bedrock's ThrottlingException wordings are the account's quota per
	// region, "per day" included: never a context length ("too many
	// tokens") nor a plan's daily window. These full sentences are a rate
	// limit on any provider's answer (no vendor says them meaning anything
	// else), so they count whatever the shape; they name Bedrock only when
	// nothing else names the provider. The bare "please wait before trying
	// again" is no marker: vendors add it to any failure.
	{RateLimit, Bedrock, []string{"too many tokens, please wait before trying again", "too many requests, please wait before trying again",
		"too many tokens per day, please wait"}, true},
	{RateLimit, Bedrock, []string{"your request rate is too high"}, false},
	{RateLimit, Vertex, []string{"exceeded the provisioned throughput", "quota exceeded for aiplatform.googleapis.com"}, false},
	{RateLimit, Azure, []string{"exceeded token rate limit", "exceeded call rate limit", "have been limited", "rate limit is exceeded"}, false},
	// Gemini quota ids carry the period: PerDay is a usage limit (it comes
	// back at the day's reset), PerMinute a rate limit.
	{UsageLimit, Gemini, []string{"perday", "per day", "exhausted your daily quota"}, false},
	{RateLimit, Gemini, []string{"perminute", "per minute"}, false},
	// a plan's usage window: it resets by itself
	{UsageLimit, OpenAI, []string{"you've hit your usage limit", "you’ve hit your usage limit", "usage_limit_reached"}, false},
	{UsageLimit, Anthropic, []string{"claude usage limit reached", "claude ai usage limit reached", "5-hour limit reached", "weekly limit reached"}, false},
	{Quota, OpenAI, []string{"insufficient_quota", "you exceeded your current quota, please check your plan and billing details. for more information", "quota exceeded. check your plan and billing", "credit_balance_exhausted", "spend_limit_exceeded", "usage_limit_exceeded"}, false},
	{Quota, Anthropic, []string{"credit balance is too low", "enforced_spend_limit_reached", "billing_error"}, false},
	{Quota, NoGuess, []string{"quota exceeded", "exceeded your current quota", "check your plan and billing", "usage limit", "spend limit", "out of credits", "insufficient credits", "billing"}, false},
	{RateLimit, OpenAI, []string{"rate_limit_exceeded", "rate limit reached for", "requests per min", "tokens per min"}, false},
	{RateLimit, Anthropic, []string{"rate_limit_error", "would exceed the rate limit", "would exceed your organization's rate limit"}, false},
	{RateLimit, NoGuess, []string{"rate limit", "rate-limit", "ratelimit", "too many requests", "resource has been exhausted", "resource_exhausted"}, false},
	{Auth, OpenAI, []string{"incorrect api key provided", "invalid_api_key", "you didn't provide an api key", "codex login"}, false},
	{Auth, Anthropic, []string{"invalid x-api-key", "authentication_error", "oauth token has expired", "please run /login", "invalid bearer token"}, false},
	{Auth, Gemini, []string{"api key not valid", "api_key_invalid"}, false},
	{Auth, NoGuess, []string{"invalid api key", "api key is invalid", "missing api key", "no api key", "unauthorized", "unauthenticated", "authentication failed", "not logged in", "permission denied", "permission_denied", "does not have permission", "forbidden", "token expired", "access denied"}, false},
	{ContextLength, OpenAI, []string{"context_length_exceeded", "maximum context length", "exceeds the context window", "ran out of room in the model's context window"}, false},
	{ContextLength, Anthropic, []string{"prompt is too long"}, false},
	{ContextLength, Gemini, []string{"input token count"}, false},
	{ContextLength, NoGuess, []string{"context window", "context length", "too many tokens", "maximum number of tokens"}, false},
	{ModelNotFound, OpenAI, []string{"model_not_found", "does not exist or you do not have access to it"}, false},
	{ModelNotFound, Gemini, []string{"is not found for api version"}, false},
	{ModelNotFound, NoGuess, []string{"model not found", "unknown model", "no such model", "invalid model", "model does not exist"}, false},
	// Copilot CLI's own words for its provider's 404 and for a provider it cannot reach
	{ModelNotFound, NoGuess, []string{"' not found on provider at"}, false},
	{Network, NoGuess, []string{"could not connect to local model provider", "could not connect to model provider"}, false},
	{ContentFilter, NoGuess, []string{"content_policy_violation", "content policy", "content filter", "content_filter", "safety system", "flagged as potentially violating"}, false},
	{Timeout, NoGuess, []string{"idle timeout", "timed out", "timeout", "deadline exceeded", "deadline_exceeded", "etimedout"}, false},
	{Network, NoGuess, []string{"stream disconnected", "model stream ended without a finish reason", "connection lost", "stream closed before", "connection reset", "connection refused", "connection closed", "connection error", "econnreset", "econnrefused", "enotfound", "eai_again", "no such host", "getaddrinfo", "dns", "tls handshake", "tls:", "x509", "certificate", "broken pipe", "unexpected eof", "socket hang up", "network error", "network is unreachable", "fetch failed", "error sending request", "upstream connect error", "no route to host", "eof"}, false},
	{ServerError, NoGuess, []string{"server had an error", "internal server error", "internal error", "bad gateway", "api_error"}, false},
}

// matchRules returns the first rule matching the lower-cased text. A
// cloud's rule counts only when cloud (the cloud the answer is known to
// come from, "" for none) is that cloud, or the rule is anyShape.
func matchRules(lower string, cloud Provider) (Class, Provider, bool) {
	for _, r := range rules {
		if isCloud(r.provider) && r.provider != cloud && !r.anyShape {
			continue
		}
		for _, p := range r.phrases {
			if strings.Contains(lower, p) {
				return r.class, r.provider, true
			}
		}
	}
	return "", "", false
}

// statusClass is the fallback when neither code nor wording decides.
func statusClass(status int, lowerMsg string) Class {
	switch {
	case status >= 200 && status < 300:
		return OK
	case status == 401 || status == 403:
		return Auth
	case status == 402:
		return Quota
	case status == 404:
		if strings.Contains(lowerMsg, "model") {
			return ModelNotFound
		}
		return BadRequest
	case status == 408 || status == 504:
		return Timeout
	case status == 413:
		return BadRequest
	case status == 429:
		return RateLimit
	case status == 503 || status == 529:
		return Capacity
	case status >= 500 && status < 600:
		return ServerError
	case status >= 400 && status < 500:
		return BadRequest
	}
	return Unknown
}

// guessText guesses the provider from words in a line.
func guessText(lower string) Provider {
	switch {
	case strings.Contains(lower, "anthropic") || strings.Contains(lower, "claude") || strings.Contains(lower, "api error: 5") && strings.Contains(lower, "overloaded"):
		return Anthropic
	case strings.Contains(lower, "gemini") || strings.Contains(lower, "googleapis") || strings.Contains(lower, "[api error: got status"):
		return Gemini
	case strings.Contains(lower, "openai") || strings.Contains(lower, "codex") || strings.Contains(lower, "gpt-") || strings.Contains(lower, "chatgpt") || strings.Contains(lower, "unexpected status") ||
		strings.Contains(lower, "stream disconnected before completion") || strings.Contains(lower, "response.completed"):
		return OpenAI
	}
	return ""
}
