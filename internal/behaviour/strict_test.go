package behaviour_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/classify"
)

// strictCase is a request the providers refuse (testdata/strict): the
// simulator refuses it as they do, with the provider's own 400.
type strictCase struct {
	Note  string         `json:"note"`
	Path  string         `json:"path"`
	Model string         `json:"model"`
	Want  string         `json:"want"`
	Body  map[string]any `json:"body"`
}

// strictRows: each malformed request of the corpus, whole and streamed,
// gets the provider's 400, passed through once as bad_request: one attempt,
// no other model tried, the provider's words in the body.
func strictRows() []row {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "strict", "*.json"))
	var rows []row
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		var c strictCase
		if err := json.Unmarshal(b, &c); err != nil {
			panic(fmt.Sprintf("%s: %v", f, err))
		}
		for _, stream := range []bool{false, true} {
			body := map[string]any{}
			for k, v := range c.Body {
				body[k] = v
			}
			path := c.Path
			var base call
			switch {
			case strings.HasPrefix(path, "/v1beta/"):
				base = gemini(c.Model, "", stream)
				path = base.Path
			case strings.HasPrefix(path, "/v1/messages"):
				base = messages(c.Model, "", stream)
				body["stream"] = stream
			default:
				base = chat(c.Model, "", stream)
				body["stream"] = stream
			}
			js, _ := json.Marshal(body)
			base.Path, base.Body = path, string(js)
			name, model := strings.TrimSuffix(filepath.Base(f), ".json"), c.Model
			said, _ := json.Marshal(c.Want) // as the answer's JSON writes it
			inBody := strings.Trim(string(said), `"`)
			rows = append(rows, row{
				name: fmt.Sprintf("refused as the provider does: %s (%s), stream=%v", name, c.Note, stream),
				call: base,
				want: want{status: 400, class: classify.BadRequest, route: model + ":bad_request", attempts: 1, body: []string{inBody},
					check: func(t *testing.T, w *world, _ result) {
						for m, st := range w.sim.Snapshot().Models {
							if m != model && st.Received > 0 {
								t.Fatalf("%s was tried too: a malformed request is the client's to fix", m)
							}
						}
						if n := w.received(model); n != 1 {
							t.Fatalf("%s received it %d times, want once", model, n)
						}
					}},
			})
		}
	}
	if len(rows) == 0 {
		panic("no testdata/strict corpus")
	}
	return rows
}
