// Package classify answers the question everything in spillway starts from:
// what kind of failure is this?
//
// Its input is anything a failure can look like: an HTTP status with headers
// and a body (JSON or not), a Server-Sent Events error frame (OpenAI
// response.failed, Anthropic event: error, a Chat Completions chunk carrying an
// error), a Go transport error, or a line of text printed by Codex CLI, Claude
// Code or Gemini CLI, or found in a log. Its output is a Verdict: the class
// (one of Classes, whose names are a contract), a provider guess, whether
// retrying can help, a suggested wait taken from the provider's own hints,
// and a one-line human explanation with what to do.
//
// The two distinctions users most often get wrong are made with care: quota
// versus rate limit (both arrive as HTTP 429; codes, quota ids and wording tell
// them apart), and capacity versus network (a full model pool is an answer
// from the provider; a reset connection is not).
//
// Classify keeps no state, and reads the wall clock only when the caller
// passes no Input.Now (policy's engine always passes its own clock's), so the gateway, the library, the agent wrapper and the queue can all
// call it concurrently.
package classify
