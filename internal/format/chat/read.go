package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// ReadRequest reads a Chat Completions request.
func (Format) ReadRequest(m map[string]any, _ wire.Endpoint) (*format.Request, error) {
	if n, ok := format.Num(m["n"]); ok && n > 1 {
		return nil, fmt.Errorf("it asks for %d answers (n), which no other vendor gives", int(n))
	}
	if m["audio"] != nil || m["modalities"] != nil && strings.Contains(fmt.Sprint(m["modalities"]), "audio") {
		return nil, fmt.Errorf("it asks for audio")
	}
	r := &format.Request{Stream: m["stream"] == true, IncludeUsage: format.Obj(m["stream_options"])["include_usage"] == true}
	for _, t := range format.Objs(m["tools"]) {
		switch typ := format.Str(t["type"]); typ {
		case "function":
			f := format.Obj(t["function"])
			r.Tools = append(r.Tools, format.Tool{Name: format.Str(f["name"]), Description: format.Str(f["description"]), Schema: format.Raw(f["parameters"])})
		case "custom":
			f := format.Obj(t["custom"])
			r.Tools = append(r.Tools, format.Tool{Name: format.Str(f["name"]), Description: format.Str(f["description"]), Custom: true})
		default:
			return nil, fmt.Errorf("it uses the tool type %s", typ)
		}
	}
	for i, msg := range format.Objs(m["messages"]) {
		role := format.Str(msg["role"])
		parts, err := chatContent(msg["content"])
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %v", i, err)
		}
		switch role {
		case "system", "developer":
			if t := format.ResultText(parts); t != "" {
				r.System = append(r.System, t)
			}
		case "user":
			r.Add("user", parts...)
		case "assistant":
			for _, tc := range format.Objs(msg["tool_calls"]) {
				if f := format.Obj(tc["function"]); f != nil {
					parts = append(parts, format.Part{Kind: format.Call, ID: format.Str(tc["id"]), Name: format.Str(f["name"]), Args: format.ArgsText(f["arguments"])})
				} else if f := format.Obj(tc["custom"]); f != nil {
					in, _ := json.Marshal(map[string]string{"input": format.Str(f["input"])})
					parts = append(parts, format.Part{Kind: format.Call, ID: format.Str(tc["id"]), Name: format.Str(f["name"]), Args: string(in)})
				}
			}
			r.Add("assistant", parts...)
		case "tool", "function":
			r.Add("user", format.Part{Kind: format.Result, ID: format.Str(msg["tool_call_id"]), Name: format.Str(msg["name"]), Content: parts})
		default:
			return nil, fmt.Errorf("messages[%d] has the role %q", i, role)
		}
	}
	r.MaxTokens = format.IntOf(m["max_completion_tokens"])
	if r.MaxTokens == 0 {
		r.MaxTokens = format.IntOf(m["max_tokens"])
	}
	r.Temperature, r.TopP = format.FPtr(m["temperature"]), format.FPtr(m["top_p"])
	switch s := m["stop"].(type) {
	case string:
		r.Stop = []string{s}
	case []any:
		r.Stop = format.Strs(s)
	}
	r.Effort = format.Str(m["reasoning_effort"])
	if f := format.Obj(m["response_format"]); f != nil {
		switch format.Str(f["type"]) {
		case "json_schema":
			js := format.Obj(f["json_schema"])
			r.Schema = &format.Schema{Name: format.Str(js["name"]), Schema: format.Raw(js["schema"]), Strict: js["strict"] == true}
		case "json_object":
			r.JSONObject = true
		}
	}
	r.Choice = format.OpenAIChoice(m["tool_choice"])
	r.NoParallel = m["parallel_tool_calls"] == false
	return r, nil
}

// chatContent reads a Chat message's content.
func chatContent(v any) ([]format.Part, error) {
	if s, ok := v.(string); ok {
		if s == "" {
			return nil, nil
		}
		return []format.Part{{Kind: format.Text, Text: s}}, nil
	}
	var out []format.Part
	for _, c := range format.Objs(v) {
		switch typ := format.Str(c["type"]); typ {
		case "text":
			out = append(out, format.Part{Kind: format.Text, Text: format.Str(c["text"])})
		case "refusal":
			out = append(out, format.Part{Kind: format.Text, Text: format.Str(c["refusal"])})
		case "image_url":
			out = append(out, format.ImagePart(format.Str(format.Obj(c["image_url"])["url"])))
		case "file":
			f := format.Obj(c["file"])
			mime, data, ok := format.DataURL(format.Str(f["file_data"]))
			if !ok {
				return nil, fmt.Errorf("a file by file_id is stored at OpenAI")
			}
			out = append(out, format.Part{Kind: format.Document, MIME: mime, Data: data, Filename: format.Str(f["filename"])})
		case "input_audio":
			return nil, fmt.Errorf("it has audio")
		default:
			return nil, fmt.Errorf("a %s part no other vendor takes", typ)
		}
	}
	return out, nil
}
