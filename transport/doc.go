// Package transport is spillway as a Go library: an http.RoundTripper that
// gives any HTTP client, and so the official OpenAI, Anthropic and Google
// Gen AI (Gemini) SDKs, the gateway's behaviour without a gateway in
// between.
//
//	client := openai.NewClient(
//		option.WithHTTPClient(&http.Client{Transport: transport.New(cfg)}),
//		option.WithMaxRetries(0), // spillway retries; the SDK should not
//	)
//
// # What is managed
//
// A POST to an endpoint spillway knows whose request names a model is
// managed: a URL path ending in /responses, /chat/completions or
// /embeddings for the OpenAI wire format, or /messages for Anthropic's,
// with a JSON body whose "model" names it; or a Gemini model's method,
// …/models/MODEL:generateContent or :streamGenerateContent, where the
// model is the path's (a name that cannot go in a URL path is refused with
// an error). Every other request (Gemini's :countTokens among them) goes
// to the base transport untouched. The body is read once and kept, so each
// attempt sends a fresh copy.
//
// A managed request goes to the same driver as the gateway's
// (policy.Engine.Run), with the same HTTP send: the library has no retry
// rules, waits or watchdogs of its own. For each
// attempt the driver waits what the plan says (charged to the request's
// budget: WithBudget or X-Spillway-Budget), takes its turn from the pacer
// (a slot it waits for no longer than the budget), asks the model's
// breaker, and the send replaces the body's "model" (for Gemini, the
// path's model) with the candidate's and sends to the URL the caller used
// when the candidate is a model of the provider that URL addresses (or of
// none the configuration places there); a deployment or another
// provider's model goes to its own provider's URL, as the gateway sends
// it. A non-2xx answer (its first MiB) or a transport error is classified
// (package classify) and the driver decides: the next model for
// capacity, the same model after Retry-After for a rate limit, the same
// model after a short gap for a network failure, and at once the caller's
// error for quota, auth and bad requests. The header, first-output and idle
// watchdogs (timeouts.first_token, timeouts.idle in the configuration) apply as
// they do in the gateway; zero turns one off.
//
// # Streams
//
// An event stream is held, exactly like the gateway holds it, until its
// first real output: opening events (response.created, message_start, a
// role-only chunk) are kept back, at most 1 MiB, so an error event, an early
// end or a silence can still be retried on the next model without the
// caller seeing anything. Once output starts the caller gets the held events
// and then the live stream, event by event as it came. After that a broken
// stream fails the caller's read with an error in which errors.Is finds
// io.ErrUnexpectedEOF (and context.Canceled when the caller cancelled) and
// errors.As a *classify.Failure with the class.
//
// # Answers
//
// A successful answer carries the gateway's headers: X-Spillway-Model (the
// model that answered), X-Spillway-Attempts, X-Spillway-Route (for example
// "gpt-6-astra:capacity > gpt-6.1-sol:ok") and X-Spillway-Request-Id. When
// the driver gives up, the caller gets the answer a gateway would give: for
// quota, auth, bad_request, content_filter and context_length the
// upstream's own answer, so an SDK reports its usual typed error with the
// provider's status; otherwise the provider's error shape with a message
// naming the models tried, their classes and the time waited. Both carry
// x-should-retry: false.
//
// A request may carry X-Spillway-Min-Tier (heavy, medium, light),
// X-Spillway-No-Fallback: 1 and X-Spillway-Budget (a duration), as with the
// gateway; they override the transport's options for that request and are
// not sent upstream.
//
// Every attempt produces one events.Record with source "library". The
// record of an attempt whose stream the caller reads is written when the
// stream has been read to its end, broke or was closed, so callers must
// close response bodies (as with any http.Client); the pacer's concurrency
// slot is held until then too.
//
// For scripts, Transport.Call posts a JSON body and returns an *Answer (the
// bytes, the model that answered, the route) or an *Error. With the Park
// option, a call whose whole chain is at capacity returns at once with the
// time to come back instead of sleeping through a rung of the ladder, for
// job runners with other work to do meanwhile (the queue uses it).
package transport
