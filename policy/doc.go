// Package policy is spillway's one policy engine and its one driver. Every
// front end (the gateway, the Go library, spillway exec, the queue) hands a
// request to Engine.Run with a Send that sends one attempt; Run does
// everything else, the same way for all of them (docs/ARCHITECTURE.md
// follows one request through it):
//
//   - the plan: which candidate next, from the failure's class (a
//     classify.Verdict), the attempts so far and the tier chain;
//   - every wait, on the injected Clock and charged to the request's budget:
//     backoff, Retry-After, the pacer's slot and turn, the long-wait ladder
//     (or, for a parked request, no wait: Outcome.ParkUntil);
//   - pacing (a jittered gap between starts and a concurrency limit per
//     candidate, slowed per key by rate limits, adapting to the room a pool
//     shows) and breaker permission;
//   - the watchdogs of an HTTP attempt: no headers, no first output, a
//     silence after output (zero turns one off);
//   - the evidence: the breaker hears of success at the first real output,
//     and of a stream that breaks after it as a failure of its own;
//   - one event record per attempt that reached the upstream.
//
// The rules of the plan:
//
//   - capacity: switch to the next model of the chain at once, never below
//     the request's minimum tier; once the chain is exhausted, back off
//     (exponential, full jitter, Retry-After as a floor) and walk it again,
//     within the request's wait budget, or climb the ladder (exec, queue).
//     The breaker counts it.
//   - rate_limit: wait what the provider said (or back off) on the same model
//     and slow the pacer for that key; switch only when the wait would exceed
//     the budget.
//   - quota, auth, bad_request, content_filter, unknown: fail at once
//     (FailFast); front ends pass the upstream's own answer on. Auth from
//     spillway's own credentials (a key of its own, a cloud's) is the
//     exception: no step sent with those credentials is tried again, and
//     a step with other credentials (the model in another region or cloud)
//     may answer; with none left the request fails at once.
//   - model_not_found: skip the model.
//   - context_length: the next model with a larger context window, else fail.
//   - server_error: one short retry on the same model, then as capacity.
//   - network, timeout: fixed short retries on the same model; never a model
//     switch for them.
//
// A candidate is a model at one of its deployments (config's deployments:,
// or the one provider of a model without them). A model's deployments come
// one after the other in the chain: a full one spills to the next before the
// chain steps down a tier, and a request starts at the healthy one with the
// fewest in flight for its weight (smooth weighted round robin breaks ties).
//
// Per-candidate circuit breakers open after repeated capacity answers, cool
// down, let a single probe through and close on its success; a plan starts
// at the first candidate whose breaker is not open, so while the heavy model
// is open new requests start at medium. A breaker refusal and a pacing slot
// that does not come free within the budget are local refusals: shown in
// the route (breaker_open, no_slot), never logged or counted as attempts.
// So are the steps a request can never take, passed over for the rest of
// it: another vendor's it cannot be translated for (untranslatable), a
// cross-vendor step without a key of its own, and, for a keyless request
// (Request.Keyless: a cloud client's, sent with each provider's own
// credentials), a step whose provider has none (no_key).
//
// Time and randomness are injected (WithClock, WithRand); package
// policytest has a fake clock, so no test sleeps for real.
package policy
