package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/sse"
	"github.com/spillway/spillway/sim"
)

// gotCall is a tool call read back from an answer.
type gotCall struct {
	id, name, args string
}

// toolFormat builds the requests of one wire format for the tool tests and
// reads their answers back.
type toolFormat struct {
	name   string
	path   func(stream bool) string
	header map[string]string
	// first is a request declaring get_weather and the format's shell tool
	first func(model string, stream bool) map[string]any
	// followup is first with the answer's calls and their results added
	followup func(first map[string]any, calls []gotCall, results []string) map[string]any
	// shell is the shell tool's name and the arguments "echo spill-42"
	// becomes for it
	shell     string
	shellArgs map[string]any
}

var weatherSchema = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}

func toolFormats() []toolFormat {
	return []toolFormat{
		{
			name:   "chat",
			path:   func(bool) string { return "/v1/chat/completions" },
			header: oaKey,
			first: func(model string, stream bool) map[string]any {
				return map[string]any{"model": model, "stream": stream, "stream_options": map[string]any{"include_usage": true}, "messages": []any{map[string]any{"role": "user", "content": "weather in Paris?"}},
					"tools": []any{
						map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}},
						map[string]any{"type": "function", "function": map[string]any{"name": "shell", "parameters": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}},
					}}
			},
			followup: func(first map[string]any, calls []gotCall, results []string) map[string]any {
				msgs := first["messages"].([]any)
				var tcs []any
				for _, c := range calls {
					tcs = append(tcs, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
				}
				msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs})
				for i, c := range calls {
					msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": c.id, "content": results[i]})
				}
				return with(first, "messages", msgs)
			},
			shell: "shell", shellArgs: map[string]any{"command": []any{"bash", "-lc", "echo spill-42"}},
		},
		{
			name:   "responses",
			path:   func(bool) string { return "/v1/responses" },
			header: oaKey,
			first: func(model string, stream bool) map[string]any {
				return map[string]any{"model": model, "stream": stream,
					"input": []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "weather in Paris?"}}}},
					"tools": []any{
						map[string]any{"type": "function", "name": "get_weather", "parameters": weatherSchema},
						map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}}},
					}}
			},
			followup: func(first map[string]any, calls []gotCall, results []string) map[string]any {
				in := first["input"].([]any)
				for _, c := range calls {
					in = append(in, map[string]any{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.args})
				}
				for i, c := range calls {
					in = append(in, map[string]any{"type": "function_call_output", "call_id": c.id, "output": results[i]})
				}
				return with(first, "input", in)
			},
			shell: "exec_command", shellArgs: map[string]any{"cmd": "echo spill-42"},
		},
		{
			name:   "messages",
			path:   func(bool) string { return "/v1/messages" },
			header: antKey,
			first: func(model string, stream bool) map[string]any {
				return map[string]any{"model": model, "stream": stream, "max_tokens": 1024,
					"messages": []any{map[string]any{"role": "user", "content": "weather in Paris?"}},
					"tools": []any{
						map[string]any{"name": "get_weather", "input_schema": weatherSchema},
						map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}}},
					}}
			},
			followup: func(first map[string]any, calls []gotCall, results []string) map[string]any {
				msgs := first["messages"].([]any)
				var uses, res []any
				for i, c := range calls {
					var in any
					json.Unmarshal([]byte(c.args), &in)
					uses = append(uses, map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": in})
					res = append(res, map[string]any{"type": "tool_result", "tool_use_id": c.id, "content": results[i]})
				}
				msgs = append(msgs, map[string]any{"role": "assistant", "content": uses}, map[string]any{"role": "user", "content": res})
				return with(first, "messages", msgs)
			},
			shell: "Bash", shellArgs: map[string]any{"command": "echo spill-42", "description": "Run echo spill-42"},
		},
		{
			name: "gemini",
			path: func(stream bool) string {
				if stream {
					return "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse"
				}
				return "/v1beta/models/gemini-3-pro:generateContent"
			},
			header: gemKey,
			first: func(_ string, _ bool) map[string]any {
				return map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "weather in Paris?"}}}},
					"tools": []any{map[string]any{"functionDeclarations": []any{
						map[string]any{"name": "get_weather", "parametersJsonSchema": weatherSchema},
						map[string]any{"name": "run_shell_command", "parametersJsonSchema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}},
					}}}}
			},
			followup: func(first map[string]any, calls []gotCall, results []string) map[string]any {
				contents := first["contents"].([]any)
				var fc, fr []any
				for i, c := range calls {
					var args any
					json.Unmarshal([]byte(c.args), &args)
					fc = append(fc, map[string]any{"functionCall": map[string]any{"name": c.name, "args": args}})
					fr = append(fr, map[string]any{"functionResponse": map[string]any{"name": c.name, "response": map[string]any{"output": results[i]}}})
				}
				contents = append(contents, map[string]any{"role": "model", "parts": fc}, map[string]any{"role": "user", "parts": fr})
				return with(first, "contents", contents)
			},
			shell: "run_shell_command", shellArgs: map[string]any{"command": "echo spill-42"},
		},
	}
}

// with is a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

func postJSON(t *testing.T, base, path string, header map[string]string, body any) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return post(t, base, reqSpec{name: path, path: path, body: string(b), header: header})
}

func script(t *testing.T, base string, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/_sim/script", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, buf.Bytes()
}

// readAnswer reads an answer of any format, whole or streamed: its calls
// (each call's arguments put together from its deltas), its text, its stop
// reason, its output usage and how many argument deltas were streamed.
func readAnswer(t *testing.T, body []byte) (calls []gotCall, text, stop string, out, deltas int) {
	t.Helper()
	if !sse.LooksLikeSSE(body) {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, body)
		}
		switch {
		case m["choices"] != nil:
			ch := m["choices"].([]any)[0].(map[string]any)
			msg := ch["message"].(map[string]any)
			text, _ = msg["content"].(string)
			for _, tc := range anyList(msg["tool_calls"]) {
				f := tc["function"].(map[string]any)
				calls = append(calls, gotCall{id: tc["id"].(string), name: f["name"].(string), args: f["arguments"].(string)})
			}
			return calls, text, ch["finish_reason"].(string), num(m["usage"], "completion_tokens"), 0
		case m["object"] == "response":
			for _, it := range anyList(m["output"]) {
				switch it["type"] {
				case "function_call":
					calls = append(calls, gotCall{id: it["call_id"].(string), name: it["name"].(string), args: it["arguments"].(string)})
				case "custom_tool_call":
					calls = append(calls, gotCall{id: it["call_id"].(string), name: it["name"].(string), args: it["input"].(string)})
				case "message":
					for _, c := range anyList(it["content"]) {
						text += c["text"].(string)
					}
				}
			}
			return calls, text, m["status"].(string), num(m["usage"], "output_tokens"), 0
		case m["type"] == "message":
			for _, b := range anyList(m["content"]) {
				switch b["type"] {
				case "tool_use":
					in, _ := json.Marshal(b["input"])
					calls = append(calls, gotCall{id: b["id"].(string), name: b["name"].(string), args: string(in)})
				case "text":
					text += b["text"].(string)
				}
			}
			return calls, text, m["stop_reason"].(string), num(m["usage"], "output_tokens"), 0
		case m["candidates"] != nil:
			c, t2, s := geminiParts(t, m)
			return c, t2, s, num(m["usageMetadata"], "candidatesTokenCount"), 0
		}
		t.Fatalf("unknown answer %s", body)
	}
	r := sse.NewReader(bytes.NewReader(body))
	byIndex := map[int]*gotCall{}
	var order []int
	at := func(i int) *gotCall {
		if byIndex[i] == nil {
			byIndex[i] = &gotCall{}
			order = append(order, i)
		}
		return byIndex[i]
	}
	doneArgs := map[string]string{}
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if string(ev.Data) == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("bad frame %q", ev.Data)
		}
		switch {
		case m["object"] == "chat.completion.chunk":
			for _, ch := range anyList(m["choices"]) {
				d, _ := ch["delta"].(map[string]any)
				if s, ok := d["content"].(string); ok {
					text += s
				}
				for _, tc := range anyList(d["tool_calls"]) {
					c := at(int(tc["index"].(float64)))
					if id, ok := tc["id"].(string); ok {
						c.id = id
					}
					f := tc["function"].(map[string]any)
					if n, ok := f["name"].(string); ok {
						c.name = n
					}
					if a, _ := f["arguments"].(string); a != "" {
						c.args += a
						deltas++
					}
				}
				if fr, ok := ch["finish_reason"].(string); ok {
					stop = fr
				}
			}
			if m["usage"] != nil {
				out = num(m["usage"], "completion_tokens")
			}
		case ev.Name == "response.output_item.added":
			it := m["item"].(map[string]any)
			if it["type"] == "function_call" || it["type"] == "custom_tool_call" {
				c := at(int(m["output_index"].(float64)))
				c.id, c.name = it["call_id"].(string), it["name"].(string)
			}
		case ev.Name == "response.function_call_arguments.delta" || ev.Name == "response.custom_tool_call_input.delta":
			at(int(m["output_index"].(float64))).args += m["delta"].(string)
			deltas++
		case ev.Name == "response.output_item.done":
			it := m["item"].(map[string]any)
			switch it["type"] {
			case "function_call":
				doneArgs[it["call_id"].(string)] = it["arguments"].(string)
			case "custom_tool_call":
				doneArgs[it["call_id"].(string)] = it["input"].(string)
			}
		case ev.Name == "response.output_text.delta":
			text += m["delta"].(string)
		case ev.Name == "response.completed":
			resp := m["response"].(map[string]any)
			stop, out = resp["status"].(string), num(resp["usage"], "output_tokens")
		case ev.Name == "content_block_start":
			if b := m["content_block"].(map[string]any); b["type"] == "tool_use" {
				c := at(int(m["index"].(float64)))
				c.id, c.name = b["id"].(string), b["name"].(string)
			}
		case ev.Name == "content_block_delta":
			d := m["delta"].(map[string]any)
			switch d["type"] {
			case "input_json_delta":
				at(int(m["index"].(float64))).args += d["partial_json"].(string)
				deltas++
			case "text_delta":
				text += d["text"].(string)
			}
		case ev.Name == "message_delta":
			stop, out = m["delta"].(map[string]any)["stop_reason"].(string), num(m["usage"], "output_tokens")
		case m["candidates"] != nil:
			c, t2, s := geminiParts(t, m)
			calls = append(calls, c...)
			text += t2
			if s != "" {
				stop = s
			}
			if m["usageMetadata"] != nil {
				out = num(m["usageMetadata"], "candidatesTokenCount")
			}
		}
	}
	for _, i := range order {
		c := *byIndex[i]
		if d, ok := doneArgs[c.id]; ok && d != c.args {
			t.Fatalf("call %s: its deltas make %q, its done event says %q", c.id, c.args, d)
		}
		calls = append(calls, c)
	}
	return calls, text, stop, out, deltas
}

func geminiParts(t *testing.T, m map[string]any) (calls []gotCall, text, stop string) {
	t.Helper()
	cand := m["candidates"].([]any)[0].(map[string]any)
	stop, _ = cand["finishReason"].(string)
	content, _ := cand["content"].(map[string]any)
	for _, p := range anyList(content["parts"]) {
		if fc, ok := p["functionCall"].(map[string]any); ok {
			args, _ := json.Marshal(fc["args"])
			id, _ := fc["id"].(string)
			calls = append(calls, gotCall{id: id, name: fc["name"].(string), args: string(args)})
		}
		if s, ok := p["text"].(string); ok {
			text += s
		}
	}
	return calls, text, stop
}

func anyList(v any) []map[string]any {
	var out []map[string]any
	for _, x := range asList(v) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

func jsonEqual(t *testing.T, got string, want any) bool {
	t.Helper()
	var g any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("arguments %q are not JSON: %v", got, err)
	}
	w, _ := json.Marshal(want)
	var wv any
	json.Unmarshal(w, &wv)
	return reflect.DeepEqual(g, wv)
}

// TestScriptedToolLoop runs a scripted conversation in every format, whole
// and streamed: two parallel calls (a named tool and the client's shell),
// then text quoting their results; after the script the model answers as
// usual.
func TestScriptedToolLoop(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	models := map[string]string{"chat": "gpt-6-astra", "responses": "gpt-6-astra", "messages": "claude-opus-5-5", "gemini": "gemini-3-pro"}
	for _, f := range toolFormats() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", f.name, stream), func(t *testing.T) {
				model := models[f.name]
				srv.ClearScripts("")
				srv.ResetStats()
				if code, b := script(t, base, `{"model":"`+model+`","turns":[
					{"call":[{"tool":"get_weather","arguments":{"city":"Paris"}},{"tool":"shell","arguments":{"command":"echo spill-42"}}]},
					{"text":"The tools said: {result}"}]}`); code != 200 {
					t.Fatalf("script: %d %s", code, b)
				}
				first := f.first(model, stream)
				resp, body := postJSON(t, base, f.path(stream), f.header, first)
				if resp.StatusCode != 200 {
					t.Fatalf("first: %d %s", resp.StatusCode, body)
				}
				calls, text, stop, out, deltas := readAnswer(t, body)
				if len(calls) != 2 || text != "" {
					t.Fatalf("want two calls and no text, got %+v %q\n%s", calls, text, body)
				}
				if calls[0].name != "get_weather" || !jsonEqual(t, calls[0].args, map[string]any{"city": "Paris"}) {
					t.Fatalf("first call %+v", calls[0])
				}
				if calls[1].name != f.shell || !jsonEqual(t, calls[1].args, f.shellArgs) {
					t.Fatalf("shell call %+v, want %s %v", calls[1], f.shell, f.shellArgs)
				}
				if f.name != "gemini" && (calls[0].id == "" || calls[0].id == calls[1].id) {
					t.Fatalf("calls need ids of their own: %+v", calls)
				}
				wantStop := map[string]string{"chat": "tool_calls", "responses": "completed", "messages": "tool_use", "gemini": "STOP"}[f.name]
				if stop != wantStop || out <= 0 {
					t.Fatalf("stop %q usage %d, want %q and the calls' tokens", stop, out, wantStop)
				}
				// streamed arguments come in pieces (Gemini sends each call whole)
				if stream && f.name != "gemini" && deltas <= len(calls) {
					t.Fatalf("arguments streamed in %d deltas for %d calls: want them split", deltas, len(calls))
				}
				// the results come back: the next turn is the text, quoting them
				next := f.followup(first, calls, []string{"sunny, 21C", "spill-42"})
				resp, body = postJSON(t, base, f.path(stream), f.header, next)
				if resp.StatusCode != 200 {
					t.Fatalf("follow-up: %d %s", resp.StatusCode, body)
				}
				calls, text, _, _, _ = readAnswer(t, body)
				if len(calls) != 0 || text != "The tools said: sunny, 21C\nspill-42" {
					t.Fatalf("follow-up answered %+v %q", calls, text)
				}
				// sent again (a retry, another model) it gets the same turn
				_, again := postJSON(t, base, f.path(stream), f.header, next)
				if _, text2, _, _, _ := readAnswer(t, again); text2 != text {
					t.Fatalf("the same request again answered %q", text2)
				}
				// a new prompt starts the script again (count -1: until cleared)
				_, body = postJSON(t, base, f.path(stream), f.header, first)
				if calls, _, _, _, _ := readAnswer(t, body); len(calls) != 2 {
					t.Fatalf("a new conversation got %+v", calls)
				}
				st := srv.Snapshot().Models[model]
				if stream && st.Streamed == 0 || !stream && st.Streamed != 0 && f.name != "gemini" {
					t.Fatalf("stats %+v", st)
				}
				srv.ClearScripts(model)
				_, body = postJSON(t, base, f.path(stream), f.header, first)
				if calls, text, _, _, _ := readAnswer(t, body); len(calls) != 0 || text == "" {
					t.Fatalf("without a script: %+v %q", calls, text)
				}
			})
		}
	}
}

// TestScriptedThinking: with thinking on, a Messages call comes after a
// thinking block with its signature, which the next request must send back.
func TestScriptedThinking(t *testing.T) {
	_, base := newSim(t, nil, nil)
	script(t, base, `{"turns":[{"call":{"tool":"shell","arguments":{"command":"echo spill-42"}}},{"text":"ok {result}"}]}`)
	f := toolFormats()[2]
	for _, stream := range []bool{false, true} {
		first := with(f.first("claude-opus-5-5", stream), "thinking", map[string]any{"type": "adaptive", "display": "omitted"})
		_, body := postJSON(t, base, f.path(stream), f.header, first)
		var blocks []string
		var sig string
		if stream {
			r := sse.NewReader(bytes.NewReader(body))
			for {
				ev, err := r.Next()
				if err != nil {
					break
				}
				var m map[string]any
				json.Unmarshal(ev.Data, &m)
				if cb, ok := m["content_block"].(map[string]any); ok {
					blocks = append(blocks, cb["type"].(string))
				}
				if d, ok := m["delta"].(map[string]any); ok && d["type"] == "signature_delta" {
					sig = d["signature"].(string)
				}
			}
		} else {
			var m map[string]any
			json.Unmarshal(body, &m)
			for _, b := range anyList(m["content"]) {
				blocks = append(blocks, b["type"].(string))
				if s, ok := b["signature"].(string); ok {
					sig = s
				}
			}
		}
		if !reflect.DeepEqual(blocks, []string{"thinking", "tool_use"}) || sig == "" {
			t.Fatalf("stream=%v: blocks %v signature %q", stream, blocks, sig)
		}
		calls, _, _, _, _ := readAnswer(t, body)
		// without the thinking block: refused as Anthropic does
		next := f.followup(first, calls, []string{"spill-42"})
		resp, b := postJSON(t, base, f.path(stream), f.header, next)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "must start with a thinking block") {
			t.Fatalf("stream=%v: without the thinking block: %d %s", stream, resp.StatusCode, b)
		}
		// with it: the next turn
		msgs := next["messages"].([]any)
		asst := msgs[1].(map[string]any)
		asst["content"] = append([]any{map[string]any{"type": "thinking", "thinking": "", "signature": sig}}, asst["content"].([]any)...)
		resp, b = postJSON(t, base, f.path(stream), f.header, next)
		if _, text, _, _, _ := readAnswer(t, b); resp.StatusCode != 200 || text != "ok spill-42" {
			t.Fatalf("stream=%v: with the thinking block: %d %s", stream, resp.StatusCode, b)
		}
	}
}

// recording is a client's request as testdata/clients holds it.
type recording struct {
	Note    string            `json:"note"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func loadRecording(t *testing.T, name string) recording {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "clients", name))
	if err != nil {
		t.Fatal(err)
	}
	var r recording
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func replay(t *testing.T, base string, r recording) (*http.Response, []byte) {
	t.Helper()
	h := map[string]string{}
	for k, v := range r.Headers {
		if !strings.EqualFold(k, "Accept-Encoding") {
			h[k] = v
		}
	}
	return post(t, base, reqSpec{name: r.Note, path: r.Path, body: string(r.Body), header: h})
}

// TestRecordedClientRequests replays the real clients' requests (Codex
// 0.169's responses-lite body, Claude Code 2.1.328's, Gemini CLI 0.61's):
// they pass the providers' rules, the script's "shell" finds each one's own
// shell tool and shapes the command to it, and the request carrying its
// result gets the text quoting the result.
func TestRecordedClientRequests(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	if code, b := script(t, base, `{"turns":[{"call":{"tool":"shell","arguments":{"command":"echo spill-42"}}},{"text":"The command printed {result}"}]}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	cases := []struct {
		client, tool string
		args         func(t *testing.T, args string)
	}{
		{"codex-0.169", "exec", func(t *testing.T, args string) {
			// a custom tool: JavaScript calling its exec_command tool
			if !strings.Contains(args, "tools.exec_command(") || !strings.Contains(args, `"echo spill-42"`) {
				t.Fatalf("exec input %q", args)
			}
		}},
		{"claude-2.1.328", "Bash", func(t *testing.T, args string) {
			var a map[string]any
			json.Unmarshal([]byte(args), &a)
			if a["command"] != "echo spill-42" || a["description"] == nil {
				t.Fatalf("Bash input %s", args)
			}
		}},
		{"gemini-0.61", "run_shell_command", func(t *testing.T, args string) {
			var a map[string]any
			json.Unmarshal([]byte(args), &a)
			if a["command"] != "echo spill-42" {
				t.Fatalf("run_shell_command args %s", args)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.client, func(t *testing.T) {
			// a fault mid-loop passes the first request over and hits the
			// one that brings the result back
			if err := srv.AddFault(sim.Fault{Kind: "capacity", MidLoop: true, Count: 1}); err != nil {
				t.Fatal(err)
			}
			resp, body := replay(t, base, loadRecording(t, c.client+"-first.json"))
			if resp.StatusCode != 200 {
				t.Fatalf("first: %d %s", resp.StatusCode, body)
			}
			calls, text, _, _, _ := readAnswer(t, body)
			if len(calls) != 1 || calls[0].name != c.tool || text != "" {
				t.Fatalf("want one call of %s, got %+v %q", c.tool, calls, text)
			}
			c.args(t, calls[0].args)
			if resp, body = replay(t, base, loadRecording(t, c.client+"-tool-result.json")); resp.StatusCode < 500 && !strings.Contains(string(body), "overloaded") {
				t.Fatalf("mid-loop fault: %d %s", resp.StatusCode, body)
			}
			resp, body = replay(t, base, loadRecording(t, c.client+"-tool-result.json"))
			if resp.StatusCode != 200 {
				t.Fatalf("tool result: %d %s", resp.StatusCode, body)
			}
			calls, text, _, _, _ = readAnswer(t, body)
			if len(calls) != 0 || !strings.HasPrefix(text, "The command printed ") || !strings.Contains(text, "spill-42") {
				t.Fatalf("tool result answered %+v %q", calls, text)
			}
		})
	}
}

// TestProviderStrictness: what the providers refuse, the simulator refuses
// with the provider's own 400 (and it counts as bad_request).
func TestProviderStrictness(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	fs := toolFormats()
	chat, resp, msgs, gem := fs[0], fs[1], fs[2], fs[3]
	call := []gotCall{{id: "call_1", name: "get_weather", args: `{"city":"Paris"}`}}
	toolu := []gotCall{{id: "toolu_1", name: "get_weather", args: `{"city":"Paris"}`}}
	// edit returns a copy of the request with the list under k changed by fn
	edit := func(m map[string]any, k string, fn func([]any) []any) map[string]any {
		l := append([]any(nil), m[k].([]any)...)
		return with(m, k, fn(l))
	}
	cases := []struct {
		name   string
		f      toolFormat
		body   map[string]any
		errKey string // where the provider's shape puts the message
		want   string
	}{
		{"messages without max_tokens", msgs, func() map[string]any {
			m := msgs.first("claude-opus-5-5", false)
			delete(m, "max_tokens")
			return m
		}(), "anthropic", "max_tokens: Field required"},
		{"messages tool_result with no call", msgs, edit(msgs.followup(msgs.first("claude-opus-5-5", false), toolu, []string{"x"}), "messages", func(l []any) []any {
			res := l[2].(map[string]any)
			res["content"] = append(asList(res["content"]), map[string]any{"type": "tool_result", "tool_use_id": "toolu_other", "content": "x"})
			return l
		}), "anthropic", "unexpected `tool_use_id`"},
		{"messages tool_use left without a result", msgs, edit(msgs.followup(msgs.first("claude-opus-5-5", false), toolu, []string{"x"}), "messages", func(l []any) []any {
			l[2] = map[string]any{"role": "user", "content": "never mind"}
			return append(l, map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": "go on"})
		}), "anthropic", "without `tool_result` blocks immediately after"},
		{"messages first turn not user", msgs, edit(msgs.first("claude-opus-5-5", false), "messages", func(l []any) []any {
			return append([]any{map[string]any{"role": "assistant", "content": "hi"}}, l...)
		}), "anthropic", `first message must use the "user" role`},
		{"messages role system without the beta", msgs, edit(msgs.first("claude-opus-5-5", false), "messages", func(l []any) []any {
			return append(l, map[string]any{"role": "system", "content": "be brief"})
		}), "anthropic", "Input should be 'user' or 'assistant'"},
		{"messages thinking on, last tool call without thinking", msgs, with(msgs.followup(msgs.first("claude-opus-5-5", false), toolu, []string{"x"}), "thinking", map[string]any{"type": "enabled", "budget_tokens": 1024}),
			"anthropic", "must start with a thinking block"},
		{"messages call of an unknown tool", msgs, msgs.followup(msgs.first("claude-opus-5-5", false), []gotCall{{id: "toolu_1", name: "get_wether", args: "{}"}}, []string{"x"}), "anthropic", `"get_wether" is not the name of any`},
		{"chat tool message with no call", chat, edit(chat.followup(chat.first("gpt-6-astra", false), call, []string{"x"}), "messages", func(l []any) []any {
			return append(l, map[string]any{"role": "tool", "tool_call_id": "call_other", "content": "x"})
		}), "openai", "must be a response to a preceeding message with 'tool_calls'"},
		{"chat tool call left without a result", chat, edit(chat.followup(chat.first("gpt-6-astra", false), call, []string{"x"}), "messages", func(l []any) []any {
			l[2] = map[string]any{"role": "user", "content": "never mind"}
			return l
		}), "openai", "did not have response messages: call_1"},
		{"chat unknown role", chat, edit(chat.first("gpt-6-astra", false), "messages", func(l []any) []any {
			return append(l, map[string]any{"role": "robot", "content": "x"})
		}), "openai", "Invalid value: 'robot'"},
		{"chat call of an unknown tool", chat, chat.followup(chat.first("gpt-6-astra", false), []gotCall{{id: "call_1", name: "get_wether", args: "{}"}}, []string{"x"}), "openai", `"get_wether" is not among`},
		{"responses output with no call", resp, edit(resp.first("gpt-6-astra", false), "input", func(l []any) []any {
			return append(l, map[string]any{"type": "function_call_output", "call_id": "call_9", "output": "x"})
		}), "openai", "No tool call found for function call output with call_id call_9"},
		{"responses call left without output", resp, edit(resp.first("gpt-6-astra", false), "input", func(l []any) []any {
			return append(l, map[string]any{"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": "{}"})
		}), "openai", "No tool output found for function call call_9"},
		{"responses call of an unknown tool", resp, resp.followup(resp.first("gpt-6-astra", false), []gotCall{{id: "call_1", name: "get_wether", args: "{}"}}, []string{"x"}), "openai", `"get_wether" is not among`},
		{"gemini response with no call", gem, edit(gem.first("", false), "contents", func(l []any) []any {
			return append(l, map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "get_weather", "response": map[string]any{}}}}})
		}), "gemini", "function response turn comes immediately after a function call turn"},
		{"gemini call left without a response", gem, edit(gem.first("", false), "contents", func(l []any) []any {
			return append(l, map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "get_weather", "args": map[string]any{}}}}},
				map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hm"}}})
		}), "gemini", "number of function response parts is equal"},
		{"gemini unknown role", gem, edit(gem.first("", false), "contents", func(l []any) []any {
			return append(l, map[string]any{"role": "assistant", "parts": []any{map[string]any{"text": "x"}}})
		}), "gemini", "Please use a valid role: user, model."},
		{"gemini call of an unknown tool", gem, gem.followup(gem.first("", false), []gotCall{{name: "get_wether", args: "{}"}}, []string{"x"}), "gemini", `"get_wether" is not declared`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv.ResetStats()
			for _, stream := range []bool{false, true} {
				r, body := postJSON(t, base, c.f.path(stream), c.f.header, with(c.body, "stream", stream))
				if r.StatusCode != 400 {
					t.Fatalf("stream=%v: %d %s, want 400", stream, r.StatusCode, body)
				}
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatalf("not JSON: %s", body)
				}
				e, _ := m["error"].(map[string]any)
				msg, _ := e["message"].(string)
				switch c.errKey {
				case "anthropic":
					if m["type"] != "error" || e["type"] != "invalid_request_error" {
						t.Fatalf("not Anthropic's shape: %s", body)
					}
				case "openai":
					if e["type"] != "invalid_request_error" {
						t.Fatalf("not OpenAI's shape: %s", body)
					}
				case "gemini":
					if e["status"] != "INVALID_ARGUMENT" || num(e, "code") != 400 {
						t.Fatalf("not Gemini's shape: %s", body)
					}
				}
				if !strings.Contains(msg, c.want) {
					t.Fatalf("message %q, want %q", msg, c.want)
				}
			}
			var total int
			for _, st := range srv.Snapshot().Models {
				total += st.Rejected["bad_request"]
			}
			if total != 2 {
				t.Fatalf("counted %d bad_request rejections, want 2", total)
			}
		})
	}
	// what passes: the same requests made right
	for _, f := range fs {
		model := map[string]string{"chat": "gpt-6-astra", "responses": "gpt-6-astra", "messages": "claude-opus-5-5", "gemini": ""}[f.name]
		var cs []gotCall
		switch f.name {
		case "messages":
			cs = toolu
		default:
			cs = []gotCall{{id: "call_1", name: "get_weather", args: `{"city":"Paris"}`}}
		}
		r, body := postJSON(t, base, f.path(false), f.header, f.followup(f.first(model, false), cs, []string{"x"}))
		if r.StatusCode != 200 {
			t.Fatalf("%s, made right: %d %s", f.name, r.StatusCode, body)
		}
	}
}

// TestScriptControl: the control API's checks, count and clearing.
func TestScriptControl(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	for _, c := range []struct{ body, want string }{
		{`{"turns":[]}`, `a script needs "turns"`},
		{`{"turns":[{}]}`, "turn 0 is empty"},
		{`{"turns":[{"text":"a","call":{"tool":"x"}}]}`, "both a call and text"},
		{`{"turns":[{"call":{"arguments":{}}}]}`, `names no "tool"`},
		{`{"model":"gpt-9","turns":[{"text":"a"}]}`, `unknown model "gpt-9"`},
		{`{"turns":[{"text":"a"}],"cont":1}`, "unknown field"},
		{`{"turns":`, "not valid JSON"},
	} {
		code, b := script(t, base, c.body)
		var e struct{ Error string }
		json.Unmarshal(b, &e)
		if code != 400 || !strings.Contains(e.Error, c.want) {
			t.Fatalf("%s: %d %s, want 400 saying %q", c.body, code, b, c.want)
		}
	}
	// count 1: one conversation, then the script is gone
	if code, b := script(t, base, `{"model":"gpt-6-astra","count":1,"turns":[{"call":{"tool":"get_weather","arguments":{"city":"Oslo"}}},{"text":"done"}]}`); code != 200 || !strings.Contains(string(b), `"count":1`) {
		t.Fatalf("%d %s", code, b)
	}
	f := toolFormats()[0]
	first := f.first("gpt-6-astra", false)
	_, body := postJSON(t, base, f.path(false), f.header, first)
	calls, _, _, _, _ := readAnswer(t, body)
	if len(calls) != 1 {
		t.Fatalf("got %+v", calls)
	}
	_, body = postJSON(t, base, f.path(false), f.header, f.followup(first, calls, []string{"cold"}))
	if _, text, _, _, _ := readAnswer(t, body); text != "done" {
		t.Fatalf("got %q", text)
	}
	r, _ := http.Get(base + "/_sim/script")
	var list struct{ Scripts []sim.Script }
	json.NewDecoder(r.Body).Decode(&list)
	r.Body.Close()
	if len(list.Scripts) != 0 {
		t.Fatalf("after its one conversation the script is still there: %+v", list.Scripts)
	}
	_, body = postJSON(t, base, f.path(false), f.header, first)
	if calls, text, _, _, _ := readAnswer(t, body); len(calls) != 0 || text == "" {
		t.Fatalf("after the script: %+v %q", calls, text)
	}
	// a script calling a tool the request does not declare: a 400 in the
	// provider's shape, saying which tools it has
	script(t, base, `{"turns":[{"call":{"tool":"read_file","arguments":{}}}]}`)
	resp, b := postJSON(t, base, f.path(false), f.header, first)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `tool \"read_file\", which this request does not declare (its tools: get_weather, shell)`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// a request with no tools at all gets the script's text turns only
	script(t, base, `{"turns":[{"text":"scripted"}]}`)
	_, body = post(t, base, reqSpec{path: "/v1/chat/completions", body: `{"model":"gpt-6-luna","messages":[{"role":"user","content":"hi"}]}`, header: oaKey})
	if _, text, _, _, _ := readAnswer(t, body); text != "scripted" {
		t.Fatalf("got %q", text)
	}
	req, _ := http.NewRequest("DELETE", base+"/_sim/script", nil)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 204 {
		t.Fatalf("delete: %v %v", r, err)
	}
	_, body = post(t, base, reqSpec{path: "/v1/chat/completions", body: `{"model":"gpt-6-luna","messages":[{"role":"user","content":"hi"}]}`, header: oaKey})
	if _, text, _, _, _ := readAnswer(t, body); text == "scripted" {
		t.Fatal("DELETE left the script")
	}
	_ = srv
}

// TestScriptResumedMidLoop: a prompt that comes after tool results (a
// session resumed after a failure in the middle of its loop) goes on with
// the script where the loop stood; a prompt after the model's answer starts
// it again.
func TestScriptResumedMidLoop(t *testing.T) {
	_, base := newSim(t, nil, nil)
	script(t, base, `{"turns":[{"call":{"tool":"get_weather","arguments":{"city":"Oslo"}}},{"text":"it said {result}"}]}`)
	f := toolFormats()[0]
	first := f.first("gpt-6-astra", false)
	_, body := postJSON(t, base, f.path(false), f.header, first)
	calls, _, _, _, _ := readAnswer(t, body)
	mid := f.followup(first, calls, []string{"cold"})
	resumed := with(mid, "messages", append(asList(mid["messages"]), map[string]any{"role": "user", "content": "Continue the task"}))
	_, body = postJSON(t, base, f.path(false), f.header, resumed)
	if calls, text, _, _, _ := readAnswer(t, body); len(calls) != 0 || text != "it said cold" {
		t.Fatalf("resumed mid-loop: %+v %q, want the script's next turn", calls, text)
	}
	done := with(mid, "messages", append(asList(mid["messages"]), map[string]any{"role": "assistant", "content": "it said cold"}, map[string]any{"role": "user", "content": "and Paris?"}))
	_, body = postJSON(t, base, f.path(false), f.header, done)
	if calls, _, _, _, _ := readAnswer(t, body); len(calls) != 1 {
		t.Fatalf("a new prompt after the answer: %+v, want the script from its start", calls)
	}
}

// TestUsageLimitShapes: a plan's usage window, in each provider's way, says
// when it resets (on the simulator's clock).
func TestUsageLimitShapes(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	for _, r := range requests("gpt-6-astra", "claude-opus-5-5", "gemini-3-pro", "hi") {
		if strings.Contains(r.name, "stream") {
			continue
		}
		srv.AddFault(sim.Fault{Kind: "usage_limit", ResetsIn: 5400})
		resp, body := post(t, base, r)
		if resp.StatusCode != 429 {
			t.Fatalf("%s: %d %s", r.name, resp.StatusCode, body)
		}
		reset := srv.Clock().Now().Add(5400 * time.Second)
		near := func(unix int64) bool { return unix >= reset.Unix()-1 && unix <= reset.Unix()+1 }
		switch {
		case strings.HasPrefix(r.name, "chat"), strings.HasPrefix(r.name, "responses"):
			var e struct {
				Error struct {
					Type     string `json:"type"`
					ResetsAt int64  `json:"resets_at"`
					In       int    `json:"resets_in_seconds"`
				}
			}
			json.Unmarshal(body, &e)
			if e.Error.Type != "usage_limit_reached" || !near(e.Error.ResetsAt) || e.Error.In < 5398 {
				t.Fatalf("%s: %s", r.name, body)
			}
		case strings.HasPrefix(r.name, "messages"):
			at, _ := strconv.ParseInt(resp.Header.Get("anthropic-ratelimit-unified-reset"), 10, 64)
			if !near(at) || !strings.Contains(string(body), "Claude usage limit reached. Your limit will reset at ") {
				t.Fatalf("%s: %v %s", r.name, resp.Header, body)
			}
		case strings.HasPrefix(r.name, "gemini"):
			if !strings.Contains(string(body), `"retryDelay":"5400s"`) && !strings.Contains(string(body), `"retryDelay":"5399s"`) || !strings.Contains(string(body), "PerDay") {
				t.Fatalf("%s: %s", r.name, body)
			}
		}
	}
	if n := srv.Snapshot().Models["gpt-6-astra"].Rejected["usage_limit"]; n != 2 {
		t.Fatalf("counted %d usage limits for gpt-6-astra, want 2", n)
	}
}
