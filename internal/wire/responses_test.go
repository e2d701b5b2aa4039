package wire

import (
	"testing"
)

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

// ParseBody takes a Responses request's previous_response_id, and no
// other endpoint's.
func TestParseBodyTakesThePreviousResponse(t *testing.T) {
	for _, c := range []struct {
		ep   Endpoint
		body string
		want string
	}{
		{EndpointOf(Responses), `{"model":"m","previous_response_id":"resp_spw_x_1","input":"hi"}`, "resp_spw_x_1"},
		{EndpointOf(Responses), `{"model":"m","previous_response_id":null}`, ""},
		{EndpointOf(Responses), `{"model":"m","previous_response_id":7}`, ""},
		{EndpointOf(Responses), `{"previous_response_id":"a","previous_response_id":"b","model":"m"}`, "b"},
		{EndpointOf(Chat), `{"model":"m","previous_response_id":"resp_spw_x_1"}`, ""},
	} {
		b, err := ParseBody(c.ep, []byte(c.body))
		if err != nil || b.Previous != c.want {
			t.Errorf("%s: %v %q, want %q", c.body, err, b.Previous, c.want)
		}
	}
}
