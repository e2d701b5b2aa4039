// Package transport is spillway as a Go library: an http.RoundTripper that
// gives any HTTP client, and so the official OpenAI and Anthropic SDKs, the
// gateway's behaviour without a gateway in between.
//
//	client := openai.NewClient(
//		option.WithHTTPClient(&http.Client{Transport: transport.New(cfg)}),
//		option.WithMaxRetries(0), // spillway retries; the SDK should not
//	)
//
// # What is managed
//
// A POST to an endpoint spillway knows (a URL path ending in /responses,
// /chat/completions or /embeddings for the OpenAI wire format, /messages for
// Anthropic's) whose JSON body names a "model" is managed; every other
// request goes to the base transport untouched. The body is read once and
// kept, so each attempt sends a fresh copy.
//
// A managed request walks a plan of the policy engine (package policy), the
// same engine the gateway uses; the transport has no retry rules of its own.
// For each attempt it waits what the plan says, takes its turn from the
// pacer, asks the model's breaker, replaces the body's "model" with the
// plan's candidate, and sends to the URL the caller used: the library never
// changes hosts, only the model. A non-2xx answer (its first MiB) or a
// transport error is classified (package classify) and the plan decides:
// the next model for capacity, the same model after Retry-After for a rate
// limit, the same model after a short gap for a network failure, and at once
// the caller's error for quota, auth and bad requests.
//
// # Streams
//
// An event stream is held, exactly like the gateway holds it, until its first
// real output: opening events (response.created, message_start, a role-only
// chunk) are kept back, so an error event, an early end or a silence longer
// than gateway.first_token_timeout can still be retried on the next model
// without the caller seeing anything. Once output starts the caller gets the
// held bytes and then the live stream, unchanged. After that point a broken
// stream is the caller's to see, as it would be without spillway.
//
// # Answers
//
// A successful answer carries the gateway's headers: X-Spillway-Model (the
// model that answered), X-Spillway-Attempts and X-Spillway-Route (for
// example "gpt-6-astra:capacity > gpt-6.1-sol:ok"). When the plan gives up,
// the caller gets the last upstream answer itself (status, headers, body),
// so an SDK reports its usual typed error with the provider's status; when
// the last failure was a transport error, RoundTrip returns an *Error, which
// unwraps to a *classify.Failure and to the transport error.
//
// A request may carry X-Spillway-Min-Tier (heavy, medium, light) and
// X-Spillway-No-Fallback: 1, as with the gateway; they override the
// transport's options for that request and are not sent upstream.
//
// Every attempt produces one events.Record with source "library". The
// record of the attempt that answered is written when its body has been read
// to the end or closed, so callers must close response bodies (as with any
// http.Client); the pacer's concurrency slot is held until then too.
//
// For scripts, Transport.Call posts a JSON body and returns the answer bytes
// or an *Error.
package transport
