package formats

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/format/gemini"
	"github.com/spillway/spillway/internal/format/messages"

	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/internal/wire"
)

var all = format.Takes{Tools: true, Images: true, Reasoning: true}

func ep(k wire.Kind) wire.Endpoint { return wire.EndpointOf(k) }

// translated is body (a request to client) as sent to a model of format
// to, decoded.
func translated(t *testing.T, client wire.Kind, to wire.Format, body string) (*format.Turn, map[string]any) {
	t.Helper()
	tr, err := newTurn(ep(client), []byte(body), to, all, "m", "m-up")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(tr.Body, &m); err != nil {
		t.Fatalf("the translation is not JSON: %v\n%s", err, tr.Body)
	}
	return tr, m
}

// The failures other gateways' bug lists name, each a case: what a
// translation must never do.
func TestNamedFailures(t *testing.T) {
	t.Run("thinking blocks and signatures never reach another vendor", func(t *testing.T) {
		body := `{"model":"claude-opus-5-5","max_tokens":1000,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[
			{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan","signature":"sig-abc"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]}],
			"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`
		for _, to := range []wire.Format{wire.OpenAI, wire.Gemini} {
			tr, _ := translated(t, wire.Messages, to, body)
			for _, bad := range []string{"secret plan", "sig-abc", "xyz", "thinking\":\"", "redacted"} {
				if strings.Contains(string(tr.Body), bad) {
					t.Errorf("%s: %q reached another vendor: %s", to, bad, tr.Body)
				}
			}
			if !strings.Contains(string(tr.Body), "Let me look.") || !strings.Contains(string(tr.Body), "a.txt") {
				t.Errorf("%s: the text or the tool result was lost: %s", to, tr.Body)
			}
		}
	})
	t.Run("thinking is off for a history with a tool call and no thinking block", func(t *testing.T) {
		body := `{"model":"gpt-6-astra","reasoning_effort":"high","messages":[{"role":"user","content":"hi"},
			{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"ok"}],"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}]}`
		_, m := translated(t, wire.Chat, wire.Anthropic, body)
		if m["thinking"] != nil {
			t.Fatalf("thinking on with a tool call and no thinking block before it (Messages refuses it): %v", m["thinking"])
		}
		_, m = translated(t, wire.Chat, wire.Anthropic, `{"model":"x","reasoning_effort":"high","messages":[{"role":"user","content":"hi"}]}`)
		th, _ := m["thinking"].(map[string]any)
		if th["type"] != "enabled" || format.IntOf(th["budget_tokens"]) != 16384 || format.IntOf(m["max_tokens"]) <= 16384 {
			t.Fatalf("high effort, no history: thinking %v, max_tokens %v", th, m["max_tokens"])
		}
	})
	t.Run("a call in Gemini's history carries no forged signature, and Gemini's own never leaves", func(t *testing.T) {
		body := `{"model":"x","max_tokens":100,"messages":[{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ls","input":{}},{"type":"tool_use","id":"toolu_2","name":"ls","input":{"a":1}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"one"},{"type":"tool_result","tool_use_id":"toolu_2","content":"two"}]}],"tools":[{"name":"ls","input_schema":{"type":"object"}}]}`
		tr, m := translated(t, wire.Messages, wire.Gemini, body)
		contents := format.Objs(m["contents"])
		if len(contents) != 3 {
			t.Fatalf("contents %s", tr.Body)
		}
		parts := format.Objs(contents[1]["parts"])
		if len(parts) != 2 || parts[0]["thoughtSignature"] != gemini.SkipSignature || parts[1]["thoughtSignature"] != nil {
			t.Fatalf("the model turn's calls: %v (the first call carries Gemini's documented no-signature value, once)", parts)
		}
		res := format.Objs(contents[2]["parts"])
		if len(res) != 2 || format.Str(format.Obj(res[0]["functionResponse"])["name"]) != "ls" || format.Str(format.Obj(res[1]["functionResponse"])["id"]) != "toolu_2" {
			t.Fatalf("the results: %v", res)
		}
		g := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"mm","thought":true},{"functionCall":{"name":"ls","args":{}},"thoughtSignature":"gem-sig"}]},{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{"output":"x"}}}]}],"tools":[{"functionDeclarations":[{"name":"ls"}]}]}`
		tr, m = translated(t, wire.GenerateContent, wire.Anthropic, g)
		if strings.Contains(string(tr.Body), "gem-sig") || strings.Contains(string(tr.Body), `"mm"`) {
			t.Fatalf("Gemini's signature or thought left Gemini: %s", tr.Body)
		}
		msgs := format.Objs(m["messages"])
		use := format.Objs(msgs[1]["content"])[0]
		result := format.Objs(msgs[2]["content"])[0]
		if use["id"] == "" || use["id"] != result["tool_use_id"] {
			t.Fatalf("a call with no id and its result are not paired: %v / %v", use, result)
		}
	})
	t.Run("tool names keep their case and a refused name maps back", func(t *testing.T) {
		body := `{"model":"x","input":"hi","tools":[{"type":"function","name":"Get_Time","parameters":{"type":"object"}},{"type":"function","name":"mcp.server/read file","parameters":{"type":"object"}}]}`
		tr, m := translated(t, wire.Responses, wire.Anthropic, body)
		tools := format.Objs(m["tools"])
		if tools[0]["name"] != "Get_Time" {
			t.Fatalf("a valid name changed: %v", tools[0]["name"])
		}
		mapped := format.Str(tools[1]["name"])
		if !format.ValidName(mapped) || mapped == "mcp.server/read file" {
			t.Fatalf("a refused name went as it was: %q", mapped)
		}
		if got := tr.ToolOf(mapped).Name; got != "mcp.server/read file" {
			t.Fatalf("%q maps back to %q", mapped, got)
		}
	})
	t.Run("a call id the target refuses maps one to one", func(t *testing.T) {
		body := `{"model":"x","stream":true,"input":[{"type":"message","role":"user","content":"hi"},
			{"type":"function_call","call_id":"fc.1/x","name":"ls","arguments":"{}"},{"type":"function_call","call_id":"fc.1:x","name":"ls","arguments":"{}"},
			{"type":"function_call_output","call_id":"fc.1/x","output":"a"},{"type":"function_call_output","call_id":"fc.1:x","output":"b"}],
			"tools":[{"type":"function","name":"ls","parameters":{"type":"object"}}]}`
		_, m := translated(t, wire.Responses, wire.Anthropic, body)
		msgs := format.Objs(m["messages"])
		uses, results := format.Objs(msgs[1]["content"]), format.Objs(msgs[2]["content"])
		if uses[0]["id"] == uses[1]["id"] || !format.ValidID(format.Str(uses[0]["id"])) || results[0]["tool_use_id"] != uses[0]["id"] || results[1]["tool_use_id"] != uses[1]["id"] {
			t.Fatalf("ids %v %v / results %v %v", uses[0]["id"], uses[1]["id"], results[0]["tool_use_id"], results[1]["tool_use_id"])
		}
	})
	t.Run("Codex's request shape: namespaced tools, the freeform exec with its grammar, responses-lite", func(t *testing.T) {
		rec := recording(t, "codex-0.169-tool-result")
		tr, m := translated(t, wire.Responses, wire.Anthropic, rec)
		names := map[string]bool{}
		for _, tl := range format.Objs(m["tools"]) {
			names[format.Str(tl["name"])] = true
		}
		if !names["exec"] || !names["clock__sleep"] {
			t.Fatalf("the namespaces' tools: %v", names)
		}
		if !tr.ToolOf("exec").Custom || tr.ToolOf("clock__sleep").Namespace != "clock" {
			t.Fatalf("exec is not freeform, or sleep lost its namespace")
		}
		if !strings.Contains(string(tr.Body), "lark grammar") {
			t.Fatalf("the freeform tool's grammar is not in its description")
		}
		msgs := format.Objs(m["messages"])
		last := msgs[len(msgs)-1]
		if b := format.Objs(last["content"]); len(b) == 0 || b[0]["type"] != "tool_result" || b[0]["tool_use_id"] != "call_0" {
			t.Fatalf("the exec call's output: %v", last)
		}
	})
}

func recording(t *testing.T, name string) string {
	t.Helper()
	b, err := readFile("../../../testdata/clients/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Body json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return string(r.Body)
}

// Steps no other vendor can take are refused with why, never sent broken.
func TestIncapable(t *testing.T) {
	cases := []struct {
		kind wire.Kind
		body string
		why  string
	}{
		{wire.Responses, `{"model":"x","input":"hi","previous_response_id":"resp_1"}`, "previous_response_id"},
		{wire.Responses, `{"model":"x","input":"hi","store":true}`, "store: true"},
		{wire.Responses, `{"model":"x","input":"hi","conversation":"conv_1"}`, "conversation"},
		{wire.Responses, `{"model":"x","input":"hi","tools":[{"type":"web_search"}]}`, "hosted tool web_search"},
		{wire.Responses, `{"model":"x","input":[{"type":"message","role":"user","content":[{"type":"input_audio"}]}]}`, "audio"},
		{wire.Chat, `{"model":"x","n":2,"messages":[{"role":"user","content":"hi"}]}`, "2 answers"},
		{wire.Messages, `{"model":"x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "server tool"},
		{wire.GenerateContent, `{"contents":[{"parts":[{"text":"hi"}]}],"tools":[{"googleSearch":{}}]}`, "googleSearch"},
		{wire.Embeddings, `{"model":"x","input":"hi"}`, "never translated"},
	}
	for _, c := range cases {
		err := check(ep(c.kind), []byte(c.body), wire.Anthropic, all)
		if c.kind == wire.Messages {
			err = check(ep(c.kind), []byte(c.body), wire.OpenAI, all)
		}
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s %s: %v, want it refused with %q", c.kind, c.body, err, c.why)
		}
	}
	img := `{"model":"x","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`
	if err := check(ep(wire.Chat), []byte(img), wire.Anthropic, format.Takes{Tools: true}); err == nil || !strings.Contains(err.Error(), "images") {
		t.Errorf("images to a model that takes none: %v", err)
	}
	if err := check(ep(wire.Chat), []byte(img), wire.Anthropic, all); err != nil {
		t.Errorf("images to a model that takes them: %v", err)
	}
}

// What a request carries, both ways: one table of fields and where each
// lands in each target.
func TestFieldsCarried(t *testing.T) {
	chat := `{"model":"x","max_tokens":77,"temperature":0.5,"top_p":0.9,"stop":["END"],"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,
		"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}}`
	_, m := translated(t, wire.Chat, wire.Anthropic, chat)
	sys := format.Objs(m["system"])
	msgs := format.Objs(m["messages"])
	img := format.Objs(msgs[0]["content"])[1]
	tc := format.Obj(m["tool_choice"])
	if format.Str(sys[0]["text"]) != "be brief" || format.IntOf(m["max_tokens"]) != 77 || m["temperature"] != 0.5 || m["top_p"] != nil || format.Strs(m["stop_sequences"])[0] != "END" ||
		format.Str(format.Obj(img["source"])["media_type"]) != "image/png" || tc["type"] != "tool" || tc["name"] != "f" || tc["disable_parallel_tool_use"] != true || format.Obj(m["output_format"])["type"] != "json_schema" {
		t.Fatalf("chat → messages: %v", m)
	}
	_, m = translated(t, wire.Chat, wire.Gemini, chat)
	gc := format.Obj(m["generationConfig"])
	if format.IntOf(gc["maxOutputTokens"]) != 77 || gc["responseMimeType"] != "application/json" || format.Str(format.Obj(format.Objs(format.Obj(m["systemInstruction"])["parts"])[0])["text"]) != "be brief" ||
		format.Obj(format.Objs(format.Objs(m["contents"])[0]["parts"])[1]["inlineData"])["mimeType"] != "image/png" {
		t.Fatalf("chat → gemini: %v", m)
	}
	msg := `{"model":"x","messages":[{"role":"user","content":"hi"}],"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2"},{"type":"text","text":"You are Claude Code."}]}`
	_, m = translated(t, wire.Messages, wire.OpenAI, msg)
	first := format.Objs(m["messages"])[0]
	if first["role"] != "system" || first["content"] != "You are Claude Code." || m["max_completion_tokens"] != nil {
		t.Fatalf("messages → chat: the billing block is dropped, the rest kept, no cap invented: %v", m)
	}
	_, m = translated(t, wire.Chat, wire.Anthropic, `{"model":"x","messages":[{"role":"user","content":"hi"}]}`)
	if format.IntOf(m["max_tokens"]) != messages.DefaultMaxTokens {
		t.Fatalf("Messages requires max_tokens: %v", m["max_tokens"])
	}
}

// A streamed answer of another vendor comes out in the client's own events,
// the parallel calls' arguments in pieces assembled in order.
func TestStreamsBothWays(t *testing.T) {
	messagesStream := strings.Join([]string{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"cache_read_input_tokens":4,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking."}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
		ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_A","name":"get_weather","input":{}}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ty\":\"Zü"}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"rich\"}"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":2}`),
		ev("content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_B","name":"Get_Time","input":{}}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":3}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}`),
		ev("message_stop", `{"type":"message_stop"}`),
	}, "")
	req := `{"model":"x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},{"type":"function","function":{"name":"Get_Time","parameters":{"type":"object"}}}]}`
	tr, _ := translated(t, wire.Chat, wire.Anthropic, req)
	out := run(t, tr, messagesStream)
	if strings.Contains(out, "hmm") || strings.Contains(out, "SIG") {
		t.Fatalf("another vendor's reasoning reached the client:\n%s", out)
	}
	var args [2]string
	var names, ids [2]string
	var finish string
	var usage map[string]any
	done := false
	for _, e := range events(t, out) {
		if string(e.Data) == "[DONE]" {
			done = true
			continue
		}
		var m map[string]any
		json.Unmarshal(e.Data, &m)
		if u := format.Obj(m["usage"]); u != nil {
			usage = u
		}
		for _, ch := range format.Objs(m["choices"]) {
			if f := format.Str(ch["finish_reason"]); f != "" {
				finish = f
			}
			for _, tc := range format.Objs(format.Obj(ch["delta"])["tool_calls"]) {
				i := format.IntOf(tc["index"])
				args[i] += format.Str(format.Obj(tc["function"])["arguments"])
				if n := format.Str(format.Obj(tc["function"])["name"]); n != "" {
					names[i], ids[i] = n, format.Str(tc["id"])
				}
			}
		}
	}
	if args[0] != `{"city":"Zürich"}` || args[1] != "{}" || names != [2]string{"get_weather", "Get_Time"} || ids != [2]string{"toolu_A", "toolu_B"} {
		t.Fatalf("calls %q %q %q", names, ids, args)
	}
	if finish != "tool_calls" || !done || format.IntOf(usage["completion_tokens"]) != 42 || format.IntOf(usage["prompt_tokens"]) != 14 || format.IntOf(format.Obj(usage["prompt_tokens_details"])["cached_tokens"]) != 4 {
		t.Fatalf("finish %q done %v usage %v", finish, done, usage)
	}

	// Chat's calls, interleaved by index, for a Messages client: blocks
	// never overlap, and a delta for a call already closed is refused
	chatStream := strings.Join([]string{
		data(`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`),
		data(`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`),
		data(`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`),
		data(`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Bern\"}"}}]}}]}`),
		data(`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"Get_Time","arguments":"{}"}}]}}]}`),
		data(`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
		data(`{"id":"c1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":7}}`),
		data(`[DONE]`),
	}, "")
	mreq := `{"model":"x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"Get_Time","input_schema":{"type":"object"}}]}`
	tr, _ = translated(t, wire.Messages, wire.OpenAI, mreq)
	out = run(t, tr, chatStream)
	openBlocks, maxOpen := 0, 0
	var order []string
	for _, e := range events(t, out) {
		switch e.Name {
		case "content_block_start":
			openBlocks++
			maxOpen = max(maxOpen, openBlocks)
			var m map[string]any
			json.Unmarshal(e.Data, &m)
			order = append(order, format.Str(format.Obj(m["content_block"])["name"]))
		case "content_block_stop":
			openBlocks--
		}
	}
	if maxOpen != 1 || strings.Join(order, ",") != "get_weather,Get_Time" || !strings.Contains(out, `"stop_reason":"tool_use"`) || !strings.HasSuffix(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("blocks overlap (%d open at once) or are out of order %v:\n%s", maxOpen, order, out)
	}
	tr, _ = translated(t, wire.Messages, wire.OpenAI, mreq)
	s := tr.NewStream()
	for _, d := range []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"get_weather","arguments":"{"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"Get_Time","arguments":"{}"}}]}}]}`,
	} {
		if _, err := s.Event("", []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Event("", []byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}`)); err == nil {
		t.Fatal("arguments for a call already closed were accepted: the client's blocks would overlap")
	}
}

func ev(name, d string) string { return "event: " + name + "\ndata: " + d + "\n\n" }
func data(d string) string     { return "data: " + d + "\n\n" }

// feed is a target stream through a new Stream of tr: the client's events
// as one text, and whether its final event came. An event the Stream
// refuses fails the test, or, with skip, is left out (as the relay ends
// the attempt there).
func feed(t *testing.T, tr *format.Turn, stream string, skip bool) (string, bool) {
	t.Helper()
	s := tr.NewStream()
	rd := sse.NewReader(strings.NewReader(stream))
	var out strings.Builder
	for {
		e, err := rd.Next()
		if err != nil {
			break
		}
		b, err := s.Event(e.Name, e.Data)
		if err != nil && !skip {
			t.Fatal(err)
		}
		out.Write(b)
	}
	out.Write(s.End())
	return out.String(), s.Done()
}

// run is feed of a stream that must end well.
func run(t *testing.T, tr *format.Turn, stream string) string {
	t.Helper()
	out, done := feed(t, tr, stream, false)
	if !done {
		t.Fatalf("the client's stream did not end:\n%s", out)
	}
	return out
}

func events(t *testing.T, stream string) []sse.Event {
	t.Helper()
	rd := sse.NewReader(strings.NewReader(stream))
	var out []sse.Event
	for {
		e, err := rd.Next()
		if err != nil {
			return out
		}
		if string(e.Data) != "[DONE]" && !json.Valid(e.Data) {
			t.Fatalf("not JSON: %s", e.Data)
		}
		e.Data = append([]byte(nil), e.Data...)
		out = append(out, e)
	}
}

func readFile(p string) ([]byte, error) { return os.ReadFile(p) }

// What a review of the first version found, each a case.
func TestReviewedCases(t *testing.T) {
	t.Run("Gemini CLI's own id on a result whose call had none: paired by name", func(t *testing.T) {
		g := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"ls","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"cli-7f3","name":"ls","response":{"output":"a"}}}]}],"tools":[{"functionDeclarations":[{"name":"ls"}]}]}`
		_, m := translated(t, wire.GenerateContent, wire.Anthropic, g)
		msgs := format.Objs(m["messages"])
		if use, res := format.Objs(msgs[1]["content"])[0], format.Objs(msgs[2]["content"])[0]; use["id"] != res["tool_use_id"] {
			t.Fatalf("call %v, result %v", use, res)
		}
	})
	t.Run("no thinking with a forced tool", func(t *testing.T) {
		_, m := translated(t, wire.Chat, wire.Anthropic, `{"model":"x","reasoning_effort":"high","tool_choice":"required","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`)
		if m["thinking"] != nil {
			t.Fatalf("thinking with tool_choice any: %v", m["thinking"])
		}
	})
	t.Run("a reasoning model gets no sampling settings; another does", func(t *testing.T) {
		body := []byte(`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0,"topP":1,"stopSequences":["X"]}}`)
		tr, _ := newTurn(ep(wire.GenerateContent), body, wire.OpenAI, all, "m", "m")
		if strings.Contains(string(tr.Body), "temperature") || strings.Contains(string(tr.Body), "top_p") || strings.Contains(string(tr.Body), `"stop"`) {
			t.Fatalf("a reasoning model got sampling settings: %s", tr.Body)
		}
		tr, _ = newTurn(ep(wire.GenerateContent), body, wire.OpenAI, format.Takes{Tools: true, Images: true}, "m", "m")
		if !strings.Contains(string(tr.Body), `"temperature":0`) || !strings.Contains(string(tr.Body), `"stop":["X"]`) {
			t.Fatalf("a model with reasoning: false lost them: %s", tr.Body)
		}
	})
	t.Run("another vendor's call id Messages would refuse reaches a Messages client valid", func(t *testing.T) {
		tr, _ := translated(t, wire.Messages, wire.OpenAI, `{"model":"x","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`)
		out := run(t, tr, data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"functions.f:0","function":{"name":"f","arguments":"{}"}}]}}]}`)+data(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)+data(`[DONE]`))
		if strings.Contains(out, "functions.f:0") || !strings.Contains(out, `"type":"tool_use"`) {
			t.Fatalf("%s", out)
		}
	})
	t.Run("a Chat client that did not ask for usage gets no usage chunk", func(t *testing.T) {
		tr, _ := translated(t, wire.Chat, wire.Anthropic, `{"model":"x","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		out := run(t, tr, ev("message_start", `{"message":{"id":"m","usage":{"input_tokens":1}}}`)+ev("content_block_start", `{"index":0,"content_block":{"type":"text","text":""}}`)+
			ev("content_block_delta", `{"index":0,"delta":{"type":"text_delta","text":"hi"}}`)+ev("message_delta", `{"delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`)+ev("message_stop", `{}`))
		if strings.Contains(out, `"choices":[]`) || !strings.HasSuffix(out, "data: [DONE]\n\n") {
			t.Fatalf("%s", out)
		}
	})
}
