package messages

import (
	"fmt"
	"strings"

	"github.com/spillway/spillway/internal/format"
	"github.com/spillway/spillway/internal/wire"
)

// ReadRequest reads a Messages request.
func (Format) ReadRequest(m map[string]any, _ wire.Endpoint) (*format.Request, error) {
	r := &format.Request{Stream: m["stream"] == true}
	switch s := m["system"].(type) {
	case string:
		if s != "" {
			r.System = append(r.System, s)
		}
	case []any:
		for _, b := range format.Objs(s) {
			if t := format.Str(b["text"]); t != "" && !strings.HasPrefix(t, billingHeader) {
				r.System = append(r.System, t)
			}
		}
	}
	for _, t := range format.Objs(m["tools"]) {
		switch typ := format.Str(t["type"]); typ {
		case "", "custom":
			r.Tools = append(r.Tools, format.Tool{Name: format.Str(t["name"]), Description: format.Str(t["description"]), Schema: format.Raw(t["input_schema"])})
		default:
			return nil, fmt.Errorf("it uses Anthropic's server tool %s", typ)
		}
	}
	for i, msg := range format.Objs(m["messages"]) {
		role := format.Str(msg["role"])
		parts, err := messagesContent(msg["content"])
		if err != nil {
			return nil, fmt.Errorf("messages.%d: %v", i, err)
		}
		switch role {
		case "system":
			if t := format.ResultText(parts); t != "" {
				r.System = append(r.System, t)
			}
		case "user", "assistant":
			r.Add(role, parts...)
		default:
			return nil, fmt.Errorf("messages.%d has the role %q", i, role)
		}
	}
	r.MaxTokens = format.IntOf(m["max_tokens"])
	r.Temperature, r.TopP = format.FPtr(m["temperature"]), format.FPtr(m["top_p"])
	if k, ok := format.Num(m["top_k"]); ok {
		n := int(k)
		r.TopK = &n
	}
	r.Stop = format.Strs(m["stop_sequences"])
	if th := format.Obj(m["thinking"]); th != nil {
		switch format.Str(th["type"]) {
		case "enabled":
			r.Budget = format.IntOf(th["budget_tokens"])
			r.Effort = format.BudgetEffort(r.Budget)
		case "adaptive":
			r.Effort = "medium"
		}
	}
	if oc := format.Obj(m["output_config"]); oc != nil {
		if e := format.Str(oc["effort"]); e != "" && r.Effort != "" {
			r.Effort = e
		}
		if f := format.Obj(oc["format"]); format.Str(f["type"]) == "json_schema" {
			r.Schema = &format.Schema{Name: "output", Schema: format.Raw(f["schema"]), Strict: true}
		}
	}
	if f := format.Obj(m["output_format"]); format.Str(f["type"]) == "json_schema" {
		r.Schema = &format.Schema{Name: "output", Schema: format.Raw(f["schema"]), Strict: true}
	}
	if tc := format.Obj(m["tool_choice"]); tc != nil {
		switch format.Str(tc["type"]) {
		case "any":
			r.Choice = format.Choice{Mode: "required"}
		case "tool":
			r.Choice = format.Choice{Mode: "tool", Name: format.Str(tc["name"])}
		case "none":
			r.Choice = format.Choice{Mode: "none"}
		}
		r.NoParallel = tc["disable_parallel_tool_use"] == true
	}
	return r, nil
}

// messagesContent reads a Messages turn's content.
func messagesContent(v any) ([]format.Part, error) {
	if s, ok := v.(string); ok {
		return []format.Part{{Kind: format.Text, Text: s}}, nil
	}
	var out []format.Part
	for _, b := range format.Objs(v) {
		switch typ := format.Str(b["type"]); typ {
		case "text":
			out = append(out, format.Part{Kind: format.Text, Text: format.Str(b["text"])})
		case "image", "document":
			p, err := messagesSource(typ, b)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		case "tool_use":
			out = append(out, format.Part{Kind: format.Call, ID: format.Str(b["id"]), Name: format.Str(b["name"]), Args: format.ArgsText(b["input"])})
		case "tool_result":
			res := format.Part{Kind: format.Result, ID: format.Str(b["tool_use_id"]), Error: b["is_error"] == true}
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
func messagesSource(typ string, b map[string]any) (format.Part, error) {
	kind := format.Image
	if typ == "document" {
		kind = format.Document
	}
	src := format.Obj(b["source"])
	switch format.Str(src["type"]) {
	case "base64":
		return format.Part{Kind: kind, MIME: format.Str(src["media_type"]), Data: format.Str(src["data"])}, nil
	case "url":
		return format.Part{Kind: kind, URL: format.Str(src["url"])}, nil
	case "text":
		return format.Part{Kind: format.Text, Text: format.Str(src["data"])}, nil
	}
	return format.Part{}, fmt.Errorf("a %s by %s, stored at Anthropic", typ, format.Str(src["type"]))
}

// billingHeader starts the system block Claude Code sends for Anthropic's
// billing: it means nothing to another vendor.
const billingHeader = "x-anthropic-billing-header"
