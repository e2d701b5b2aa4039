package behaviour_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/internal/behaviour"
	"github.com/spillway/spillway/sim"
)

// crossRows: every model of the client's own vendor full, the chain's
// overflow of another vendor answers, translated both ways, each kind of
// request whole and streamed, in every front end that translates: the
// client gets the other model's answer in its own format, the route names
// the vendor, the record says what it was translated from, and the
// provider got its own key.
func crossRows() []row {
	keyed := func(rules map[string]config.ChainRules) func(*config.Config) {
		return func(c *config.Config) {
			for name, k := range map[string]string{"openai": "sk-own-openai-0123456789", "anthropic": "sk-ant-own-0123456789", "gemini": "AIza-own-0123456789"} {
				p := c.Providers[name]
				p.APIKey = config.Secret{Value: k}
				c.Providers[name] = p
			}
			c.ChainRules = rules
		}
	}
	full := func(models ...string) []sim.Fault {
		var out []sim.Fault
		for _, m := range models {
			out = append(out, sim.Fault{Model: m, Kind: "capacity", Count: -1})
		}
		return out
	}
	openaiFull := full("gpt-6.1-sol", "gpt-6-luna")
	claudeFull := full("claude-sonnet-5-5", "claude-haiku-5-5")
	geminiFull := full("gemini-3-flash", "gemini-3-flash-lite")
	toClaude := keyed(map[string]config.ChainRules{"codex": {Overflow: "claude"}, "gemini": {Overflow: "claude"}})
	toCodex := keyed(map[string]config.ChainRules{"claude": {Overflow: "codex"}})
	cases := []struct {
		name           string
		c              call
		cfg            func(*config.Config)
		faults         []sim.Fault
		route, from    string
		answer, vendor string
	}{
		{"chat → messages", chat("gpt-6.1-sol", "hi", false), toClaude, openaiFull, "gpt-6.1-sol:capacity > gpt-6-luna:capacity", "chat", "claude-sonnet-5-5", "anthropic"},
		{"chat stream → messages", chat("gpt-6.1-sol", "hi", true), toClaude, openaiFull, "gpt-6.1-sol:capacity > gpt-6-luna:capacity", "chat", "claude-sonnet-5-5", "anthropic"},
		{"responses → messages", responses("gpt-6.1-sol", "hi", false), toClaude, openaiFull, "gpt-6.1-sol:capacity > gpt-6-luna:capacity", "responses", "claude-sonnet-5-5", "anthropic"},
		{"responses stream → messages", responses("gpt-6.1-sol", "hi", true), toClaude, openaiFull, "gpt-6.1-sol:capacity > gpt-6-luna:capacity", "responses", "claude-sonnet-5-5", "anthropic"},
		{"messages → chat", messages("claude-sonnet-5-5", "hi", false), toCodex, claudeFull, "claude-sonnet-5-5:capacity > claude-haiku-5-5:capacity", "messages", "gpt-6.1-sol", "openai"},
		{"messages stream → chat", messages("claude-sonnet-5-5", "hi", true), toCodex, claudeFull, "claude-sonnet-5-5:capacity > claude-haiku-5-5:capacity", "messages", "gpt-6.1-sol", "openai"},
		{"gemini → messages", behaviour.Gemini("gemini-3-flash", "hi", false), toClaude, geminiFull, "gemini-3-flash:capacity > gemini-3-flash-lite:capacity", "generateContent", "claude-sonnet-5-5", "anthropic"},
		{"gemini stream → messages", behaviour.Gemini("gemini-3-flash", "hi", true), toClaude, geminiFull, "gemini-3-flash:capacity > gemini-3-flash-lite:capacity", "streamGenerateContent", "claude-sonnet-5-5", "anthropic"},
	}
	var rows []row
	for _, c := range cases {
		c := c
		rows = append(rows, row{
			name: "across vendors: " + c.name, cfg: c.cfg, faults: c.faults, call: c.c,
			want: want{status: 200, model: c.answer, route: c.route + " > " + c.answer + "[" + c.vendor + "]:ok",
				logRoute: c.route + " > " + c.answer + ":ok", attempts: 3, text: sim.Answer(c.answer, "hi", 16),
				notBody: []string{"overloaded", `"error":{`, "thinking", "signature"},
				check: func(t *testing.T, w *world, _ result) {
					recs := w.records()
					last := recs[len(recs)-1]
					if last.Model != c.answer || last.TranslatedFrom != c.from {
						t.Fatalf("the answer's record %+v: translated_from %q, want %q", last, last.TranslatedFrom, c.from)
					}
					st := w.sim.Snapshot().Models[c.answer]
					own := sim.Fingerprint(map[string]string{"anthropic": "sk-ant-own-0123456789", "openai": "sk-own-openai-0123456789"}[c.vendor], "")
					if st == nil || st.Credentials[own] != 1 || len(st.Credentials) != 1 {
						t.Fatalf("%s got credentials %+v, want its provider's own key only", c.answer, st)
					}
					if strings.Contains(c.name, "stream") && !last.Stream {
						t.Fatalf("a stream's record says it was not one: %+v", last)
					}
				}},
		})
	}
	return rows
}
