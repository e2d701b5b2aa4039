// Package gateway is `spillway serve`: a local OpenAI- and
// Anthropic-compatible proxy. Clients (Codex CLI, Claude Code, the SDKs)
// point their base URL at it. Every request walks a policy.Plan: each
// attempt is paced, checked against its model's breaker, sent upstream,
// classified, and the plan decides the next step (another model of the tier
// chain, the same model after a wait, or a clear failure).
//
// Streams pass through unbuffered once real output has started. Until then
// the gateway holds the opening events (response.created, message_start, a
// role-only chunk), so that a capacity failure there is retried on the next
// model without the client seeing it. A stream that breaks after output
// started never looks like success: the client gets the protocol's own error
// event. Every attempt is written to the event log; Prometheus metrics,
// /healthz and /spillway/status show what is happening.
package gateway
