package format

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ---- OpenAI Responses (Codex) ----

func readResponses(m map[string]any) (*Request, error) {
	switch {
	case Str(m["previous_response_id"]) != "":
		return nil, fmt.Errorf("it continues a stored response (previous_response_id), which only OpenAI has")
	case m["conversation"] != nil:
		return nil, fmt.Errorf("it continues a stored conversation (conversation), which only OpenAI has")
	case m["store"] == true:
		return nil, fmt.Errorf("it asks OpenAI to store the response (store: true) for a later request to continue")
	case m["background"] == true:
		return nil, fmt.Errorf("it is a background response")
	}
	r := &Request{Stream: m["stream"] == true}
	if s := Str(m["instructions"]); s != "" {
		r.System = append(r.System, s)
	}
	if err := responsesTools(r, Objs(m["tools"]), ""); err != nil {
		return nil, err
	}
	if s, ok := m["input"].(string); ok {
		r.Add("user", Part{Kind: Text, Text: s})
	}
	for i, it := range Objs(m["input"]) {
		switch typ := Str(it["type"]); typ {
		case "additional_tools":
			if err := responsesTools(r, Objs(it["tools"]), ""); err != nil {
				return nil, err
			}
		case "message", "":
			role := Str(it["role"])
			parts, err := responsesContent(it["content"])
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %v", i, err)
			}
			switch role {
			case "system", "developer":
				if t := ResultText(parts); t != "" {
					r.System = append(r.System, t)
				}
			case "user", "assistant":
				r.Add(role, parts...)
			default:
				return nil, fmt.Errorf("input[%d] has the role %q", i, role)
			}
		case "function_call":
			r.Add("assistant", Part{Kind: Call, ID: Str(it["call_id"]), Name: Str(it["name"]), Args: ArgsText(it["arguments"]), Namespace: Str(it["namespace"])})
		case "custom_tool_call":
			in, _ := json.Marshal(map[string]string{"input": Str(it["input"])})
			r.Add("assistant", Part{Kind: Call, ID: Str(it["call_id"]), Name: Str(it["name"]), Args: string(in)})
		case "function_call_output", "custom_tool_call_output":
			res := Part{Kind: Result, ID: Str(it["call_id"])}
			if s, ok := it["output"].(string); ok {
				res.Content = []Part{{Kind: Text, Text: s}}
			} else {
				var err error
				if res.Content, err = responsesContent(it["output"]); err != nil {
					return nil, fmt.Errorf("input[%d]: %v", i, err)
				}
			}
			r.Add("user", res)
		case "reasoning":
			// OpenAI's own (encrypted) reasoning: it goes back to OpenAI only
		case "item_reference":
			return nil, fmt.Errorf("input[%d] refers to a stored item, which only OpenAI has", i)
		default:
			return nil, fmt.Errorf("input[%d] is a %s item, which no other vendor takes", i, typ)
		}
	}
	r.MaxTokens = IntOf(m["max_output_tokens"])
	r.Temperature, r.TopP = FPtr(m["temperature"]), FPtr(m["top_p"])
	if rs := Obj(m["reasoning"]); rs != nil {
		r.Effort = Str(rs["effort"])
	}
	if f := Obj(Obj(m["text"])["format"]); f != nil {
		switch Str(f["type"]) {
		case "json_schema":
			r.Schema = &Schema{Name: Str(f["name"]), Schema: Raw(f["schema"]), Strict: f["strict"] == true}
		case "json_object":
			r.JSONObject = true
		}
	}
	r.Choice = openAIChoice(m["tool_choice"])
	r.NoParallel = m["parallel_tool_calls"] == false
	return r, nil
}

// responsesTools reads a Responses tool list: functions, freeform (custom)
// tools, and namespaces of them.
func responsesTools(r *Request, tools []map[string]any, ns string) error {
	for _, t := range tools {
		switch typ := Str(t["type"]); typ {
		case "function":
			r.Tools = append(r.Tools, Tool{Name: Str(t["name"]), Namespace: ns, Description: Str(t["description"]), Schema: Raw(t["parameters"])})
		case "custom":
			desc := Str(t["description"])
			if f := Obj(t["format"]); Str(f["type"]) == "grammar" {
				desc += "\n\nThe input follows this " + Str(f["syntax"]) + " grammar:\n" + Str(f["definition"])
			}
			r.Tools = append(r.Tools, Tool{Name: Str(t["name"]), Namespace: ns, Description: desc, Custom: true})
		case "namespace":
			if err := responsesTools(r, Objs(t["tools"]), Str(t["name"])); err != nil {
				return err
			}
		default:
			return fmt.Errorf("it uses the hosted tool %s, which runs at OpenAI", typ)
		}
	}
	return nil
}

// responsesContent reads a Responses message's content.
func responsesContent(v any) ([]Part, error) {
	if s, ok := v.(string); ok {
		return []Part{{Kind: Text, Text: s}}, nil
	}
	var out []Part
	for _, c := range Objs(v) {
		switch typ := Str(c["type"]); typ {
		case "input_text", "output_text", "text":
			out = append(out, Part{Kind: Text, Text: Str(c["text"])})
		case "refusal":
			out = append(out, Part{Kind: Text, Text: Str(c["refusal"])})
		case "input_image":
			u := Str(c["image_url"])
			if u == "" {
				return nil, fmt.Errorf("an image by file_id is stored at OpenAI")
			}
			out = append(out, ImagePart(u))
		case "input_file":
			mime, data, ok := DataURL(Str(c["file_data"]))
			if !ok {
				return nil, fmt.Errorf("a file by file_id or URL is stored at OpenAI")
			}
			out = append(out, Part{Kind: Document, MIME: mime, Data: data, Filename: Str(c["filename"])})
		case "input_audio":
			return nil, fmt.Errorf("it has audio")
		default:
			return nil, fmt.Errorf("a %s part no other vendor takes", typ)
		}
	}
	return out, nil
}

// openAIChoice reads a tool_choice of Chat or Responses.
func openAIChoice(v any) Choice {
	switch c := v.(type) {
	case string:
		switch c {
		case "none", "required":
			return Choice{Mode: c}
		}
	case map[string]any:
		name := Str(c["name"])
		if f := Obj(c["function"]); f != nil {
			name = Str(f["name"])
		}
		if name != "" {
			return Choice{Mode: "tool", Name: name}
		}
	}
	return Choice{}
}

// ---- OpenAI Chat Completions ----

func readChat(m map[string]any) (*Request, error) {
	if n, ok := Num(m["n"]); ok && n > 1 {
		return nil, fmt.Errorf("it asks for %d answers (n), which no other vendor gives", int(n))
	}
	if m["audio"] != nil || m["modalities"] != nil && strings.Contains(fmt.Sprint(m["modalities"]), "audio") {
		return nil, fmt.Errorf("it asks for audio")
	}
	r := &Request{Stream: m["stream"] == true, IncludeUsage: Obj(m["stream_options"])["include_usage"] == true}
	for _, t := range Objs(m["tools"]) {
		switch typ := Str(t["type"]); typ {
		case "function":
			f := Obj(t["function"])
			r.Tools = append(r.Tools, Tool{Name: Str(f["name"]), Description: Str(f["description"]), Schema: Raw(f["parameters"])})
		case "custom":
			f := Obj(t["custom"])
			r.Tools = append(r.Tools, Tool{Name: Str(f["name"]), Description: Str(f["description"]), Custom: true})
		default:
			return nil, fmt.Errorf("it uses the tool type %s", typ)
		}
	}
	for i, msg := range Objs(m["messages"]) {
		role := Str(msg["role"])
		parts, err := chatContent(msg["content"])
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %v", i, err)
		}
		switch role {
		case "system", "developer":
			if t := ResultText(parts); t != "" {
				r.System = append(r.System, t)
			}
		case "user":
			r.Add("user", parts...)
		case "assistant":
			for _, tc := range Objs(msg["tool_calls"]) {
				if f := Obj(tc["function"]); f != nil {
					parts = append(parts, Part{Kind: Call, ID: Str(tc["id"]), Name: Str(f["name"]), Args: ArgsText(f["arguments"])})
				} else if f := Obj(tc["custom"]); f != nil {
					in, _ := json.Marshal(map[string]string{"input": Str(f["input"])})
					parts = append(parts, Part{Kind: Call, ID: Str(tc["id"]), Name: Str(f["name"]), Args: string(in)})
				}
			}
			r.Add("assistant", parts...)
		case "tool", "function":
			r.Add("user", Part{Kind: Result, ID: Str(msg["tool_call_id"]), Name: Str(msg["name"]), Content: parts})
		default:
			return nil, fmt.Errorf("messages[%d] has the role %q", i, role)
		}
	}
	r.MaxTokens = IntOf(m["max_completion_tokens"])
	if r.MaxTokens == 0 {
		r.MaxTokens = IntOf(m["max_tokens"])
	}
	r.Temperature, r.TopP = FPtr(m["temperature"]), FPtr(m["top_p"])
	switch s := m["stop"].(type) {
	case string:
		r.Stop = []string{s}
	case []any:
		r.Stop = Strs(s)
	}
	r.Effort = Str(m["reasoning_effort"])
	if f := Obj(m["response_format"]); f != nil {
		switch Str(f["type"]) {
		case "json_schema":
			js := Obj(f["json_schema"])
			r.Schema = &Schema{Name: Str(js["name"]), Schema: Raw(js["schema"]), Strict: js["strict"] == true}
		case "json_object":
			r.JSONObject = true
		}
	}
	r.Choice = openAIChoice(m["tool_choice"])
	r.NoParallel = m["parallel_tool_calls"] == false
	return r, nil
}

// chatContent reads a Chat message's content.
func chatContent(v any) ([]Part, error) {
	if s, ok := v.(string); ok {
		if s == "" {
			return nil, nil
		}
		return []Part{{Kind: Text, Text: s}}, nil
	}
	var out []Part
	for _, c := range Objs(v) {
		switch typ := Str(c["type"]); typ {
		case "text":
			out = append(out, Part{Kind: Text, Text: Str(c["text"])})
		case "refusal":
			out = append(out, Part{Kind: Text, Text: Str(c["refusal"])})
		case "image_url":
			out = append(out, ImagePart(Str(Obj(c["image_url"])["url"])))
		case "file":
			f := Obj(c["file"])
			mime, data, ok := DataURL(Str(f["file_data"]))
			if !ok {
				return nil, fmt.Errorf("a file by file_id is stored at OpenAI")
			}
			out = append(out, Part{Kind: Document, MIME: mime, Data: data, Filename: Str(f["filename"])})
		case "input_audio":
			return nil, fmt.Errorf("it has audio")
		default:
			return nil, fmt.Errorf("a %s part no other vendor takes", typ)
		}
	}
	return out, nil
}

// ---- Anthropic Messages (Claude Code) ----

// billingHeader starts the system block Claude Code sends for Anthropic's
// billing: it means nothing to another vendor.
const billingHeader = "x-anthropic-billing-header"

func readMessages(m map[string]any) (*Request, error) {
	r := &Request{Stream: m["stream"] == true}
	switch s := m["system"].(type) {
	case string:
		if s != "" {
			r.System = append(r.System, s)
		}
	case []any:
		for _, b := range Objs(s) {
			if t := Str(b["text"]); t != "" && !strings.HasPrefix(t, billingHeader) {
				r.System = append(r.System, t)
			}
		}
	}
	for _, t := range Objs(m["tools"]) {
		switch typ := Str(t["type"]); typ {
		case "", "custom":
			r.Tools = append(r.Tools, Tool{Name: Str(t["name"]), Description: Str(t["description"]), Schema: Raw(t["input_schema"])})
		default:
			return nil, fmt.Errorf("it uses Anthropic's server tool %s", typ)
		}
	}
	for i, msg := range Objs(m["messages"]) {
		role := Str(msg["role"])
		parts, err := messagesContent(msg["content"])
		if err != nil {
			return nil, fmt.Errorf("messages.%d: %v", i, err)
		}
		switch role {
		case "system":
			if t := ResultText(parts); t != "" {
				r.System = append(r.System, t)
			}
		case "user", "assistant":
			r.Add(role, parts...)
		default:
			return nil, fmt.Errorf("messages.%d has the role %q", i, role)
		}
	}
	r.MaxTokens = IntOf(m["max_tokens"])
	r.Temperature, r.TopP = FPtr(m["temperature"]), FPtr(m["top_p"])
	if k, ok := Num(m["top_k"]); ok {
		n := int(k)
		r.TopK = &n
	}
	r.Stop = Strs(m["stop_sequences"])
	if th := Obj(m["thinking"]); th != nil {
		switch Str(th["type"]) {
		case "enabled":
			r.Budget = IntOf(th["budget_tokens"])
			r.Effort = BudgetEffort(r.Budget)
		case "adaptive":
			r.Effort = "medium"
		}
	}
	if oc := Obj(m["output_config"]); oc != nil {
		if e := Str(oc["effort"]); e != "" && r.Effort != "" {
			r.Effort = e
		}
		if f := Obj(oc["format"]); Str(f["type"]) == "json_schema" {
			r.Schema = &Schema{Name: "output", Schema: Raw(f["schema"]), Strict: true}
		}
	}
	if f := Obj(m["output_format"]); Str(f["type"]) == "json_schema" {
		r.Schema = &Schema{Name: "output", Schema: Raw(f["schema"]), Strict: true}
	}
	if tc := Obj(m["tool_choice"]); tc != nil {
		switch Str(tc["type"]) {
		case "any":
			r.Choice = Choice{Mode: "required"}
		case "tool":
			r.Choice = Choice{Mode: "tool", Name: Str(tc["name"])}
		case "none":
			r.Choice = Choice{Mode: "none"}
		}
		r.NoParallel = tc["disable_parallel_tool_use"] == true
	}
	return r, nil
}

// messagesContent reads a Messages turn's content.
func messagesContent(v any) ([]Part, error) {
	if s, ok := v.(string); ok {
		return []Part{{Kind: Text, Text: s}}, nil
	}
	var out []Part
	for _, b := range Objs(v) {
		switch typ := Str(b["type"]); typ {
		case "text":
			out = append(out, Part{Kind: Text, Text: Str(b["text"])})
		case "image", "document":
			p, err := messagesSource(typ, b)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		case "tool_use":
			out = append(out, Part{Kind: Call, ID: Str(b["id"]), Name: Str(b["name"]), Args: ArgsText(b["input"])})
		case "tool_result":
			res := Part{Kind: Result, ID: Str(b["tool_use_id"]), Error: b["is_error"] == true}
			content, err := messagesContent(b["content"])
			if err != nil {
				return nil, err
			}
			res.Content = content
			out = append(out, res)
		case "thinking", "redacted_thinking":
			// Anthropic's own reasoning, signed: it goes back to Anthropic only
		default:
			return nil, fmt.Errorf("a %s block, which no other vendor takes", typ)
		}
	}
	return out, nil
}

// messagesSource reads an image or document block's source.
func messagesSource(typ string, b map[string]any) (Part, error) {
	kind := Image
	if typ == "document" {
		kind = Document
	}
	src := Obj(b["source"])
	switch Str(src["type"]) {
	case "base64":
		return Part{Kind: kind, MIME: Str(src["media_type"]), Data: Str(src["data"])}, nil
	case "url":
		return Part{Kind: kind, URL: Str(src["url"])}, nil
	case "text":
		return Part{Kind: Text, Text: Str(src["data"])}, nil
	}
	return Part{}, fmt.Errorf("a %s by %s, stored at Anthropic", typ, Str(src["type"]))
}

// ---- Gemini ----

func readGemini(m map[string]any, stream bool) (*Request, error) {
	r := &Request{Stream: stream}
	if si := Obj(m["systemInstruction"]); si != nil {
		for _, p := range Objs(si["parts"]) {
			if t := Str(p["text"]); t != "" {
				r.System = append(r.System, t)
			}
		}
	}
	for _, t := range Objs(m["tools"]) {
		for k := range t {
			if k != "functionDeclarations" {
				return nil, fmt.Errorf("it uses Gemini's hosted tool %s", k)
			}
		}
		for _, f := range Objs(t["functionDeclarations"]) {
			schema := f["parametersJsonSchema"]
			if schema == nil {
				schema = geminiSchema(f["parameters"])
			}
			r.Tools = append(r.Tools, Tool{Name: Str(f["name"]), Description: Str(f["description"]), Schema: Raw(schema)})
		}
	}
	// Gemini's calls may have no ids: a call without one gets one from
	// its place, and the results of the next turn are paired with the
	// calls by name, in order
	var pending []Part // the last model turn's calls
	for i, c := range Objs(m["contents"]) {
		role := Str(c["role"])
		if role == "" {
			role = "user"
		}
		var parts []Part
		var calls []Part
		for j, p := range Objs(c["parts"]) {
			switch {
			case p["thought"] == true:
				// Gemini's own reasoning: back to Gemini only
			case p["functionCall"] != nil:
				fc := Obj(p["functionCall"])
				id := Str(fc["id"])
				if id == "" {
					id = fmt.Sprintf("call_g%d_%d", i, j)
				}
				call := Part{Kind: Call, ID: id, Name: Str(fc["name"]), Args: ArgsText(fc["args"])}
				parts, calls = append(parts, call), append(calls, call)
			case p["functionResponse"] != nil:
				fr := Obj(p["functionResponse"])
				res := Part{Kind: Result, ID: Str(fr["id"]), Name: Str(fr["name"])}
				known := false
				for _, pc := range pending {
					known = known || res.ID != "" && pc.ID == res.ID
				}
				if !known {
					// no id, or one of the client's own (Gemini CLI makes
					// one for a call that came without): paired by name
					for k, pc := range pending {
						if pc.Name == res.Name {
							res.ID = pc.ID
							pending = append(pending[:k:k], pending[k+1:]...)
							break
						}
					}
				}
				resp := Obj(fr["response"])
				text := ""
				if s, ok := resp["output"].(string); ok && len(resp) == 1 {
					text = s
				} else if e, ok := resp["error"]; ok && len(resp) == 1 {
					text, res.Error = ArgsText(e), true
					if s, ok := e.(string); ok {
						text = s
					}
				} else {
					text = ArgsText(resp)
				}
				res.Content = []Part{{Kind: Text, Text: text}}
				parts = append(parts, res)
			case p["inlineData"] != nil:
				d := Obj(p["inlineData"])
				kind := Image
				if !strings.HasPrefix(Str(d["mimeType"]), "image/") {
					kind = Document
				}
				parts = append(parts, Part{Kind: kind, MIME: Str(d["mimeType"]), Data: Str(d["data"])})
			case p["fileData"] != nil:
				d := Obj(p["fileData"])
				if !strings.HasPrefix(Str(d["fileUri"]), "http") {
					return nil, fmt.Errorf("contents[%d] has a file uploaded to Gemini", i)
				}
				kind := Image
				if !strings.HasPrefix(Str(d["mimeType"]), "image/") {
					kind = Document
				}
				parts = append(parts, Part{Kind: kind, MIME: Str(d["mimeType"]), URL: Str(d["fileUri"])})
			case p["executableCode"] != nil || p["codeExecutionResult"] != nil:
				return nil, fmt.Errorf("contents[%d] has Gemini's code execution", i)
			case p["text"] != nil:
				if t := Str(p["text"]); t != "" {
					parts = append(parts, Part{Kind: Text, Text: t})
				}
			}
		}
		switch role {
		case "model":
			r.Add("assistant", parts...)
			pending = calls
		case "user", "function":
			r.Add("user", parts...)
		default:
			return nil, fmt.Errorf("contents[%d] has the role %q", i, role)
		}
	}
	gc := Obj(m["generationConfig"])
	if n, ok := Num(gc["candidateCount"]); ok && n > 1 {
		return nil, fmt.Errorf("it asks for %d candidates, which no other vendor gives", int(n))
	}
	if mods := fmt.Sprint(gc["responseModalities"]); strings.Contains(strings.ToUpper(mods), "AUDIO") || strings.Contains(strings.ToUpper(mods), "IMAGE") {
		return nil, fmt.Errorf("it asks for %s output", mods)
	}
	r.MaxTokens = IntOf(gc["maxOutputTokens"])
	r.Temperature, r.TopP = FPtr(gc["temperature"]), FPtr(gc["topP"])
	if k, ok := Num(gc["topK"]); ok {
		n := int(k)
		r.TopK = &n
	}
	r.Stop = Strs(gc["stopSequences"])
	if tc := Obj(gc["thinkingConfig"]); tc != nil {
		if b, ok := Num(tc["thinkingBudget"]); ok && b > 0 {
			r.Budget = int(b)
			r.Effort = BudgetEffort(r.Budget)
		} else if l := strings.ToLower(Str(tc["thinkingLevel"])); l != "" {
			r.Effort = l
		}
	}
	if Str(gc["responseMimeType"]) == "application/json" {
		schema := gc["responseJsonSchema"]
		if schema == nil {
			schema = geminiSchema(gc["responseSchema"])
		}
		if schema != nil {
			r.Schema = &Schema{Name: "output", Schema: Raw(schema), Strict: true}
		} else {
			r.JSONObject = true
		}
	}
	if fc := Obj(Obj(m["toolConfig"])["functionCallingConfig"]); fc != nil {
		switch strings.ToUpper(Str(fc["mode"])) {
		case "ANY":
			r.Choice = Choice{Mode: "required"}
			if names, _ := fc["allowedFunctionNames"].([]any); len(names) == 1 {
				r.Choice = Choice{Mode: "tool", Name: Str(names[0])}
			}
		case "NONE":
			r.Choice = Choice{Mode: "none"}
		}
	}
	return r, nil
}

// geminiSchema is a Gemini OpenAPI-style schema (type names in capitals) as
// a JSON schema.
func geminiSchema(v any) any {
	switch s := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(s))
		for k, x := range s {
			switch k {
			case "type":
				out[k] = strings.ToLower(Str(x))
			case "properties":
				props := map[string]any{}
				for name, p := range Obj(x) {
					props[name] = geminiSchema(p)
				}
				out[k] = props
			case "items":
				out[k] = geminiSchema(x)
			case "anyOf", "oneOf", "allOf":
				var alts []any
				for _, a := range x.([]any) {
					alts = append(alts, geminiSchema(a))
				}
				out[k] = alts
			case "nullable":
			default:
				out[k] = x
			}
		}
		return out
	case nil:
		return nil
	}
	return v
}
