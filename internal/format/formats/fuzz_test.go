package formats

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

var (
	clientKinds = []wire.Kind{wire.Responses, wire.Chat, wire.Messages, wire.GenerateContent, wire.StreamGenerateContent}
	targets     = []wire.Format{wire.OpenAI, wire.Anthropic, wire.Gemini}
)

// FuzzRequest: any request of any client kind, to any other vendor: no
// panic; a translation is one JSON object; call ids map one to one (no two
// of the client's become one), and a result paired with its call in the
// client's request is paired in the target's.
func FuzzRequest(f *testing.F) {
	// the real agents' shapes, cut to a size a fuzzer mutates quickly
	// (the whole recordings are TestNamedFailures' and the gateway's)
	f.Add(uint8(0), uint8(1), `{"model":"gpt-6-astra","stream":true,"input":[{"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec","description":"exec_command","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}]},{"type":"namespace","name":"clock","tools":[{"type":"function","name":"sleep","parameters":{"type":"object"}}]}]},{"type":"message","role":"developer","content":[{"type":"input_text","text":"be Codex"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]},{"type":"reasoning","encrypted_content":"gAAA"},{"type":"custom_tool_call","call_id":"call_0","name":"exec","input":"text(1)"},{"type":"custom_tool_call_output","call_id":"call_0","output":[{"type":"input_text","text":"1"}]}],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"low"},"store":false,"include":["reasoning.encrypted_content"]}`)
	f.Add(uint8(2), uint8(0), `{"model":"claude-opus-5-5","max_tokens":128000,"stream":true,"thinking":{"type":"adaptive"},"system":[{"type":"text","text":"x-anthropic-billing-header: v"},{"type":"text","text":"You are Claude Code","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"run"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a"}]}],"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],"output_config":{"effort":"medium"}}`)
	f.Add(uint8(4), uint8(1), `{"contents":[{"role":"user","parts":[{"text":"run"}]},{"role":"model","parts":[{"functionCall":{"id":"g1","name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"sig"}]},{"role":"user","parts":[{"functionResponse":{"id":"g1","name":"run_shell_command","response":{"output":"a"}}}]}],"systemInstruction":{"parts":[{"text":"be Gemini"}],"role":"user"},"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object"}}]}],"generationConfig":{"temperature":1,"topP":0.95,"topK":64,"thinkingConfig":{"includeThoughts":true}}}`)
	f.Add(uint8(1), uint8(1), `{"model":"x","messages":[{"role":"assistant","tool_calls":[{"id":"a/b","function":{"name":"f.g","arguments":"{"}},{"id":"a:b","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a/b","content":"x"},{"role":"tool","tool_call_id":"a:b","content":[{"type":"text","text":"y"}]}]}`)
	f.Add(uint8(2), uint8(2), `{"model":"x","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"image","source":{"type":"url","url":"http://x"}}]}]}]}`)
	f.Add(uint8(3), uint8(0), `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"a","args":{"x":1}}},{"functionCall":{"name":"a"}}]},{"parts":[{"functionResponse":{"name":"a","response":{"error":"no"}}}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":9000}}}`)
	f.Add(uint8(0), uint8(2), `{"input":[{"type":"function_call","call_id":"","name":""},{"type":"function_call_output","output":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]}],"reasoning":{"effort":"high"},"text":{"format":{"type":"json_schema","schema":7}}}`)
	f.Fuzz(func(t *testing.T, k, to uint8, body string) {
		client := ep(clientKinds[int(k)%len(clientKinds)])
		target := targets[int(to)%len(targets)]
		if target == client.Format {
			target = targets[(int(to)+1)%len(targets)]
		}
		p := Parse(client, []byte(body))
		if p.Check(target, all) != nil {
			return
		}
		tr, err := newTurn(client, []byte(body), target, all, "m", "m")
		if err != nil {
			t.Fatalf("read it, but could not write it: %v", err)
		}
		r := tr.Req
		var out map[string]any
		if err := json.Unmarshal(tr.Body, &out); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, tr.Body)
		}
		in := map[string]bool{}
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if (p.Kind == format.Call || p.Kind == format.Result) && p.ID != "" {
					in[p.ID] = true
				}
			}
		}
		if len(tr.CallIDs()) != len(in) {
			t.Fatalf("%d call ids became %d: two of the client's became one", len(in), len(tr.CallIDs()))
		}
		for out, id := range tr.CallIDs() {
			if !in[id] || (format.ValidID(id) && out != id) {
				t.Fatalf("id %q went as %q", id, out)
			}
		}
	})
}

// FuzzStream: any stream of the target's events, to any client: no panic,
// and what the client gets is events of JSON (or [DONE]), never a frame
// that does not parse.
func FuzzStream(f *testing.F) {
	f.Add(uint8(0), uint8(1), "event: message_start\ndata: {\"message\":{\"id\":\"m\"}}\n\nevent: content_block_start\ndata: {\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\"}}\n\nevent: content_block_delta\ndata: {\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\nevent: message_delta\ndata: {\"delta\":{\"stop_reason\":\"tool_use\"}}\n\nevent: message_stop\ndata: {}\n\n")
	f.Add(uint8(2), uint8(0), "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	f.Add(uint8(3), uint8(2), "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"},{\"functionCall\":{\"name\":\"g\",\"args\":{}}}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":3}}\n\n")
	f.Fuzz(func(t *testing.T, k, from uint8, stream string) {
		client := ep(clientKinds[int(k)%len(clientKinds)])
		target := targets[int(from)%len(targets)]
		if target == client.Format {
			target = targets[(int(from)+1)%len(targets)]
		}
		tr, err := newTurn(client, []byte(`{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"input":"hi","contents":[{"parts":[{"text":"hi"}]}]}`), target, all, "m", "m")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := feed(t, tr, stream, true)
		out := []byte(got)
		rd := sse.NewReader(strings.NewReader(string(out)))
		for {
			e, err := rd.Next()
			if err != nil {
				break
			}
			if !e.Comment && string(e.Data) != "[DONE]" && !json.Valid(e.Data) {
				t.Fatalf("the client got a frame that does not parse: %q", e.Data)
			}
		}
	})
}
