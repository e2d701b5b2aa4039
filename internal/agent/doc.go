// Package agent is `spillway exec`: it runs a CLI agent (Codex CLI, Claude
// Code, Gemini CLI, or any command), passing its input and output through
// live, reads what it printed with the classifier, and lets the one driver
// (policy.Engine.Run, each attempt one run of the agent) decide: rerun at
// once on the next model of the chain (capacity),
// climb the long-wait ladder once every model is full, wait what a rate
// limit asks, retry a network failure on the same model, stop at once on
// auth or quota, and otherwise leave the agent's own exit code untouched.
//
// With Resume, a rerun continues the agent's session instead of starting
// over (codex exec resume <id>, claude --resume <id>), so the context built
// so far survives the model switch.
package agent
