package responses

import (
	"encoding/json"
	"fmt"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// ReadRequest reads a Responses request.
func (Format) ReadRequest(m map[string]any, _ wire.Endpoint) (*format.Request, error) {
	switch {
	case format.Str(m["previous_response_id"]) != "":
		return nil, fmt.Errorf("it continues a stored response (previous_response_id), which only OpenAI has")
	case m["conversation"] != nil:
		return nil, fmt.Errorf("it continues a stored conversation (conversation), which only OpenAI has")
	case m["store"] == true:
		return nil, fmt.Errorf("it asks OpenAI to store the response (store: true) for a later request to continue")
	case m["background"] == true:
		return nil, fmt.Errorf("it is a background response")
	}
	r := &format.Request{Stream: m["stream"] == true}
	if s := format.Str(m["instructions"]); s != "" {
		r.System = append(r.System, s)
	}
	if err := responsesTools(r, format.Objs(m["tools"]), ""); err != nil {
		return nil, err
	}
	if s, ok := m["input"].(string); ok {
		r.Add("user", format.Part{Kind: format.Text, Text: s})
	}
	for i, it := range format.Objs(m["input"]) {
		switch typ := format.Str(it["type"]); typ {
		case "additional_tools":
			if err := responsesTools(r, format.Objs(it["tools"]), ""); err != nil {
				return nil, err
			}
		case "message", "":
			role := format.Str(it["role"])
			parts, err := responsesContent(it["content"])
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %v", i, err)
			}
			switch role {
			case "system", "developer":
				if t := format.ResultText(parts); t != "" {
					r.System = append(r.System, t)
				}
			case "user", "assistant":
				r.Add(role, parts...)
			default:
				return nil, fmt.Errorf("input[%d] has the role %q", i, role)
			}
		case "function_call":
			r.Add("assistant", format.Part{Kind: format.Call, ID: format.Str(it["call_id"]), Name: format.Str(it["name"]), Args: format.ArgsText(it["arguments"]), Namespace: format.Str(it["namespace"])})
		case "custom_tool_call":
			in, _ := json.Marshal(map[string]string{"input": format.Str(it["input"])})
			r.Add("assistant", format.Part{Kind: format.Call, ID: format.Str(it["call_id"]), Name: format.Str(it["name"]), Args: string(in)})
		case "function_call_output", "custom_tool_call_output":
			res := format.Part{Kind: format.Result, ID: format.Str(it["call_id"])}
			if s, ok := it["output"].(string); ok {
				res.Content = []format.Part{{Kind: format.Text, Text: s}}
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
	r.MaxTokens = format.IntOf(m["max_output_tokens"])
	r.Temperature, r.TopP = format.FPtr(m["temperature"]), format.FPtr(m["top_p"])
	if rs := format.Obj(m["reasoning"]); rs != nil {
		r.Effort = format.Str(rs["effort"])
	}
	if f := format.Obj(format.Obj(m["text"])["format"]); f != nil {
		switch format.Str(f["type"]) {
		case "json_schema":
			r.Schema = &format.Schema{Name: format.Str(f["name"]), Schema: format.Raw(f["schema"]), Strict: f["strict"] == true}
		case "json_object":
			r.JSONObject = true
		}
	}
	r.Choice = format.OpenAIChoice(m["tool_choice"])
	r.NoParallel = m["parallel_tool_calls"] == false
	return r, nil
}

// responsesTools reads a Responses tool list: functions, freeform (custom)
// tools, and namespaces of them.
func responsesTools(r *format.Request, tools []map[string]any, ns string) error {
	for _, t := range tools {
		switch typ := format.Str(t["type"]); typ {
		case "function":
			r.Tools = append(r.Tools, format.Tool{Name: format.Str(t["name"]), Namespace: ns, Description: format.Str(t["description"]), Schema: format.Raw(t["parameters"])})
		case "custom":
			desc := format.Str(t["description"])
			if f := format.Obj(t["format"]); format.Str(f["type"]) == "grammar" {
				desc += "\n\nThe input follows this " + format.Str(f["syntax"]) + " grammar:\n" + format.Str(f["definition"])
			}
			r.Tools = append(r.Tools, format.Tool{Name: format.Str(t["name"]), Namespace: ns, Description: desc, Custom: true})
		case "namespace":
			if err := responsesTools(r, format.Objs(t["tools"]), format.Str(t["name"])); err != nil {
				return err
			}
		default:
			return fmt.Errorf("it uses the hosted tool %s, which runs at OpenAI", typ)
		}
	}
	return nil
}

// responsesContent reads a Responses message's content.
func responsesContent(v any) ([]format.Part, error) {
	if s, ok := v.(string); ok {
		return []format.Part{{Kind: format.Text, Text: s}}, nil
	}
	var out []format.Part
	for _, c := range format.Objs(v) {
		switch typ := format.Str(c["type"]); typ {
		case "input_text", "output_text", "text":
			out = append(out, format.Part{Kind: format.Text, Text: format.Str(c["text"])})
		case "refusal":
			out = append(out, format.Part{Kind: format.Text, Text: format.Str(c["refusal"])})
		case "input_image":
			u := format.Str(c["image_url"])
			if u == "" {
				return nil, fmt.Errorf("an image by file_id is stored at OpenAI")
			}
			out = append(out, format.ImagePart(u))
		case "input_file":
			mime, data, ok := format.DataURL(format.Str(c["file_data"]))
			if !ok {
				return nil, fmt.Errorf("a file by file_id or URL is stored at OpenAI")
			}
			out = append(out, format.Part{Kind: format.Document, MIME: mime, Data: data, Filename: format.Str(c["filename"])})
		case "input_audio":
			return nil, fmt.Errorf("it has audio")
		default:
			return nil, fmt.Errorf("a %s part no other vendor takes", typ)
		}
	}
	return out, nil
}
