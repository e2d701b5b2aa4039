package sim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// convo is a request's conversation, read the same way from each wire
// format: the tools it declares and its turns with their tool calls and
// results. The simulator checks it as strictly as the providers do, and a
// script answers from where it stands.
type convo struct {
	tools []tool
	turns []turn
	// thinking: a Messages request with thinking on (enabled or adaptive)
	thinking bool
	// systemTurns: role "system" entries inside messages are allowed (Claude
	// Code's per-turn-control beta)
	systemTurns bool
	// noMaxTokens: a Messages request without max_tokens
	noMaxTokens bool
}

// tool is a tool the request declares.
type tool struct {
	name   string
	custom bool           // a freeform tool: its input is text, not JSON
	schema map[string]any // the JSON schema of a function's arguments
	desc   string
}

// turn is one turn of the conversation: a message, or a run of items of one
// role (the Responses API's function calls and their outputs).
type turn struct {
	role  string // user, assistant, system, developer, tool (Chat and Responses results), or the format's own (Gemini: model)
	at    int    // its index in the request's list
	text  bool   // it has text of its own
	calls []callRef
	// results are tool results: in a user turn (Messages, Gemini) or a
	// tool turn (Chat, Responses)
	results []resultRef
	// first is the type of its first content block (Messages)
	first string
}

type callRef struct {
	id, name string
	at       int // its index within the turn (the content block, the part), or in the list (Responses)
}

type resultRef struct {
	id, name, text string
	at             int
}

func (t turn) assistant() bool { return t.role == "assistant" || t.role == "model" }

// tool returns the declared tool of that name.
func (cv *convo) tool(name string) (tool, bool) {
	for _, t := range cv.tools {
		if t.name == name {
			return t, true
		}
	}
	return tool{}, false
}

// promptAt is the index of the prompt the model's current work answers,
// -1 when there is none: the last prompt (a user turn with text and no tool
// results), or, when that prompt came in the middle of a tool loop (the
// last model or tool-result turn before it brought results back that the
// model never answered, as in a session resumed after a failure), the
// prompt of that loop.
func (cv *convo) promptAt() int {
	prompt := func(t turn) bool { return (t.role == "user" || t.role == "") && t.text && len(t.results) == 0 }
	at := len(cv.turns)
	for {
		p := -1
		for i := at - 1; i >= 0; i-- {
			if prompt(cv.turns[i]) {
				p = i
				break
			}
		}
		if p < 0 {
			return p
		}
		// the last turn of the loop before it: the model's, or results
		cut := -1
		for i := p - 1; i >= 0; i-- {
			if t := cv.turns[i]; t.assistant() || len(t.results) > 0 {
				if len(t.results) > 0 {
					cut = i
				}
				break
			}
		}
		if cut < 0 {
			return p
		}
		at = cut
	}
}

// midLoop reports a request that brings tool results back: its last turn
// carries them.
func (cv *convo) midLoop() bool {
	return len(cv.turns) > 0 && len(cv.turns[len(cv.turns)-1].results) > 0
}

// callsSincePrompt is how many tool calls the model made since the last
// prompt: where a script stands.
// Calls are counted, not turns, so a turn's parallel calls count alike
// whether their results come after all of them or after each (the Responses
// API takes both orders).
func (cv *convo) callsSincePrompt() int {
	n := 0
	for _, t := range cv.turns[cv.promptAt()+1:] {
		if t.assistant() {
			n += len(t.calls)
		}
	}
	return n
}

// results is the text of the last n tool results since the last prompt,
// one a line.
func (cv *convo) results(n int) string {
	var texts []string
	for _, t := range cv.turns[cv.promptAt()+1:] {
		for _, r := range t.results {
			texts = append(texts, r.text)
		}
	}
	return strings.Join(texts[max(0, len(texts)-n):], "\n")
}

// resultText is a tool result's content as text: a string, a list of parts
// with text, or (Gemini's response object) its output, else its JSON.
func resultText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var b strings.Builder
		for _, p := range x {
			if pm, ok := p.(map[string]any); ok {
				b.WriteString(str(pm["text"]))
			} else if s, ok := p.(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	case map[string]any:
		for _, k := range []string{"output", "result", "content"} {
			if s, ok := x[k].(string); ok {
				return s
			}
		}
		b, _ := json.Marshal(x)
		return string(b)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func hasText(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x) != ""
	case []any:
		for _, p := range x {
			if pm, ok := p.(map[string]any); ok {
				switch str(pm["type"]) {
				case "", "text", "input_text", "output_text":
					if strings.TrimSpace(str(pm["text"])) != "" {
						return true
					}
				}
			}
		}
	}
	return false
}

func schemaOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// ---- reading each format ----

// chatConvo reads a Chat Completions request.
func chatConvo(m map[string]any) *convo {
	cv := &convo{}
	for _, t := range list(m["tools"]) {
		switch str(t["type"]) {
		case "function":
			f, _ := t["function"].(map[string]any)
			cv.tools = append(cv.tools, tool{name: str(f["name"]), schema: schemaOf(f["parameters"]), desc: str(f["description"])})
		case "custom":
			f, _ := t["custom"].(map[string]any)
			cv.tools = append(cv.tools, tool{name: str(f["name"]), custom: true, desc: str(f["description"])})
		}
	}
	for i, msg := range list(m["messages"]) {
		role := str(msg["role"])
		if role == "tool" {
			r := resultRef{id: str(msg["tool_call_id"]), text: resultText(msg["content"]), at: i}
			if n := len(cv.turns); n > 0 && cv.turns[n-1].role == "tool" {
				cv.turns[n-1].results = append(cv.turns[n-1].results, r)
				continue
			}
			cv.turns = append(cv.turns, turn{role: role, at: i, results: []resultRef{r}})
			continue
		}
		t := turn{role: role, at: i, text: hasText(msg["content"])}
		for j, tc := range list(msg["tool_calls"]) {
			name := ""
			if f, ok := tc["function"].(map[string]any); ok {
				name = str(f["name"])
			} else if f, ok := tc["custom"].(map[string]any); ok {
				name = str(f["name"])
			}
			t.calls = append(t.calls, callRef{id: str(tc["id"]), name: name, at: j})
		}
		cv.turns = append(cv.turns, t)
	}
	return cv
}

// responsesTools reads a Responses tool list: functions, custom tools, and
// namespaces of them (Codex's additional_tools item).
func responsesTools(cv *convo, tools []map[string]any) {
	for _, t := range tools {
		switch str(t["type"]) {
		case "function":
			cv.tools = append(cv.tools, tool{name: str(t["name"]), schema: schemaOf(t["parameters"]), desc: str(t["description"])})
		case "custom":
			cv.tools = append(cv.tools, tool{name: str(t["name"]), custom: true, desc: str(t["description"])})
		case "namespace":
			responsesTools(cv, list(t["tools"]))
		}
	}
}

// responsesConvo reads a Responses request.
func responsesConvo(m map[string]any) *convo {
	cv := &convo{}
	responsesTools(cv, list(m["tools"]))
	if s, ok := m["input"].(string); ok {
		cv.turns = []turn{{role: "user", text: strings.TrimSpace(s) != ""}}
		return cv
	}
	add := func(t turn) {
		if n := len(cv.turns); n > 0 && (t.role == "assistant" || t.role == "tool") && cv.turns[n-1].role == t.role && !t.text {
			last := &cv.turns[n-1]
			last.calls = append(last.calls, t.calls...)
			last.results = append(last.results, t.results...)
			return
		}
		cv.turns = append(cv.turns, t)
	}
	for i, it := range list(m["input"]) {
		switch typ := str(it["type"]); typ {
		case "additional_tools":
			responsesTools(cv, list(it["tools"]))
		case "function_call", "custom_tool_call":
			add(turn{role: "assistant", at: i, calls: []callRef{{id: str(it["call_id"]), name: str(it["name"]), at: i}}})
		case "function_call_output", "custom_tool_call_output":
			add(turn{role: "tool", at: i, results: []resultRef{{id: str(it["call_id"]), text: resultText(it["output"]), at: i}}})
		case "reasoning":
			add(turn{role: "assistant", at: i})
		case "message", "":
			if _, ok := it["role"]; ok {
				cv.turns = append(cv.turns, turn{role: str(it["role"]), at: i, text: hasText(it["content"])})
			}
		}
	}
	return cv
}

// messagesConvo reads an Anthropic Messages request; beta is its
// anthropic-beta header.
func messagesConvo(m map[string]any, beta string) *convo {
	cv := &convo{systemTurns: strings.Contains(beta, "per-turn-control")}
	if _, ok := m["max_tokens"]; !ok {
		cv.noMaxTokens = true
	}
	if th, ok := m["thinking"].(map[string]any); ok {
		switch str(th["type"]) {
		case "enabled", "adaptive":
			cv.thinking = true
		}
	}
	for _, t := range list(m["tools"]) {
		if str(t["type"]) == "" || str(t["type"]) == "custom" {
			cv.tools = append(cv.tools, tool{name: str(t["name"]), schema: schemaOf(t["input_schema"]), desc: str(t["description"])})
		} else if n := str(t["name"]); n != "" { // a server tool (bash_20250124, web_search_…): its name
			cv.tools = append(cv.tools, tool{name: n})
		}
	}
	for i, msg := range list(m["messages"]) {
		t := turn{role: str(msg["role"]), at: i}
		if s, ok := msg["content"].(string); ok {
			t.text, t.first = strings.TrimSpace(s) != "", "text"
			cv.turns = append(cv.turns, t)
			continue
		}
		for j, b := range list(msg["content"]) {
			typ := str(b["type"])
			if j == 0 {
				t.first = typ
			}
			switch typ {
			case "text":
				if strings.TrimSpace(str(b["text"])) != "" {
					t.text = true
				}
			case "tool_use":
				t.calls = append(t.calls, callRef{id: str(b["id"]), name: str(b["name"]), at: j})
			case "tool_result":
				t.results = append(t.results, resultRef{id: str(b["tool_use_id"]), text: resultText(b["content"]), at: j})
			}
		}
		cv.turns = append(cv.turns, t)
	}
	return cv
}

// geminiConvo reads a Gemini generateContent request.
func geminiConvo(m map[string]any) *convo {
	cv := &convo{}
	for _, t := range list(m["tools"]) {
		for _, f := range list(t["functionDeclarations"]) {
			schema := schemaOf(f["parametersJsonSchema"])
			if schema == nil {
				schema = schemaOf(f["parameters"])
			}
			cv.tools = append(cv.tools, tool{name: str(f["name"]), schema: schema, desc: str(f["description"])})
		}
	}
	for i, c := range list(m["contents"]) {
		t := turn{role: str(c["role"]), at: i}
		if t.role == "" {
			t.role = "user"
		}
		for j, p := range list(c["parts"]) {
			if fc, ok := p["functionCall"].(map[string]any); ok {
				t.calls = append(t.calls, callRef{id: str(fc["id"]), name: str(fc["name"]), at: j})
			}
			if fr, ok := p["functionResponse"].(map[string]any); ok {
				t.results = append(t.results, resultRef{id: str(fr["id"]), name: str(fr["name"]), text: resultText(fr["response"]), at: j})
			}
			if th, _ := p["thought"].(bool); !th && strings.TrimSpace(str(p["text"])) != "" {
				t.text = true
			}
		}
		cv.turns = append(cv.turns, t)
	}
	return cv
}

// list is v as a list of objects (what is not an object is left out).
func list(v any) []map[string]any {
	items, _ := v.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// ---- the providers' rules ----

// check applies the provider's rules to the conversation; "" when it
// passes, else the provider's own 400 message.
func (cv *convo) check(provider string) string {
	switch provider {
	case "anthropic":
		return cv.checkMessages()
	case "gemini":
		return cv.checkGemini()
	case "openai-responses":
		return cv.checkResponses()
	case "openai":
		return cv.checkChat()
	}
	return ""
}

// unknownTool is the first call of a known-tools conversation whose tool
// the request does not declare.
func (cv *convo) unknownTool() (turn, callRef, bool) {
	if len(cv.tools) == 0 {
		return turn{}, callRef{}, false
	}
	for _, t := range cv.turns {
		for _, c := range t.calls {
			if _, ok := cv.tool(c.name); !ok {
				return t, c, true
			}
		}
	}
	return turn{}, callRef{}, false
}

// neighbour is the index of the turn before (step -1) or after (+1) turn i,
// system turns passed over; -1 when there is none.
func (cv *convo) neighbour(i, step int) int {
	for j := i + step; j >= 0 && j < len(cv.turns); j += step {
		if cv.turns[j].role != "system" {
			return j
		}
	}
	return -1
}

// unanswered are the ids of the calls no result answers.
func unanswered(calls []callRef, results []resultRef) []string {
	got := map[string]bool{}
	for _, r := range results {
		got[r.id] = true
	}
	var missing []string
	for _, c := range calls {
		if !got[c.id] {
			missing = append(missing, c.id)
		}
	}
	return missing
}

func ids(cs []callRef) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		out[c.id] = true
	}
	return out
}

func (cv *convo) checkMessages() string {
	if cv.noMaxTokens {
		return "max_tokens: Field required"
	}
	seenUser := false
	for i, t := range cv.turns {
		switch t.role {
		case "user", "assistant":
		case "system":
			if cv.systemTurns {
				continue
			}
			fallthrough
		default:
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", t.at)
		}
		if !seenUser && t.role != "user" {
			return `messages: first message must use the "user" role`
		}
		seenUser = true
		if len(t.results) > 0 {
			prev := cv.neighbour(i, -1)
			var calls map[string]bool
			if prev >= 0 && cv.turns[prev].role == "assistant" {
				calls = ids(cv.turns[prev].calls)
			}
			for _, r := range t.results {
				if !calls[r.id] {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", t.at, r.at, r.id)
				}
			}
		}
		if t.role == "assistant" && len(t.calls) > 0 {
			if next := cv.neighbour(i, 1); next >= 0 {
				if missing := unanswered(t.calls, cv.turns[next].results); len(missing) > 0 {
					return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", t.at, strings.Join(missing, ", "))
				}
			}
		}
	}
	if cv.thinking {
		// the tool loop in progress: the last assistant turn called tools
		// and the request ends with their results
		for i := len(cv.turns) - 1; i >= 0; i-- {
			t := cv.turns[i]
			if t.role != "assistant" {
				continue
			}
			if len(t.calls) > 0 && cv.neighbour(i, 1) == len(cv.turns)-1 && t.first != "thinking" && t.first != "redacted_thinking" {
				return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", t.at, t.first)
			}
			break
		}
	}
	if t, c, ok := cv.unknownTool(); ok {
		return fmt.Sprintf("messages.%d.content.%d: tool_use.name: %q is not the name of any of the request's tools", t.at, c.at, c.name)
	}
	return ""
}

func (cv *convo) checkChat() string {
	for i, t := range cv.turns {
		switch t.role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", t.role)
		}
		if t.role == "tool" {
			var calls map[string]bool
			if i > 0 && cv.turns[i-1].role == "assistant" {
				calls = ids(cv.turns[i-1].calls)
			}
			for _, r := range t.results {
				if !calls[r.id] {
					return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
				}
			}
		}
		if t.role == "assistant" && len(t.calls) > 0 && i+1 < len(cv.turns) {
			var results []resultRef
			if cv.turns[i+1].role == "tool" {
				results = cv.turns[i+1].results
			}
			if missing := unanswered(t.calls, results); len(missing) > 0 {
				return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(missing, ", ")
			}
		}
	}
	if t, c, ok := cv.unknownTool(); ok {
		return fmt.Sprintf("messages.[%d].tool_calls.[%d]: tool %q is not among the request's tools", t.at, c.at, c.name)
	}
	return ""
}

func (cv *convo) checkResponses() string {
	calls, outputs := map[string]bool{}, map[string]bool{}
	for _, t := range cv.turns {
		switch t.role {
		case "user", "assistant", "system", "developer", "tool":
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", t.role)
		}
		for _, c := range t.calls {
			calls[c.id] = true
		}
		for _, r := range t.results {
			if !calls[r.id] {
				return fmt.Sprintf("No tool call found for function call output with call_id %s.", r.id)
			}
			outputs[r.id] = true
		}
	}
	for _, t := range cv.turns {
		for _, c := range t.calls {
			if !outputs[c.id] {
				return fmt.Sprintf("No tool output found for function call %s.", c.id)
			}
		}
	}
	if _, c, ok := cv.unknownTool(); ok {
		return fmt.Sprintf("input[%d]: tool %q is not among the request's tools", c.at, c.name)
	}
	return ""
}

func (cv *convo) checkGemini() string {
	for i, t := range cv.turns {
		if t.role != "user" && t.role != "model" {
			return "Please use a valid role: user, model."
		}
		if len(t.calls) > 0 && i > 0 && cv.turns[i-1].role != "user" {
			return "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
		}
		if len(t.results) > 0 {
			if i == 0 || len(cv.turns[i-1].calls) == 0 {
				return "Please ensure that function response turn comes immediately after a function call turn."
			}
			if len(t.results) != len(cv.turns[i-1].calls) {
				return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
			}
		}
		if len(t.calls) > 0 && i+1 < len(cv.turns) && len(cv.turns[i+1].results) != len(t.calls) {
			return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
		}
	}
	if t, c, ok := cv.unknownTool(); ok {
		return fmt.Sprintf("contents[%d].parts[%d].function_call.name: %q is not declared in the request's tools", t.at, c.at, c.name)
	}
	return ""
}
