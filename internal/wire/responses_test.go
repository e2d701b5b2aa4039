package wire

import (
	"testing"
)

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
