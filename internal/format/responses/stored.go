package responses

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// SpilledPrefix starts the id of every Responses answer another vendor's
// model gave (a translated answer): OpenAI never stored it, so a later
// request cannot continue it by previous_response_id (NotStored).
const SpilledPrefix = "resp_spw_"

// spilledModel is a model name an id carries as it is; any other is
// carried base64url-encoded after a '~'.
var spilledModel = regexp.MustCompile(`^[A-Za-z0-9.-]{1,64}$`)

// SpilledID is the prefix of the id of a translated Responses answer of
// model: resp_spw_<model>_, to which the answer's random part is added (a
// model name of other characters than letters, digits, '.' and '-', or
// longer than 64, is carried as '~' and its base64url encoding). So the id
// says which model answered, with no table to keep: a later request naming
// it is answered the same by any gateway or library, after a restart too.
func SpilledID(model string) string {
	if !spilledModel.MatchString(model) {
		model = "~" + base64.RawURLEncoding.EncodeToString([]byte(model))
	}
	return SpilledPrefix + model + "_"
}

// Spilled reports whether id is a translated answer's (SpilledID), and
// the model that answered it ("" when the id does not say).
func Spilled(id string) (model string, ok bool) {
	rest, ok := strings.CutPrefix(id, SpilledPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i < 0 {
		return "", true
	}
	model = rest[:i]
	if enc, ok := strings.CutPrefix(model, "~"); ok {
		b, err := base64.RawURLEncoding.DecodeString(enc)
		if err != nil || !printable(string(b)) {
			return "", true
		}
		return string(b), true
	}
	if !spilledModel.MatchString(model) {
		return "", true
	}
	return model, true
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return s != ""
}

// NotStored is the answer to a Responses request whose
// previous_response_id names a translated answer (Spilled): OpenAI's 400
// for an id it does not have (previous_response_not_found), saying which
// model answered it and that it was stored nowhere. Nothing is sent
// upstream: OpenAI has never seen the id.
func NotStored(id, model string) (int, []byte) {
	who := "another vendor's model"
	if model != "" {
		who = model + ", another vendor's model,"
	}
	msg := fmt.Sprintf("spillway: previous response %s was answered by %s through spillway, and stored nowhere; send the conversation whole instead (its earlier input and output items, as with store: false); nothing was sent upstream", id, who)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}})
	return http.StatusBadRequest, b
}
