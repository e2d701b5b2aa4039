package agentfiles

import "testing"

func TestContinueFirstChat(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       ContinueModel
		ok         bool
	}{
		{"no roles: every role", "models:\n  - {name: a, provider: openai, model: m1}\n", ContinueModel{"a", "m1"}, true},
		{"the first with chat", "models:\n  - {name: e, provider: openai, model: m0, roles: [embed]}\n  - {name: a, provider: openai, model: m1, roles: [edit, chat]}\n  - {name: b, provider: openai, model: m2}\n", ContinueModel{"a", "m1"}, true},
		{"empty roles: none", "models:\n  - {name: e, provider: openai, model: m0, roles: []}\n  - {name: b, provider: openai, model: m2}\n", ContinueModel{"b", "m2"}, true},
		{"roles: null is no chat role", "models:\n  - {name: e, provider: openai, model: m0, roles: null}\n  - {name: b, provider: openai, model: m2}\n", ContinueModel{"b", "m2"}, true},
		{"an empty entry is passed over", "models:\n  -\n  - {name: b, provider: openai, model: m2}\n", ContinueModel{"b", "m2"}, true},
		{"a hub block first: unknown", "models:\n  - uses: acme/model\n  - {name: a, provider: openai, model: m1}\n", ContinueModel{}, false},
		{"a hub block after: the first", "models:\n  - {name: a, provider: openai, model: m1}\n  - uses: acme/model\n", ContinueModel{"a", "m1"}, true},
		{"no chat model", "models:\n  - {name: a, provider: openai, model: m1, roles: [embed]}\n", ContinueModel{}, false},
		{"no models", "name: x\nversion: 1.0.0\n", ContinueModel{}, false},
		{"models not a list", "models: gpt\n", ContinueModel{}, false},
		{"not YAML", "models: [\n", ContinueModel{}, false},
	} {
		if got, ok := ContinueFirstChat([]byte(c.yaml)); got != c.want || ok != c.ok {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
