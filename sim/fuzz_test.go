package sim_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
	"github.com/spillway/spillway/sim"
)

// FuzzHandlers sends arbitrary bodies to every endpoint: the simulator must
// answer like a provider (a status it documents), never crash.
func FuzzHandlers(f *testing.F) {
	srv, err := sim.New(sim.Options{TokenRate: 0})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	paths := []string{"/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/messages?beta=true",
		"/v1beta/models/gemini-3-pro:generateContent", "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse",
		"/v1beta/models/x", "/_sim/faults", "/_sim/script"}
	// every request meets a script, so the tool paths are fuzzed too
	base := sim.Script{Turns: []sim.ScriptTurn{{Call: sim.ScriptCalls{{Tool: "shell", Arguments: map[string]any{"command": "ls"}}, {Tool: "get_weather"}}}, {Text: "said {result}"}}}
	f.Add(uint8(0), `{"model":"gpt-6-luna","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	f.Add(uint8(1), `{"model":"gpt-6-luna","input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`)
	f.Add(uint8(2), `{"model":"gpt-6-luna","input":[null,1,"x"],"dimensions":1e99}`)
	f.Add(uint8(3), `{"model":"claude-haiku-5-5","messages":[{"role":"user","content":[null,{"text":[]}]}],"stream":"yes"}`)
	f.Add(uint8(4), `{"contents":[{"parts":"x"}]}`)
	f.Add(uint8(7), `{"fault":"capacity","count":-5}`)
	f.Add(uint8(0), `{"model":"gpt-6-luna","tools":[{"type":"function","function":{"name":"shell","parameters":{"properties":{"command":{"type":"array"}}}}},{"type":"function","function":{"name":"get_weather"}}],"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"shell","arguments":"{"}}]},{"role":"tool","tool_call_id":"a","content":[1]}]}`)
	f.Add(uint8(1), `{"model":"gpt-6-luna","stream":true,"input":[{"type":"additional_tools","tools":[{"type":"namespace","tools":[{"type":"custom","name":"exec","description":"exec_command"},{"type":"function","name":"get_weather"}]}]},{"type":"custom_tool_call","call_id":"c","name":"exec"},{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_text","text":"ok"}]}]}`)
	f.Add(uint8(3), `{"model":"claude-haiku-5-5","max_tokens":1,"stream":true,"thinking":{"type":"adaptive"},"tools":[{"name":"Bash","input_schema":{"properties":{"command":{}}}},{"name":"get_weather"}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking"},{"type":"tool_use","id":"t","name":"Bash"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":{"a":1}}]}]}`)
	f.Add(uint8(5), `{"tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"get_weather"}]}],"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":[]}}]},{"role":"user","parts":[{"functionResponse":{"response":"x"}}]}]}`)
	f.Add(uint8(8), `{"turns":[{"call":[{"tool":"shell","arguments":{"command":7}}]}],"count":-3}`)
	if err := srv.AddScript(base); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		path := paths[int(which)%len(paths)]
		if path == "/_sim/faults" && strings.Contains(body, "stall") {
			return // a stall waits for the client by design
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("x-api-key", "k")
		req.Header.Set("x-goog-api-key", "k")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 201, 400, 401, 404, 413, 429, 500, 503, 529:
		default:
			t.Fatalf("%s %q: status %d", path, body, rec.Code)
		}
		srv.ClearFaults("")
		srv.ClearScripts("")
		if err := srv.AddScript(base); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFuzzSeedsAnswerSensibly(t *testing.T) {
	srv, _ := sim.New(sim.Options{TokenRate: 0})
	req := httptest.NewRequest("POST", "/v1beta/models/nocolon", strings.NewReader("{}"))
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "generateContent") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}

// FuzzParseScenario reads arbitrary scenario files: a scenario that valid
// checks clean, or every problem said at a place of the file (a
// *config.Error), never a crash.
func FuzzParseScenario(f *testing.F) {
	for _, name := range []string{"../testdata/sim/weekday.yaml", "../testdata/sim/every_mistake.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("tiers: {heavy: [1]}\noutages: [{for: x}]\n---\nnoise: 1\n"))
	f.Add([]byte("models: {a: {pool: 1.5}}\nnetwork: {reset: -1, stall_for: 1h}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := sim.ParseScenario("f.yaml", data)
		if err == nil {
			if s == nil || s.Validate() != nil {
				t.Fatalf("a scenario that does not check: %+v", s)
			}
			return
		}
		var ce *config.Error
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Fatalf("unexpected error %T: %v", err, err)
		}
		for _, p := range ce.Problems {
			if !strings.HasPrefix(p.String(), "f.yaml") {
				t.Fatalf("a problem not at the file: %q", p)
			}
		}
	})
}
