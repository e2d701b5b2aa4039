// Package gateway is `spillway serve`: a local OpenAI- and
// Anthropic-compatible proxy. Clients (Codex CLI, Claude Code, the SDKs)
// point their base URL at it. Each request goes to the one driver
// (policy.Engine.Run) with a send that builds the request for the
// candidate's provider (its base URL, its model, its key when the provider
// says auth: key) and answers the client once the attempt may: a whole
// answer at once, a stream from its first real output on, its opening
// events held until then (package upstream), so that a capacity failure
// before output is retried on the next model without the client seeing it.
// A stream that breaks after output started never looks like success: the
// client gets the protocol's own error event. When the driver gives up, the
// client gets its provider's error shape naming what was tried, or, for a
// class no retry can fix, the upstream's own answer.
//
// Every attempt is written to the event log; Prometheus metrics, /healthz
// and /spillway/status show what is happening.
package gateway
