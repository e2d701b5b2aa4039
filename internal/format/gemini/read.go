package gemini

import (
	"fmt"
	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// ReadRequest reads a generateContent or streamGenerateContent request.
func (Format) ReadRequest(m map[string]any, ep wire.Endpoint) (*format.Request, error) {
	return read(m, ep.Kind == wire.StreamGenerateContent)
}

func read(m map[string]any, stream bool) (*format.Request, error) {
	r := &format.Request{Stream: stream}
	if si := format.Obj(m["systemInstruction"]); si != nil {
		for _, p := range format.Objs(si["parts"]) {
			if t := format.Str(p["text"]); t != "" {
				r.System = append(r.System, t)
			}
		}
	}
	for _, t := range format.Objs(m["tools"]) {
		for k := range t {
			if k != "functionDeclarations" {
				return nil, fmt.Errorf("it uses Gemini's hosted tool %s", k)
			}
		}
		for _, f := range format.Objs(t["functionDeclarations"]) {
			schema := f["parametersJsonSchema"]
			if schema == nil {
				schema = geminiSchema(f["parameters"])
			}
			r.Tools = append(r.Tools, format.Tool{Name: format.Str(f["name"]), Description: format.Str(f["description"]), Schema: format.Raw(schema)})
		}
	}
	if err := readContents(r, format.Objs(m["contents"])); err != nil {
		return nil, err
	}
	if err := readConfig(r, format.Obj(m["generationConfig"])); err != nil {
		return nil, err
	}
	if fc := format.Obj(format.Obj(m["toolConfig"])["functionCallingConfig"]); fc != nil {
		switch strings.ToUpper(format.Str(fc["mode"])) {
		case "ANY":
			r.Choice = format.Choice{Mode: "required"}
			if names, _ := fc["allowedFunctionNames"].([]any); len(names) == 1 {
				r.Choice = format.Choice{Mode: "tool", Name: format.Str(names[0])}
			}
		case "NONE":
			r.Choice = format.Choice{Mode: "none"}
		}
	}
	return r, nil
}

// readContents reads the conversation. Gemini's calls may have no ids: a
// call without one gets one from its place, and the results of the next
// turn are paired with the calls by name, in order.
func readContents(r *format.Request, contents []map[string]any) error {
	var pending []format.Part // the last model turn's calls
	for i, c := range contents {
		role := format.Str(c["role"])
		if role == "" {
			role = "user"
		}
		var parts []format.Part
		var calls []format.Part
		for j, p := range format.Objs(c["parts"]) {
			part, ok, err := readPart(p, i, j, &pending)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			parts = append(parts, part)
			if part.Kind == format.Call {
				calls = append(calls, part)
			}
		}
		switch role {
		case "model":
			r.Add("assistant", parts...)
			pending = calls
		case "user", "function":
			r.Add("user", parts...)
		default:
			return fmt.Errorf("contents[%d] has the role %q", i, role)
		}
	}
	return nil
}

// readPart reads part j of contents[i]; ok is false for a part that is not
// carried (Gemini's own reasoning, an empty text). A function response is
// paired with a call of pending, the last model turn's, which it takes.
func readPart(p map[string]any, i, j int, pending *[]format.Part) (part format.Part, ok bool, err error) {
	switch {
	case p["thought"] == true:
		// Gemini's own reasoning: back to Gemini only
	case p["functionCall"] != nil:
		fc := format.Obj(p["functionCall"])
		id := format.Str(fc["id"])
		if id == "" {
			id = fmt.Sprintf("call_g%d_%d", i, j)
		}
		return format.Part{Kind: format.Call, ID: id, Name: format.Str(fc["name"]), Args: format.ArgsText(fc["args"])}, true, nil
	case p["functionResponse"] != nil:
		return readResult(format.Obj(p["functionResponse"]), pending), true, nil
	case p["inlineData"] != nil:
		d := format.Obj(p["inlineData"])
		return format.Part{Kind: mediaKind(d), MIME: format.Str(d["mimeType"]), Data: format.Str(d["data"])}, true, nil
	case p["fileData"] != nil:
		d := format.Obj(p["fileData"])
		if !strings.HasPrefix(format.Str(d["fileUri"]), "http") {
			return part, false, fmt.Errorf("contents[%d] has a file uploaded to Gemini", i)
		}
		return format.Part{Kind: mediaKind(d), MIME: format.Str(d["mimeType"]), URL: format.Str(d["fileUri"])}, true, nil
	case p["executableCode"] != nil || p["codeExecutionResult"] != nil:
		return part, false, fmt.Errorf("contents[%d] has Gemini's code execution", i)
	case p["text"] != nil:
		if t := format.Str(p["text"]); t != "" {
			return format.Part{Kind: format.Text, Text: t}, true, nil
		}
	}
	return part, false, nil
}

// mediaKind is an image for an image's media type, else a document.
func mediaKind(d map[string]any) format.PartKind {
	if !strings.HasPrefix(format.Str(d["mimeType"]), "image/") {
		return format.Document
	}
	return format.Image
}

// readResult reads a function response, paired with its call in pending by
// id, or else by name (no id, or one of the client's own: Gemini CLI makes
// one for a call that came without), the call taken.
func readResult(fr map[string]any, pending *[]format.Part) format.Part {
	res := format.Part{Kind: format.Result, ID: format.Str(fr["id"]), Name: format.Str(fr["name"])}
	known := false
	for _, pc := range *pending {
		known = known || res.ID != "" && pc.ID == res.ID
	}
	if !known {
		for k, pc := range *pending {
			if pc.Name == res.Name {
				res.ID = pc.ID
				*pending = append((*pending)[:k:k], (*pending)[k+1:]...)
				break
			}
		}
	}
	resp := format.Obj(fr["response"])
	text := ""
	if s, ok := resp["output"].(string); ok && len(resp) == 1 {
		text = s
	} else if e, ok := resp["error"]; ok && len(resp) == 1 {
		text, res.Error = format.ArgsText(e), true
		if s, ok := e.(string); ok {
			text = s
		}
	} else {
		text = format.ArgsText(resp)
	}
	res.Content = []format.Part{{Kind: format.Text, Text: text}}
	return res
}

// readConfig reads generationConfig: what no other vendor gives (several
// candidates, audio or image output) is an error.
func readConfig(r *format.Request, gc map[string]any) error {
	if n, ok := format.Num(gc["candidateCount"]); ok && n > 1 {
		return fmt.Errorf("it asks for %d candidates, which no other vendor gives", int(n))
	}
	if mods := fmt.Sprint(gc["responseModalities"]); strings.Contains(strings.ToUpper(mods), "AUDIO") || strings.Contains(strings.ToUpper(mods), "IMAGE") {
		return fmt.Errorf("it asks for %s output", mods)
	}
	r.MaxTokens = format.IntOf(gc["maxOutputTokens"])
	r.Temperature, r.TopP = format.FPtr(gc["temperature"]), format.FPtr(gc["topP"])
	if k, ok := format.Num(gc["topK"]); ok {
		n := int(k)
		r.TopK = &n
	}
	r.Stop = format.Strs(gc["stopSequences"])
	if tc := format.Obj(gc["thinkingConfig"]); tc != nil {
		if b, ok := format.Num(tc["thinkingBudget"]); ok && b > 0 {
			r.Budget = int(b)
			r.Effort = format.BudgetEffort(r.Budget)
		} else if l := strings.ToLower(format.Str(tc["thinkingLevel"])); l != "" {
			r.Effort = l
		}
	}
	if format.Str(gc["responseMimeType"]) == "application/json" {
		schema := gc["responseJsonSchema"]
		if schema == nil {
			schema = geminiSchema(gc["responseSchema"])
		}
		if schema != nil {
			r.Schema = &format.Schema{Name: "output", Schema: format.Raw(schema), Strict: true}
		} else {
			r.JSONObject = true
		}
	}
	return nil
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
				out[k] = strings.ToLower(format.Str(x))
			case "properties":
				props := map[string]any{}
				for name, p := range format.Obj(x) {
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
