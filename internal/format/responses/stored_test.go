package responses

import "testing"

// A translated answer's id names its model, any model, and nothing else
// reads as one.
func TestSpilledIDs(t *testing.T) {
	for _, model := range []string{"claude-sonnet-5-5", "gemini-3.1-pro", "x", "anthropic/claude:beta", "a_b", "модель"} {
		id := SpilledID(model) + "0123456789abcdef01234567"
		got, ok := Spilled(id)
		if !ok || got != model {
			t.Errorf("%q → %q: %q %v", model, id, got, ok)
		}
		for _, c := range id {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '~') {
				t.Errorf("%q: the id %q holds %q", model, id, c)
			}
		}
	}
	for id, want := range map[string]string{"resp_spw_": "", "resp_spw_x": "", "resp_spw_~%%_abc": "", "resp_spw_~AAE_abc": "", "resp_spw_a/b_abc": ""} {
		if got, ok := Spilled(id); !ok || got != want {
			t.Errorf("%q: %q %v, want a translated answer's id naming no model", id, got, ok)
		}
	}
	for _, id := range []string{"", "resp_abc", "resp_spillway_abc", "RESP_SPW_x_1"} {
		if _, ok := Spilled(id); ok {
			t.Errorf("%q read as a translated answer's id", id)
		}
	}
}
