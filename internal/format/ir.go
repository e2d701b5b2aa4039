package format

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Request is a request in no vendor's format: what every reader makes and
// every writer takes.
type Request struct {
	System   []string // instructions, in order (system and developer turns)
	Messages []Message
	Tools    []Tool
	Choice   Choice
	// MaxTokens is the answer's cap; 0: the client set none
	MaxTokens   int
	Temperature *float64
	TopP        *float64
	TopK        *int
	Stop        []string
	// Effort is the reasoning effort asked (low, medium, high), Budget a
	// thinking budget in tokens; both empty: none asked
	Effort string
	Budget int
	// Schema is a structured output's JSON schema (Name, Strict as given);
	// JSONObject: any JSON object
	Schema     *Schema
	JSONObject bool
	Stream     bool
	// NoParallel: the client asked for one tool call at a time
	NoParallel bool
	// IncludeUsage: a Chat client asked for the usage chunk
	// (stream_options.include_usage)
	IncludeUsage bool
}

// Schema is a structured output's JSON schema.
type Schema struct {
	Name   string
	Schema json.RawMessage
	Strict bool
}

// Message is one turn: user or assistant.
type Message struct {
	Role  string // "user" or "assistant"
	Parts []Part
}

// PartKind is what a part of a turn is.
type PartKind int

// The parts of a turn.
const (
	Text PartKind = iota
	Image
	Document
	Call   // an assistant's tool call
	Result // a tool's result, in a user turn
)

// Part is one piece of a turn.
type Part struct {
	Kind PartKind
	Text string
	// an image or document: its media type and base64 data, or its URL
	MIME, Data, URL string
	Filename        string
	// a call: the client's id, the tool's name (as the client declared
	// it) and the arguments' JSON text; a result: the call's id and name
	ID, Name, Args string
	Namespace      string // a call's tool's namespace (Codex)
	// a result's content (text and images), and whether it is an error
	Content []Part
	Error   bool
}

// Tool is a tool the client declares.
type Tool struct {
	Name        string
	Namespace   string // Codex's namespaces ("functions" is the default one)
	Description string
	Schema      json.RawMessage // the arguments' JSON schema (a function)
	// Custom: a freeform tool (Codex's exec, apply_patch): its input is
	// text, carried to the target as a function of one string argument,
	// "input", and given back to the client as text
	Custom bool
}

// Choice is the tool choice: "" (auto), "none", "required", or "tool" with
// Name.
type Choice struct {
	Mode string
	Name string
}

func (r *Request) HasImages() bool {
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Kind == Image {
				return true
			}
			for _, c := range p.Content {
				if c.Kind == Image {
					return true
				}
			}
		}
	}
	return false
}

// Placed says what is out of place: a tool call in a user turn, a result
// in the model's (no vendor takes either; carried, they would be lost).
func (r *Request) Placed() error {
	for i, m := range r.Messages {
		for _, p := range m.Parts {
			switch {
			case p.Kind == Call && m.Role != "assistant":
				return fmt.Errorf("turn %d is the user's and has a tool call", i)
			case p.Kind == Result && m.Role != "user":
				return fmt.Errorf("turn %d is the model's and has a tool result", i)
			}
		}
	}
	return nil
}

// Add appends parts to the conversation as role's: to the last turn when it
// is role's too (Messages and Gemini alternate roles; a client's run of
// items of one role is one turn there).
func (r *Request) Add(role string, parts ...Part) {
	if len(parts) == 0 {
		return
	}
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
		r.Messages[n-1].Parts = append(r.Messages[n-1].Parts, parts...)
		return
	}
	r.Messages = append(r.Messages, Message{Role: role, Parts: parts})
}

// CustomSchema is the function a freeform tool becomes for another vendor:
// one string argument, its input.
var CustomSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"The tool's input, as free text."}},"required":["input"]}`)

// ValidName is what every target takes as a tool name: a letter or '_',
// then letters, digits, '_' and '-', 64 at most (OpenAI's limit, the
// smallest).
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// TargetName is the name t goes to another vendor under: its own when valid
// (case kept), else its characters made valid with a short hash of the
// original on the end, so that two names never become one; a namespace's
// tool (but the default "functions") carries its namespace in front.
func TargetName(t Tool) string {
	name := t.Name
	if t.Namespace != "" && t.Namespace != "functions" {
		name = t.Namespace + "__" + t.Name
	}
	return Safe(name, 64)
}

// Safe is s made of letters, digits, '_' and '-' (a letter or '_' first), at
// most n long: s itself when it is.
func Safe(s string, n int) string {
	if ValidName(s) && len(s) <= n {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' || c == '-':
			if i == 0 {
				b.WriteByte('_')
			}
		default:
			c = '_'
		}
		b.WriteRune(c)
	}
	sum := sha256.Sum256([]byte(s))
	out := b.String()
	if len(out) > n-9 {
		out = out[:n-9]
	}
	return out + "_" + hex.EncodeToString(sum[:4])
}

// CallID is the id a client's call id goes to the target under: itself
// when it is made of letters, digits, '_' and '-' and at most 40 long
// (Anthropic's rule and OpenAI's length), else a valid one, kept in t.ids
// to map back.
func (t *Turn) CallID(id string) string {
	if id == "" {
		return ""
	}
	out := id
	if !ValidID(id) {
		out = Safe(id, 40)
	}
	t.ids[out] = id
	return out
}

// ValidID: 1 to 40 letters, digits, '_' and '-'.
func ValidID(id string) bool {
	if id == "" || len(id) > 40 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ClientID is the client's id for a call id of the target's answer: the
// one it was mapped from, or the target's own (a new call).
func (t *Turn) ClientID(id string) string {
	if c, ok := t.ids[id]; ok {
		return c
	}
	return id
}

// ToolOf is the client's ToolOf for a name of the target's answer; the name
// as it came when the request declared no such ToolOf.
func (t *Turn) ToolOf(name string) Tool {
	if tl, ok := t.tools[name]; ok {
		return tl
	}
	return Tool{Name: name}
}

// ---- reading JSON decoded into any ----

func Obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func Objs(v any) []map[string]any {
	items, _ := v.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func Str(v any) string { s, _ := v.(string); return s }

// Strs is v's non-empty strings, for a list.
func Strs(v any) []string {
	items, _ := v.([]any)
	var out []string
	for _, x := range items {
		if s := Str(x); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func Num(v any) (float64, bool) { f, ok := v.(float64); return f, ok }

func IntOf(v any) int { f, _ := v.(float64); return int(f) }

func FPtr(v any) *float64 {
	if f, ok := v.(float64); ok {
		return &f
	}
	return nil
}

func Raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// ArgsText is a call's arguments as JSON text: a string as it is (a
// Responses or Chat call's), an object encoded.
func ArgsText(v any) string {
	switch a := v.(type) {
	case string:
		return a
	case nil:
		return "{}"
	default:
		b, _ := json.Marshal(a)
		return string(b)
	}
}

// ArgsObject is a call's JSON text as an object, for a format that sends
// arguments as one (Messages' input, Gemini's args): {} when it is not one.
func ArgsObject(s string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// DataURL splits a data: URL into its media type and base64 data.
func DataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	if !found || !strings.HasSuffix(head, ";base64") {
		return "", "", false
	}
	return strings.TrimSuffix(head, ";base64"), data, true
}

// ImagePart is an image part from a URL (a data: URL is split).
func ImagePart(u string) Part {
	if mime, data, ok := DataURL(u); ok {
		return Part{Kind: Image, MIME: mime, Data: data}
	}
	return Part{Kind: Image, URL: u}
}

// ResultText is a result's text parts, joined.
func ResultText(parts []Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Kind == Text {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// EffortBudget is the thinking budget for a reasoning effort, and back: a
// documented rule (docs/gateway.md, "Spilling across vendors").
func EffortBudget(effort string) int {
	switch effort {
	case "minimal", "low":
		return 1024
	case "medium":
		return 4096
	case "high", "xhigh", "max":
		return 16384
	}
	return 0
}

func BudgetEffort(budget int) string {
	switch {
	case budget <= 0:
		return ""
	case budget <= 2048:
		return "low"
	case budget <= 8192:
		return "medium"
	}
	return "high"
}

// OpenAIChoice reads a tool_choice of Chat or Responses.
func OpenAIChoice(v any) Choice {
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

// ---- Anthropic Messages (Claude Code) ----

// ---- Gemini ----
