package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/spillway/spillway/internal/agentfiles"
)

// Continue's CLI, cn 1.5.47, reads ~/.continue/config.yaml
// ($CONTINUE_GLOBAL_DIR/config.yaml when set): an "assistant" in schema
// v1 (name, version, schema, models, rules, …). It runs the first model
// with the chat role (or with no roles), so setup puts a model named
// spillway first in models: provider openai, apiBase the gateway's /v1,
// and the key as ${{ secrets.NAME }}, which cn fills from its environment
// (or ~/.continue/.env) — no key is written. The rest of the file stays
// byte for byte.

// ContinueEntryName is the name of the model setup writes into cn's
// config.yaml; a model of that name is replaced on the next run.
const ContinueEntryName = "spillway"

// ContinueFile is config.yaml's name in cn's directory.
const ContinueFile = "config.yaml"

// ContinueRoles are the roles cn may give a model (its schema's enum).
var ContinueRoles = []string{"chat", "autocomplete", "embed", "rerank", "edit", "apply", "summarize", "subagent"}

// ContinueSetup is what setup writes into cn's config.yaml.
type ContinueSetup struct {
	BaseURL string // the gateway's root; the entry's apiBase is its /v1
	Model   string // the model cn asks the gateway for
	EnvKey  string // the variable cn sends as the key (DefaultEnvKey if "")
}

func (s ContinueSetup) envKey() string {
	if s.EnvKey == "" {
		return DefaultEnvKey
	}
	return s.EnvKey
}

// ContinueDir is cn's directory as the environment getenv gives it:
// $CONTINUE_GLOBAL_DIR, else ~/.continue; "" when neither is known.
func ContinueDir(getenv func(string) string) string {
	if d := getenv("CONTINUE_GLOBAL_DIR"); d != "" {
		return d
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".continue")
	}
	return ""
}

// Entry is the models entry, its dash at indent, ending in a newline.
func (s ContinueSetup) Entry(indent string) string {
	in := indent + "  "
	lines := []string{
		"- name: " + ContinueEntryName,
		in + `# Written by "spillway setup continue": cn sends its requests to the local`,
		in + "# spillway gateway, which falls back to another model when one is at capacity.",
		in + "# cn runs the first chat model of this list. Undo: restore the",
		in + "# " + ContinueFile + BackupSuffix + "* file kept next to this file, or delete this entry.",
		in + "provider: openai",
		in + "model: " + yamlScalar(s.Model),
		in + "apiBase: " + yamlScalar(BaseURL(s.BaseURL)+"/v1"),
		in + "# cn fills in the key from its environment (or ~/.continue/.env);",
		in + "# spillway passes it on to the provider.",
		in + "apiKey: ${{ secrets." + s.envKey() + " }}",
		in + "roles:",
		in + "  - chat",
		in + "  - edit",
		in + "  - apply",
	}
	return indent + strings.Join(lines, "\n") + "\n"
}

// BackupSuffix follows a file's name in the name of its backup.
const BackupSuffix = ".spillway-backup-"

// yamlScalar is s as a YAML scalar: plain when YAML reads it back as the
// same string, else double-quoted.
func yamlScalar(s string) string {
	var back any
	if s != "" && yaml.Unmarshal([]byte("v: "+s), &back) == nil {
		if m, ok := back.(map[string]any); ok && m["v"] == s && !strings.ContainsAny(s, "#'\"\n") {
			return s
		}
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// ContinueParseError is a config.yaml cn cannot read (or could not
// after the merge): where, and why.
type ContinueParseError struct {
	Line int // 1-based; 0 when not known
	Msg  string
}

func (e *ContinueParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// ApplyContinue merges s's model entry into the text of a config.yaml
// (nil or empty for none) and returns the new text: a new file names the
// assistant too; in an existing one, a model named spillway is replaced
// where it stands, else the entry goes first in models (cn runs the
// first chat model), models added at the end when there are none. Every
// other byte stays. The result is read back as cn reads it; a file it
// cannot read is refused, before and after. Applying the result again
// returns it unchanged.
func ApplyContinue(existing []byte, s ContinueSetup) ([]byte, error) {
	if len(bytes.TrimSpace(stripYAMLComments(existing))) == 0 {
		out := append([]byte{}, existing...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, "name: Local Config\nversion: 1.0.0\nschema: v1\nmodels:\n"...)
		out = append(out, s.Entry("  ")...)
		return out, verifyContinue(out, s)
	}
	if err := checkContinue(existing); err != nil {
		return nil, err
	}
	root, err := continueRoot(existing)
	if err != nil {
		return nil, err
	}
	lines := splitLines(existing)
	var models *ast.MappingValueNode
	for _, mv := range root.Values {
		if k, ok := mv.Key.(*ast.StringNode); ok && k.Value == "models" {
			models = mv
		}
	}
	var out []byte
	switch {
	case models == nil:
		out = append([]byte{}, existing...)
		if out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, "models:\n"...)
		out = append(out, s.Entry("  ")...)
	default:
		out, err = spliceModels(existing, lines, models, s)
		if err != nil {
			return nil, err
		}
	}
	return out, verifyContinue(out, s)
}

// spliceModels puts the entry into an existing models value.
func spliceModels(text []byte, lines []int, models *ast.MappingValueNode, s ContinueSetup) ([]byte, error) {
	keyLine := models.Key.GetToken().Position.Line
	switch v := models.Value.(type) {
	case *ast.NullNode:
		// "models:" and nothing: the entry after the key's line
		at := lineEndOffset(text, lines, keyLine)
		indent := leading(text[lines[keyLine-1]:]) + "  "
		return spliceAt(text, at, at, s.Entry(indent)), nil
	case *ast.SequenceNode:
		if v.IsFlowStyle {
			if len(v.Values) > 0 {
				return nil, &ContinueParseError{Line: keyLine, Msg: "models is a flow sequence ([…]); setup edits a block list only: write each model on lines of its own, starting with \"- \""}
			}
			// models: [] → a block list in its place
			start := v.Start.Position
			end := v.End.Position
			if start.Line != end.Line {
				return nil, &ContinueParseError{Line: keyLine, Msg: "models is an empty flow sequence over several lines; write it as models: [] or as a block list"}
			}
			a := lineOffset(text, lines, start.Line, start.Column)
			b := lineOffset(text, lines, end.Line, end.Column) + 1
			for a > 0 && text[a-1] == ' ' {
				a--
			}
			eol := lineEndOffset(text, lines, start.Line)
			rest := string(text[b:eol]) // what followed [] on its line (a comment)
			if !strings.HasSuffix(rest, "\n") {
				rest += "\n"
			}
			indent := leading(text[lines[keyLine-1]:]) + "  "
			out := append([]byte{}, text[:a]...)
			out = append(out, rest...)
			out = append(out, s.Entry(indent)...)
			return append(out, text[eol:]...), nil
		}
		if len(v.Values) == 0 {
			return nil, &ContinueParseError{Line: keyLine, Msg: "models has no entries"}
		}
		dash := v.Start.Position // the first "-"
		indent := strings.Repeat(" ", dash.Column-1)
		if line := text[lines[dash.Line-1]:]; !bytes.HasPrefix(line, []byte(indent+"-")) {
			return nil, &ContinueParseError{Line: dash.Line, Msg: "models' first entry does not start its line; setup edits a list whose entries each start a line with \"- \""}
		}
		starts := itemStarts(text, lines, v, dash.Column)
		for i, item := range v.Values {
			if entryName(item) != ContinueEntryName {
				continue
			}
			a := lines[starts[i]-1]
			b := itemEnd(text, lines, starts, i, dash.Column)
			return spliceAt(text, a, b, s.Entry(indent)), nil
		}
		// before the first entry and the comment lines that head it
		first := starts[0]
		for first-1 > keyLine && strings.HasPrefix(strings.TrimSpace(string(lineText(text, lines, first-1))), "#") {
			first--
		}
		a := lines[first-1]
		return spliceAt(text, a, a, s.Entry(indent)), nil
	}
	return nil, &ContinueParseError{Line: keyLine, Msg: "models is not a list; cn wants a list of models"}
}

// itemStarts are the lines (1-based) of each item's dash: the nearest
// line at or above the item's value whose text at column col is "-".
func itemStarts(text []byte, lines []int, seq *ast.SequenceNode, col int) []int {
	starts := make([]int, len(seq.Values))
	for i, item := range seq.Values {
		l := item.GetToken().Position.Line
		for l > 1 && !dashAt(text, lines, l, col) {
			l--
		}
		starts[i] = l
	}
	return starts
}

func dashAt(text []byte, lines []int, line, col int) bool {
	l := text[lines[line-1]:]
	return len(l) >= col && strings.TrimLeft(string(l[:col-1]), " ") == "" && l[col-1] == '-'
}

// itemEnd is the offset after item i's last line of its own: the line
// before the next item's dash (or the first line after the list), less
// the blank and comment lines before it (they head what follows).
func itemEnd(text []byte, lines []int, starts []int, i, col int) int {
	next := len(lines) + 1 // a line number past the end
	if i+1 < len(starts) {
		next = starts[i+1]
	} else {
		for l := starts[i] + 1; l <= len(lines); l++ {
			t := strings.TrimRight(string(lineText(text, lines, l)), "\r\n")
			trim := strings.TrimLeft(t, " ")
			if trim == "" || strings.HasPrefix(trim, "#") {
				continue
			}
			if ind := len(t) - len(trim); ind < col-1 || ind == col-1 && !strings.HasPrefix(trim, "-") {
				next = l
				break
			}
		}
	}
	last := starts[i]
	for l := starts[i] + 1; l < next; l++ {
		trim := strings.TrimSpace(string(lineText(text, lines, l)))
		if trim != "" && !strings.HasPrefix(trim, "#") {
			last = l
		}
	}
	return lineEndOffset(text, lines, last)
}

// entryName is a models entry's name, "" when it has none.
func entryName(n ast.Node) string {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		return ""
	}
	for _, mv := range m.Values {
		if k, ok := mv.Key.(*ast.StringNode); ok && k.Value == "name" {
			if v, ok := mv.Value.(*ast.StringNode); ok {
				return v.Value
			}
		}
	}
	return ""
}

// continueRoot is the document's top-level mapping.
func continueRoot(text []byte) (*ast.MappingNode, error) {
	f, err := parser.ParseBytes(text, parser.ParseComments)
	if err != nil {
		return nil, yamlError(err)
	}
	if len(f.Docs) != 1 {
		return nil, &ContinueParseError{Msg: fmt.Sprintf("%d YAML documents; cn reads one", len(f.Docs))}
	}
	switch b := f.Docs[0].Body.(type) {
	case *ast.MappingNode:
		return b, nil
	case *ast.MappingValueNode: // a mapping of one key
		return &ast.MappingNode{Values: []*ast.MappingValueNode{b}}, nil
	}
	return nil, &ContinueParseError{Line: 1, Msg: "the top level is not a mapping (name:, version:, models: …)"}
}

// continueConfig is what cn's schema asks of config.yaml, as far as setup
// checks it.
type continueConfig struct {
	Name    any              `yaml:"name"`
	Version any              `yaml:"version"`
	Schema  any              `yaml:"schema"`
	Models  []map[string]any `yaml:"models"`
}

// checkContinue reads text as cn 1.5.47 reads config.yaml (YAML, then its
// schema: name and version strings, models entries with a name, a
// provider and a model, roles of its list; a "uses:" entry is the hub's
// and not checked): nil, or what cn would refuse.
func checkContinue(text []byte) error {
	if _, err := continueRoot(text); err != nil {
		return err
	}
	var raw map[string]any
	if err := yaml.Unmarshal(text, &raw); err != nil {
		return yamlError(err)
	}
	if m, ok := raw["models"]; ok && m != nil {
		if _, ok := m.([]any); !ok {
			return &ContinueParseError{Msg: "models is not a list; cn wants a list of models"}
		}
	}
	var c continueConfig
	if err := yaml.Unmarshal(text, &c); err != nil {
		return &ContinueParseError{Msg: "models: each entry must be a mapping (name:, provider:, model: …)"}
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"name", c.Name}, {"version", c.Version}} {
		if _, ok := f.v.(string); !ok {
			return &ContinueParseError{Msg: fmt.Sprintf("%s: cn requires a string (it says: Failed to parse config: %s: Required)", f.name, f.name)}
		}
	}
	if c.Schema != nil && c.Schema != "v1" {
		return &ContinueParseError{Msg: fmt.Sprintf("schema: %v; cn reads schema v1", c.Schema)}
	}
	for i, m := range c.Models {
		if _, ok := m["uses"]; ok {
			continue
		}
		for _, k := range []string{"name", "provider", "model"} {
			if _, ok := m[k].(string); !ok {
				return &ContinueParseError{Msg: fmt.Sprintf("models.%d: %s must be a string; cn refuses the file (Failed to parse config: models.%d: Invalid input)", i, k, i)}
			}
		}
		if r, ok := m["roles"]; ok {
			list, ok := r.([]any)
			if !ok {
				return &ContinueParseError{Msg: fmt.Sprintf("models.%d: roles must be a list", i)}
			}
			for _, x := range list {
				if s, ok := x.(string); !ok || !slices.Contains(ContinueRoles, s) {
					return &ContinueParseError{Msg: fmt.Sprintf("models.%d: role %v is not one of cn's (%s)", i, x, strings.Join(ContinueRoles, ", "))}
				}
			}
		}
	}
	return nil
}

// verifyContinue checks the merged text: cn can read it, and it holds
// the entry as written.
func verifyContinue(out []byte, s ContinueSetup) error {
	if err := checkContinue(out); err != nil {
		return fmt.Errorf("the merged file would not be read by cn (left unchanged): %w", err)
	}
	var c continueConfig
	_ = yaml.Unmarshal(out, &c)
	for _, m := range c.Models {
		if m["name"] == ContinueEntryName && m["model"] == s.Model && m["apiBase"] == BaseURL(s.BaseURL)+"/v1" &&
			m["apiKey"] == "${{ secrets."+s.envKey()+" }}" && m["provider"] == "openai" {
			return nil
		}
	}
	return errors.New("the merged file does not hold spillway's model as written (left unchanged)")
}

// ContinueFirstChat is the name of the model cn runs from config.yaml's
// text (agentfiles.ContinueFirstChat); "" when there is none or it is a
// block of the hub's.
func ContinueFirstChat(text []byte) string {
	m, _ := agentfiles.ContinueFirstChat(text)
	return m.Name
}

// yamlError is a YAML error with its line, in one line.
func yamlError(err error) error {
	var se *yaml.SyntaxError
	if errors.As(err, &se) && se.Token != nil {
		return &ContinueParseError{Line: se.Token.Position.Line, Msg: "not YAML cn can read: " + se.Message}
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &ContinueParseError{Msg: "not YAML cn can read: " + msg}
}

// stripYAMLComments is text without its comment-only lines.
func stripYAMLComments(text []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(text, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l...)
		}
	}
	return out
}

// splitLines are the offsets at which text's lines start (lines[0] = 0).
func splitLines(text []byte) []int {
	lines := []int{0}
	for i, c := range text {
		if c == '\n' && i+1 < len(text) {
			lines = append(lines, i+1)
		}
	}
	return lines
}

func lineText(text []byte, lines []int, line int) []byte {
	return text[lines[line-1]:lineEndOffset(text, lines, line)]
}

// lineEndOffset is the offset after line's newline (or the text's end).
func lineEndOffset(text []byte, lines []int, line int) int {
	if line < len(lines) {
		return lines[line]
	}
	return len(text)
}

// lineOffset is the offset of the col-th character (1-based) of line.
func lineOffset(text []byte, lines []int, line, col int) int {
	at := lines[line-1]
	for range col - 1 {
		_, size := utf8.DecodeRune(text[at:])
		at += size
	}
	return at
}

// leading is the spaces that start b.
func leading(b []byte) string { return string(b[:len(b)-len(bytes.TrimLeft(b, " "))]) }

// spliceAt replaces text[a:b] with s; when the text before a does not
// end a line (a file without its last newline), one is added.
func spliceAt(text []byte, a, b int, s string) []byte {
	var out []byte
	out = append(out, text[:a]...)
	if a > 0 && text[a-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, s...)
	return append(out, text[b:]...)
}

// WriteContinue merges s into dir/config.yaml (a backup of the old file
// beside it) and returns the file and the backup ("" for none).
func WriteContinue(dir string, s ContinueSetup, now time.Time) (path, backup string, err error) {
	return writeMerged(dir, ContinueFile, now, func(old []byte) ([]byte, error) { return ApplyContinue(old, s) })
}

// ContinueState says whether Continue is set up for spillway: state is "" when it
// is not, else what it is set up for ("api key", ...); where is the file
// (or environment) that says so. getenv is the environment setup runs in.
func ContinueState(getenv func(string) string) (state, where string) {
	dir := ContinueDir(getenv)
	if dir == "" {
		return "", ""
	}
	path := filepath.Join(dir, ContinueFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	var c continueConfig
	if yaml.Unmarshal(b, &c) != nil {
		return "", ""
	}
	for _, m := range c.Models {
		if m["name"] == ContinueEntryName {
			return "api key", path
		}
	}
	return "", ""
}
