package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tailscale/hujson"

	"github.com/spillway/spillway/internal/agentfiles"
)

// GeminiSettings are the settings spillway needs Gemini CLI to have:
// API-key auth (the only kind a base URL applies to), and one attempt per
// request (the gateway has walked the chain already; Gemini CLI's own ten
// retries of a 503 would only add minutes).
var GeminiSettings = map[string]any{
	"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	"general":  map[string]any{"maxAttempts": 1},
}

// GeminiGoogleSettings are what Gemini CLI signed in with Google needs:
// one attempt per request; its own sign-in stays as it is.
var GeminiGoogleSettings = map[string]any{
	"general": map[string]any{"maxAttempts": 1},
}

// ApplyGemini merges GeminiSettings into existing (the settings.json
// Gemini CLI has, or nothing), keeping every other setting.
func ApplyGemini(existing []byte) ([]byte, error) { return geminiFile.Apply(existing, GeminiSettings) }

// ApplyGeminiGoogle merges GeminiGoogleSettings into existing.
func ApplyGeminiGoogle(existing []byte) ([]byte, error) {
	return geminiFile.Apply(existing, GeminiGoogleSettings)
}

// geminiFile is Gemini CLI's settings.json.
var geminiFile = JSONFile{Agent: "Gemini CLI", File: "settings.json", Command: "spillway setup gemini", Parse: agentfiles.ParseGeminiSettings}

// JSONFile is an agent's JSON settings file (comments allowed where the
// agent allows them) as setup merges into it.
type JSONFile struct {
	Agent   string // the agent's name ("Gemini CLI")
	File    string // the file's name ("settings.json")
	Command string // the setup command ("spillway setup gemini")
	// Parse reads the file the way the agent does.
	Parse func([]byte) (map[string]any, error)
}

// Apply merges settings into existing (the file the agent has, or
// nothing). Each setting (a leaf of settings: a value that is not an
// object, an array set whole) is spliced into the text where it belongs,
// in the file's own indentation and line ends; every other byte
// (comments, order, spacing) stays. A file the agent cannot read is
// refused, not written, and the result is parsed again the way the agent
// parses it, with every setting checked, before it is returned.
func (f JSONFile) Apply(existing []byte, settings map[string]any) ([]byte, error) {
	var out []byte
	if len(bytes.TrimSpace(existing)) == 0 {
		b, _ := json.MarshalIndent(settings, "", "  ")
		out = append(b, '\n')
	} else {
		if _, err := f.Parse(existing); err != nil {
			return nil, fmt.Errorf("%s cannot start with this file as it is: %v; fix that and run %s again (nothing was changed)", f.Agent, err, f.Command)
		}
		out = existing
		for _, l := range leaves(settings, nil) {
			var err error
			if out, err = f.set(out, l); err != nil {
				return nil, err
			}
		}
	}
	if err := f.verify(out, settings); err != nil {
		return nil, err
	}
	return out, nil
}

// leaf is one setting: the keys down to it, and its value.
type leaf struct {
	path  []string
	value any
}

// leaves are the settings of m (below prefix), by path.
func leaves(m map[string]any, prefix []string) []leaf {
	var out []leaf
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := append(slices.Clone(prefix), k)
		if sub, ok := m[k].(map[string]any); ok && len(sub) > 0 { // ({} is a value)
			out = append(out, leaves(sub, p)...)
			continue
		}
		out = append(out, leaf{p, m[k]})
	}
	return out
}

// nested is v under the keys of path ({"a": {"b": v}} for a, b).
func nested(path []string, v any) any {
	for i := len(path) - 1; i >= 0; i-- {
		v = map[string]any{path[i]: v}
	}
	return v
}

// setGemini sets one setting in text: its value replaced where its key
// is, else its key added at the end of the deepest object of its path that
// exists (a value in the way that is not an object is replaced whole).
func (f JSONFile) set(text []byte, l leaf) ([]byte, error) {
	// hujson's values alias the bytes they were parsed from, and its
	// editing methods (Patch, Format) rewrite them: it parses a copy, is
	// only read, and the text is edited here by offsets
	root, err := hujson.Parse(bytes.Clone(text))
	if err != nil {
		return nil, fmt.Errorf("not JSON spillway can merge into (%v); add the settings by hand: %s --print", err, f.Command)
	}
	obj := &root
	for i, key := range l.path {
		o, ok := obj.Value.(*hujson.Object)
		if !ok {
			return nil, fmt.Errorf("not a JSON object spillway can merge into; fix it, or add the settings by hand: %s --print", f.Command)
		}
		var m *hujson.ObjectMember
		for j := range o.Members { // JSON.parse keeps a repeated key's last value
			if name, ok := o.Members[j].Name.Value.(hujson.Literal); ok && name.String() == key {
				m = &o.Members[j]
			}
		}
		if m == nil {
			return insertMember(text, obj, key, nested(l.path[i+1:], l.value)), nil
		}
		_, isObj := m.Value.Value.(*hujson.Object)
		if i < len(l.path)-1 && isObj {
			obj = &m.Value
			continue
		}
		rest := nested(l.path[i+1:], l.value)
		if sameJSON(text[m.Value.StartOffset:m.Value.EndOffset], rest) {
			return text, nil
		}
		compact := !bytes.Contains(text[obj.StartOffset:obj.EndOffset], []byte("\n"))
		return splice(text, m.Value.StartOffset, m.Value.EndOffset, renderJSON(text, rest, lineIndent(text, m.Value.StartOffset), compact, colonOf(text, m))), nil
	}
	return text, nil
}

// insertMember adds "key": v as the last member of the object obj of
// text: after its last member, on a line of its own indented like it (or
// on the same line, in an object written on one line), with the comma
// right after the value before it (a comment that follows that value stays
// with it); in an empty object, on a line of its own one step deeper.
func insertMember(text []byte, obj *hujson.Value, key string, v any) []byte {
	o := obj.Value.(*hujson.Object)
	end := obj.EndOffset - 1 // the closing brace
	at := len(bytes.TrimRight(text[:end], " \t\r\n"))
	name, _ := json.Marshal(key)
	if len(o.Members) == 0 {
		if !multiline(text) {
			return splice(text, at, at, string(name)+":"+renderJSON(text, v, "", true, ":"))
		}
		outer := lineIndent(text, obj.StartOffset)
		inner := outer + indentUnit(text)
		nl := newline(text)
		return splice(text, at, end, nl+inner+string(name)+": "+renderJSON(text, v, inner, false, ": ")+nl+outer)
	}
	last := o.Members[len(o.Members)-1]
	colon := colonOf(text, &last)
	var sep, indent string
	compact := !bytes.Contains(text[obj.StartOffset:obj.EndOffset], []byte("\n"))
	if compact {
		// the blanks after the comma before the last member, or after
		// the colon when it is the only one
		sep = string(text[last.Name.StartOffset-len(last.Name.BeforeExtra) : last.Name.StartOffset])
		if len(o.Members) == 1 {
			sep = colon[strings.IndexByte(colon, ':')+1:]
		}
		if strings.Trim(sep, " \t") != "" {
			sep = " "
		}
	} else {
		indent = lineIndent(text, last.Name.StartOffset)
		sep = newline(text) + indent
	}
	out := splice(text, at, at, sep+string(name)+colon+renderJSON(text, v, indent, compact, colon))
	if trailingComma(text[last.Value.EndOffset:end]) { // (JSONC: OpenCode's files)
		return out
	}
	return splice(out, last.Value.EndOffset, last.Value.EndOffset, ",")
}

// trailingComma reports whether rest (what follows an object's last
// value, up to its closing brace) holds a comma, past blanks and comments.
func trailingComma(rest []byte) bool {
	for len(rest) > 0 {
		switch {
		case rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r' || rest[0] == '\n':
			rest = rest[1:]
		case bytes.HasPrefix(rest, []byte("//")):
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				return false
			}
			rest = rest[i+1:]
		case bytes.HasPrefix(rest, []byte("/*")):
			i := bytes.Index(rest[2:], []byte("*/"))
			if i < 0 {
				return false
			}
			rest = rest[i+4:]
		default:
			return rest[0] == ','
		}
	}
	return false
}

// colonOf is what separates m's name from its value (": ", ":"), or ": "
// when a comment or a line end does.
func colonOf(text []byte, m *hujson.ObjectMember) string {
	if c := string(text[m.Name.EndOffset:m.Value.StartOffset]); strings.Trim(c, " \t") == ":" {
		return c
	}
	return ": "
}

// renderJSON is v as JSON in text's style: on one line when compact (its
// names followed by colon, and a blank after a comma when colon has one),
// else indented one step of text's indentation per level below indent,
// with text's line ends.
func renderJSON(text []byte, v any, indent string, compact bool, colon string) string {
	if m, ok := v.(map[string]any); ok && compact {
		comma := ","
		if strings.HasSuffix(colon, " ") {
			comma = ", "
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			name, _ := json.Marshal(k)
			parts = append(parts, string(name)+colon+renderJSON(text, m[k], "", true, colon))
		}
		return "{" + strings.Join(parts, comma) + "}"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if !compact {
		enc.SetIndent(indent, indentUnit(text))
	}
	_ = enc.Encode(v) // (maps of strings, numbers and booleans)
	s := strings.TrimSuffix(b.String(), "\n")
	if nl := newline(text); nl != "\n" {
		s = strings.ReplaceAll(s, "\n", nl)
	}
	return s
}

// sameJSON reports whether the JSON value raw (comments allowed) is v.
func sameJSON(raw []byte, v any) bool {
	var have, want any
	b, _ := json.Marshal(v)
	return json.Unmarshal(agentfiles.StripJSONComments(raw), &have) == nil && json.Unmarshal(b, &want) == nil && reflect.DeepEqual(have, want)
}

// multiline reports whether text spans more than one line.
func multiline(text []byte) bool { return bytes.Contains(bytes.TrimSpace(text), []byte("\n")) }

// newline is text's line end: \r\n when it has one, else \n.
func newline(text []byte) string {
	if bytes.Contains(text, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// indentUnit is one step of text's indentation: a tab when its first
// indented line starts with one, else its narrowest run of leading spaces
// (two when nothing is indented).
func indentUnit(text []byte) string {
	narrowest := 0
	for _, line := range bytes.Split(text, []byte("\n")) {
		rest := bytes.TrimLeft(line, " \t")
		if len(rest) == len(line) || len(bytes.TrimSpace(rest)) == 0 {
			continue // not indented, or blank
		}
		if line[0] == '\t' {
			if narrowest == 0 {
				return "\t"
			}
			continue
		}
		if n := len(line) - len(bytes.TrimLeft(line, " ")); narrowest == 0 || n < narrowest {
			narrowest = n
		}
	}
	if narrowest == 0 {
		return "  "
	}
	return strings.Repeat(" ", narrowest)
}

// lineIndent is the blanks that start the line holding offset at.
func lineIndent(text []byte, at int) string {
	line := text[bytes.LastIndexByte(text[:at], '\n')+1 : at]
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
}

// verify parses the merged text as the agent does and checks that every
// setting has its value: setup never leaves a file the agent cannot read.
func (f JSONFile) verify(out []byte, settings map[string]any) error {
	got, err := f.Parse(out)
	if err != nil {
		return fmt.Errorf("internal error: %s could not read the merged %s (%v), so it was not written; add the settings by hand: %s --print", f.Agent, f.File, err, f.Command)
	}
	for _, l := range leaves(settings, nil) {
		var v any = got
		for _, k := range l.path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		want, _ := json.Marshal(l.value)
		if have, _ := json.Marshal(v); !bytes.Equal(have, want) {
			return fmt.Errorf("internal error: the merged %s has %s = %s, not %s, so it was not written; add the settings by hand: %s --print", f.File, strings.Join(l.path, "."), have, want, f.Command)
		}
	}
	return nil
}

// WriteGemini merges GeminiSettings into dir/settings.json (dir: see
// GeminiHome), keeping the old file as settings.json.spillway-backup-<time>.
// It returns the file and the backup ("" when there was none or nothing
// changed).
func WriteGemini(dir string, now time.Time) (path, backup string, err error) {
	if dir == "" {
		return "", "", errors.New("no Gemini CLI directory: set GEMINI_CLI_HOME or HOME")
	}
	return writeMerged(dir, "settings.json", now, func(old []byte) ([]byte, error) {
		return ApplyGemini(old)
	})
}

// WriteGeminiGoogle is WriteGemini with GeminiGoogleSettings.
func WriteGeminiGoogle(dir string, now time.Time) (path, backup string, err error) {
	if dir == "" {
		return "", "", errors.New("no Gemini CLI directory: set GEMINI_CLI_HOME or HOME")
	}
	return writeMerged(dir, "settings.json", now, func(old []byte) ([]byte, error) {
		return ApplyGeminiGoogle(old)
	})
}
