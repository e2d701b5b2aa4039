// Package policy is spillway's one policy engine: given what a failure was
// (a classify.Verdict) and what has happened so far in a request, it decides
// the next step: send to the same model after a wait, switch to the next
// model of the tier chain, or fail with a reason. The gateway, the Go
// library, the agent wrapper and the queue all use it; none has a retry loop
// of its own.
//
// The rules (DESIGN.md's policy table):
//
//   - capacity: switch to the next model of the chain at once, never below the
//     request's minimum tier; once the chain is exhausted, back off
//     (exponential, full jitter, Retry-After as a floor) and walk it again,
//     within the request's wait budget. The breaker counts it.
//   - rate_limit: wait what the provider said (or back off) on the same model
//     and slow the pacer for that key; switch only when the wait would exceed
//     the budget.
//   - quota, auth, bad_request, content_filter, unknown: fail at once with the
//     upstream's error.
//   - model_not_found: skip the model.
//   - context_length: the next model with a larger context window, else fail.
//   - server_error: one short retry on the same model, then as capacity.
//   - network, timeout: fixed short retries on the same model; never a model
//     switch for them.
//
// Per-(provider, model) circuit breakers open after repeated capacity errors,
// cool down, let a single probe through and close on success; a plan starts
// at the first model whose breaker is not open, so while the heavy model is
// open new requests start at medium. The Pacer spaces request starts per
// model (minimum gap plus jitter) and limits concurrency.
//
// Time and randomness are injected (Clock, Rand) so tests never sleep.
package policy
