package config

import "time"

// Default returns the built-in configuration. The models are the catalogs of
// Codex CLI 0.169 (`codex debug models`) and Claude Code 2.1; the simulator
// serves them all out of the box.
func Default() *Config {
	d := func(t time.Duration) Duration { return Duration(t) }
	return &Config{
		Listen: "127.0.0.1:8787",
		Providers: map[string]Provider{
			"openai":    {Type: "openai", BaseURL: "https://api.openai.com/v1", APIKey: Secret{Ref: "env:OPENAI_API_KEY"}, Auth: AuthPassthrough},
			"anthropic": {Type: "anthropic", BaseURL: "https://api.anthropic.com", APIKey: Secret{Ref: "env:ANTHROPIC_API_KEY"}, Auth: AuthPassthrough},
			"gemini":    {Type: "gemini", BaseURL: "https://generativelanguage.googleapis.com", APIKey: Secret{Ref: "env:GEMINI_API_KEY"}, Auth: AuthPassthrough},
			// a ChatGPT plan's Codex backend: the caller's own sign-in,
			// passed through (see IsSignIn)
			ChatGPT: {Type: "openai", BaseURL: "https://chatgpt.com/backend-api/codex", Auth: AuthPassthrough},
			// Gemini CLI signed in with Google: the Code Assist API
			CodeAssist: {Type: "gemini", BaseURL: "https://cloudcode-pa.googleapis.com", Auth: AuthPassthrough},
		},
		Models: defaultModels(),
		Chains: map[string][]string{
			"codex":  {"gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"},
			"claude": {"claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"},
			"gemini": {"gemini-3-pro", "gemini-3-flash", "gemini-3-flash-lite"},
		},
		Pacing: Pacing{MinGap: d(500 * time.Millisecond), Jitter: d(1500 * time.Millisecond), MaxConcurrency: 3, When: PaceAuto, Relax: d(time.Minute)},
		Retry: Retry{Ladder: []Duration{d(30 * time.Second), d(2 * time.Minute), d(10 * time.Minute), d(30 * time.Minute)}, NetworkRetries: 3, NetworkGap: d(2 * time.Second),
			RateLimitRetries: 2, TimeoutRetries: 0, Budget: d(45 * time.Second), BackoffBase: d(time.Second), BackoffMax: d(20 * time.Second)},
		Breaker: Breaker{Failures: 5, Window: d(60 * time.Second), Consecutive: 2, Cooldown: d(5 * time.Second), MaxCooldown: d(5 * time.Second)},
		State:   "memory",
		Queue:   Queue{DB: "sqlite", Concurrency: 2, GapMin: d(500 * time.Millisecond), GapMax: d(2 * time.Second)},
		Events:  Events{MaxSizeMB: 50, Keep: 5},
		Gateway: Gateway{MaxBodyMB: 32, MaxInflightMB: 256,
			ReadTimeout: Duration(60 * time.Second), KeepaliveTimeout: Duration(120 * time.Second),
			MaxConnections: 1024},
		Timeouts: Timeouts{Header: d(30 * time.Second), Request: d(10 * time.Minute), Idle: d(120 * time.Second)},
		Catalog:  CatalogBuiltin,
	}
}

func defaultModels() map[string]Model {
	return map[string]Model{
		// Codex CLI 0.169 catalog (`codex debug models`, listed models). Tiers
		// follow the catalog's descriptions: astra "frontier", sol
		// "workhorse", terra "balanced", luna "fast and affordable".
		"gpt-6-astra":   {Provider: "openai", Tier: Heavy, Context: 272000},
		"gpt-6.1-sol":   {Provider: "openai", Tier: Medium, Context: 272000},
		"gpt-6.1-terra": {Provider: "openai", Tier: Medium, Context: 500000},
		"gpt-6-sol":     {Provider: "openai", Tier: Medium, Context: 272000},
		"gpt-6-luna":    {Provider: "openai", Tier: Light, Context: 272000},
		"gpt-5.6-sol":   {Provider: "openai", Tier: Medium, Context: 272000},
		"gpt-5.6-terra": {Provider: "openai", Tier: Medium, Context: 272000},
		"gpt-5.6-luna":  {Provider: "openai", Tier: Light, Context: 272000},
		"gpt-5.5":       {Provider: "openai", Tier: Medium, Context: 272000},
		// Claude Code 2.1
		"claude-opus-5-5":   {Provider: "anthropic", Tier: Heavy, Context: 200000},
		"claude-sonnet-5-5": {Provider: "anthropic", Tier: Medium, Context: 200000},
		"claude-haiku-5-5":  {Provider: "anthropic", Tier: Light, Context: 200000},
		// Gemini CLI
		"gemini-3-pro":        {Provider: "gemini", Tier: Heavy, Context: 1048576},
		"gemini-3-flash":      {Provider: "gemini", Tier: Medium, Context: 1048576},
		"gemini-3-flash-lite": {Provider: "gemini", Tier: Light, Context: 1048576},
	}
}
