// Package simtest starts the simulator for a test and points a
// configuration at it: the setup the gateway, doctor, fleet, report and
// exec tests share.
package simtest

import (
	"net/http/httptest"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// Start runs the simulator (calm scenario, seed 1, no token delay, with
// keys) on loopback until t ends, and returns it and its URL.
func Start(t testing.TB, keys map[string]sim.Key) (*sim.Server, string) {
	t.Helper()
	scn, _ := sim.Builtin("calm")
	scn.Keys = keys
	srv, err := sim.New(sim.Options{Scenario: scn, Seed: 1, TokenRate: 0})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return srv, hs.URL
}

// Config is the default configuration with every provider at base (the
// OpenAI one at base/v1 and the ChatGPT plan's at base/backend-api/codex,
// as the simulator serves them).
func Config(base string) *config.Config {
	cfg := config.Default()
	for name, p := range cfg.Providers {
		p.BaseURL = base
		switch name {
		case "openai":
			p.BaseURL = base + "/v1"
		case config.ChatGPT:
			p.BaseURL = base + "/backend-api/codex"
		}
		cfg.Providers[name] = p
	}
	return cfg
}

// ShellScript asks the client's shell tool for a command whose output
// ("spill-42") is not in its text, so only a command that ran can quote
// it, then answers "The command printed {result}": the tool loop the
// real-agent tests run.
func ShellScript() sim.Script {
	return sim.Script{Turns: []sim.ScriptTurn{
		{Call: sim.ScriptCalls{{Tool: "shell", Arguments: map[string]any{"command": "printf 'spill-%s\\n' 42"}}}},
		{Text: "The command printed {result}"},
	}}
}
