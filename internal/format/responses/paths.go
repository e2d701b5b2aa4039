package responses

import "github.com/spillway/spillway/internal/wire"

// ChatGPTPrefix is where the gateway serves a ChatGPT plan's Codex backend:
// Codex's provider base_url is http://HOST:PORT/backend-api/codex.
const ChatGPTPrefix = "/backend-api/codex"

// ChatGPT is the plan's Responses endpoint: the same wire format as the
// API's, sent only to the chatgpt provider (config.ChatGPT).
var ChatGPT = wire.Endpoint{Path: ChatGPTPrefix + "/responses", Format: wire.OpenAI, Kind: wire.Responses, Upstream: "/responses", Via: "chatgpt"}
