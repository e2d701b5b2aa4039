// Package sim is spillway's simulated provider: an HTTP server that speaks the
// OpenAI (Chat Completions, Responses, models, embeddings), Anthropic
// (Messages) and Gemini (generateContent, streamGenerateContent) wire formats
// closely enough that the real Codex CLI, Claude Code and the official SDKs
// accept it, and that runs out of capacity the way real pools do.
//
// Capacity model: each model has a pool of slots. A request takes slots in
// proportion to its input size (fat requests need more, so they are the first
// refused when the pool is nearly full). A background load, following a
// day/week curve on the simulator's clock (weekday 10:00–16:00 peak, quiet
// nights and weekends) with seeded per-minute noise, occupies part of each
// pool. A request that does not fit gets that provider's real capacity error
// in the place the provider puts it: OpenAI HTTP 503 server_is_overloaded, or
// response.failed right after response.created on a Responses stream;
// Anthropic 529 overloaded_error or an event: error; Gemini 503 UNAVAILABLE.
// Per-key RPM/TPM limits answer 429 with honest retry-after and rate-limit
// headers; scenario keys can be out of quota or invalid.
//
// The clouds: Amazon Bedrock's InvokeModel (bedrock.go: the Messages body
// in Bedrock's envelope, answers whole or as an AWS event stream, errors
// with x-amzn-errortype and exception frames, SigV4 signatures verified
// with the SDK's signer, sigv4.go) and Google Vertex AI (vertex.go:
// rawPredict and generateContent, Google's errors, bearer tokens its own
// token endpoint granted for a service account it made, gtoken.go), each
// model from pools of its own (bedrock/MODEL, vertex/MODEL; clouds.go), a
// region's (Options.Regions, Scenario.Regions) where the path names one.
//
// Faults can be injected on demand through the control API (POST
// /_sim/faults), and GET /_sim/stats counts everything per model; tests
// assert on both. Answers are deterministic (see Answer), so a test can check
// the exact text a client printed and which model produced it.
//
// Tools: a script (POST /_sim/script, see Script) answers a conversation
// turn by turn with tool calls in the request's own wire format, whole or
// streamed, and then with text quoting the results, so the real agents run
// real tool loops against it. Every request is read as a conversation
// (convo) and checked as strictly as its provider checks it: what the
// provider refuses (a Messages request without max_tokens, a tool result
// with no call, a call left without a result, roles out of order, the
// thinking rule, a call of an undeclared tool) gets the provider's own 400.
//
// The simulator reads and writes every wire format on its own, on purpose: it
// never imports spillway's formats (internal/format and its folders), so it
// is an independent oracle. A translation or a frame rule that is wrong in
// spillway is caught by the simulator refusing what spillway sends, or by a
// client refusing what spillway relays, instead of being agreed with by a
// copy of the same code.
//
// The clock is injectable: real time, or fast:X to replay a simulated week of
// diurnal load in minutes.
package sim
