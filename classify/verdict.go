package classify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Class is a failure class. The names are a contract: spillway explain
// --json, the event log and the policy engine all use them.
type Class string

// The failure classes.
const (
	Capacity  Class = "capacity"
	RateLimit Class = "rate_limit"
	Quota     Class = "quota"
	// UsageLimit is a plan's usage window used up (a ChatGPT plan's
	// usage_limit_reached, a Claude plan's limit, Gemini's daily quota): it
	// comes back by itself at a known time (Verdict.ResetsAt), where quota
	// (billing) does not.
	UsageLimit    Class = "usage_limit"
	Auth          Class = "auth"
	ModelNotFound Class = "model_not_found"
	ContextLength Class = "context_length"
	BadRequest    Class = "bad_request"
	ContentFilter Class = "content_filter"
	ServerError   Class = "server_error"
	Network       Class = "network"
	Timeout       Class = "timeout"
	OK            Class = "ok"
	Unknown       Class = "unknown"
)

// PrefillRefused is the Code of a bad_request that says the model takes no
// partial assistant turn (Anthropic: "This model does not support
// assistant message prefill."): a continuation must go elsewhere.
const PrefillRefused = "prefill_refused"

// TooLarge is the Code of a server_error for an answer larger than
// spillway holds for one request (an event past the frame limit, a whole
// answer or the state a translated stream needs past the request's
// memory): the upstream's answer, not the network's, which the same model
// would send again; the driver goes on to the next model without sending
// it to this one again.
const TooLarge = "answer_too_large"

// TooLargePhrase is in the message of every answer spillway refuses for
// its size (TooLarge): explain reads it back.
const TooLargePhrase = "larger than spillway holds for a request"

// Classes lists every class in a stable order.
var Classes = []Class{Capacity, RateLimit, Quota, UsageLimit, Auth, ModelNotFound, ContextLength,
	BadRequest, ContentFilter, ServerError, Network, Timeout, OK, Unknown}

// ParseClass returns the class with the given name.
func ParseClass(s string) (Class, bool) {
	for _, c := range Classes {
		if string(c) == s {
			return c, true
		}
	}
	return "", false
}

// Retryable reports whether the same request may succeed if sent again
// (possibly after a wait, possibly to another model). Quota and auth never
// do; a usage limit does not until its reset.
func (c Class) Retryable() bool {
	switch c {
	case Capacity, RateLimit, ServerError, Network, Timeout:
		return true
	}
	return false
}

// Provider is a guess at who produced the failure.
type Provider string

// Providers spillway knows.
const (
	OpenAI    Provider = "openai"
	Anthropic Provider = "anthropic"
	Gemini    Provider = "gemini"
	// The clouds that carry those formats, named where the answer came
	// from one (their error shapes are their own).
	Bedrock Provider = "bedrock"
	Vertex  Provider = "vertex"
	Azure   Provider = "azure"
	NoGuess Provider = "unknown"
)

// Verdict is what Classify concludes.
type Verdict struct {
	Class     Class
	Provider  Provider
	Retryable bool
	// Wait is the provider's own hint of how long to wait before retrying
	// (Retry-After, reset headers, RetryInfo, "try again in 11s"); 0 if none.
	Wait time.Duration
	// Status is the HTTP status seen or named in the text, 0 if none.
	Status int
	// ResetsAt, for a usage limit, is when the plan's window comes back
	// (from resets_at, resets_in_seconds, a reset header or the message);
	// zero when it was not said.
	ResetsAt time.Time
	// Code is the upstream error code or type, e.g. "server_is_overloaded".
	Code string
	// Message is the upstream message with secrets redacted, at most 400 bytes.
	Message string
	// Notice marks a client's own retry notice ("Reconnecting... 1/5"): the
	// client is handling it; it is not a final failure.
	Notice bool
	// Summary says what the failure means; Action what to do about it.
	Summary string
	Action  string
}

// verdictJSON is the `spillway explain --json` contract.
type verdictJSON struct {
	Class       Class    `json:"class"`
	Provider    Provider `json:"provider"`
	Retryable   bool     `json:"retryable"`
	WaitSeconds float64  `json:"wait_seconds"`
	Summary     string   `json:"summary"`
	Action      string   `json:"action"`
}

// MarshalJSON renders the explain contract:
// {"class","provider","retryable","wait_seconds","summary","action"}.
func (v Verdict) MarshalJSON() ([]byte, error) {
	return json.Marshal(verdictJSON{v.Class, v.Provider, v.Retryable, v.Wait.Seconds(), v.Summary, v.Action})
}

// String is the one-line form: "capacity: the model's shared pool is full; …".
func (v Verdict) String() string {
	return fmt.Sprintf("%s: %s %s", v.Class, v.Summary, v.Action)
}

// Explained is v with its Summary and Action filled from its class,
// provider and details: the classifier's words for a class known
// elsewhere (an event record's, say).
func (v Verdict) Explained() Verdict {
	v.explain()
	return v
}

// explain fills Summary and Action from the class, provider and details.
func (v *Verdict) explain() {
	wait := ""
	if v.Wait > 0 {
		wait = FormatWait(v.Wait)
	}
	switch v.Class {
	case Capacity:
		v.Summary = "the model's shared pool is full; this is not your account."
		v.Action = "Switch model or wait; spillway serve does it for you."
		if wait != "" {
			v.Action = "Switch model, or wait " + wait + " as the provider asks; spillway serve does it for you."
		}
	case RateLimit:
		v.Summary = "your key or organization sent more requests or tokens per minute than its limit allows; the model itself is fine."
		v.Action = "Slow down and retry the same model"
		if wait != "" {
			v.Action += " after " + wait
		}
		v.Action += "; switching model does not help much, pacing does (spillway paces for you)."
	case Quota:
		v.Summary = "your credits, spend limit or plan usage are used up; retrying will not help."
		v.Action = "Check billing or your plan's usage page, or use another key"
		if wait != "" {
			v.Action += "; the limit resets in " + wait
		}
		v.Action += "."
	case UsageLimit:
		v.Summary = "your plan's usage window is used up; it comes back by itself at its reset (this is your plan, not the model's capacity)."
		v.Action = "Wait for the reset"
		if !v.ResetsAt.IsZero() {
			v.Action += " at " + v.ResetsAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		if wait != "" {
			v.Action += " (in " + wait + ")"
		}
		v.Action += ", or go on with another plan or provider: spillway exec --until-reset waits for you, a chain's overflow spills."
	case Auth:
		v.Summary = "the key or login was refused (missing, wrong, expired or without access); retrying will not help."
		switch v.Provider {
		case OpenAI:
			v.Action = "Check OPENAI_API_KEY (or run `codex login`) and the base URL it is sent to."
		case Anthropic:
			v.Action = "Check ANTHROPIC_API_KEY (or run `claude /login`) and the base URL it is sent to."
		case Gemini:
			v.Action = "Check GEMINI_API_KEY / GOOGLE_API_KEY (or re-run `gemini` to log in)."
		default:
			v.Action = "Check the API key or login and the base URL it is sent to."
		}
	case ModelNotFound:
		v.Summary = "the model name does not exist or your key has no access to it."
		v.Action = "Check the model name (spillway config check lists the configured ones); spillway skips it in a chain."
	case ContextLength:
		v.Summary = "the request is larger than the model's context window."
		v.Action = "Compact or trim the conversation, or use a model with a larger window (spillway moves to one when the chain has it)."
	case BadRequest:
		v.Summary = "the provider rejected the request itself; the same request will fail again anywhere."
		v.Action = "Fix the request (see the provider's message); do not retry it unchanged."
	case ContentFilter:
		v.Summary = "the provider's content policy blocked this request or its answer."
		v.Action = "Rephrase the request; retrying it unchanged will be refused again."
	case ServerError:
		v.Summary = "the provider failed with an internal error that does not say capacity."
		v.Action = "Retry shortly on the same model; if it persists treat it like capacity and switch model."
		if v.Code == TooLarge {
			v.Summary = "the provider's answer (or one event of it) was larger than spillway holds for a request; it is the answer itself, not the network and not the model's capacity."
			v.Action = "spillway does not send the request to that model again: it goes on to the next model. Ask for a shorter answer or smaller tool arguments, or, if answers this large are expected, raise gateway.max_body_mb (and gateway.max_inflight_mb)."
		}
	case Network:
		v.Summary = "the provider could not be reached, or dropped the connection before a complete answer (reset, refused, DNS, TLS or a cut stream); the model did not say it is full."
		v.Action = "Retry the same model after a short pause; check your network, proxy or VPN if it persists. Switch model only if the provider answers other requests meanwhile (then this model is the problem); spillway does exactly that."
		if localTarget(v.Message) {
			// the address is on this machine: a gateway (spillway serve)
			// that is not running, not the provider's network
			v.Summary = "the client could not reach a server on this machine (its base URL is local): the gateway, spillway serve, is most likely not running; this is not capacity and not the provider."
			v.Action = "Start the gateway (spillway serve, or spillway setup service to keep it running), or point the client back at the provider; spillway doctor checks the path."
		}
	case Timeout:
		v.Summary = "the provider accepted the request and then sent nothing in time: no headers, no first output, or a stall."
		v.Action = "Try the next model: a silent model tends to stay silent (spillway moves on at once; retry.timeout_retries sets same-model retries). If every model times out on a long request, raise timeouts.header or timeouts.request, or split the work."
	case OK:
		v.Summary = "no failure: the request succeeded."
		v.Action = "Nothing to do."
	default:
		v.Summary = "this does not look like any failure spillway knows."
		v.Action = "Pass the HTTP status with --status and the response body, or the full error line, to spillway explain."
	}
	v.cloudAdvice(wait)
	switch {
	case v.Notice && v.Class == Network && localTarget(v.Message):
		// Codex waits for minutes on a local base URL that does not answer:
		// waiting will not bring the gateway up
		v.Summary = "the client is retrying by itself, but " + v.Summary
	case v.Notice:
		v.Summary = "the client is retrying by itself after this: " + v.Summary
		v.Action = "Nothing yet: wait for the client's own retries to finish; act only if it then fails."
	}
}

// FormatWait renders a wait compactly: 11.054s, 2m0s, 4h20m0s.
func FormatWait(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	if d < time.Minute {
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".") + "s"
	}
	return d.Round(time.Second).String()
}

// localTarget reports a failure line that names an address on this
// machine, or Codex's "waiting for network" (which it prints, for minutes,
// when its base URL does not answer).
func localTarget(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "waiting for network") || strings.Contains(m, "127.0.0.1") || strings.Contains(m, "://localhost") || strings.Contains(m, "[::1]")
}
