package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Problem is one mistake in a configuration file.
type Problem struct {
	File  string
	Line  int // 0 when the field is not in the file
	Col   int
	Field string // dotted path, e.g. chains.codex[1]
	Msg   string
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
	if p.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, printable(p.Field), p.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, p.Msg)
}

// printable is a field's path as a terminal shows it: a control character
// in a name (a model's, from a quoted key) escaped, as Go quotes it.
func printable(field string) string {
	if !strings.ContainsFunc(field, unicode.IsControl) {
		return field
	}
	q := strconv.Quote(field)
	return q[1 : len(q)-1]
}

// Error lists every problem found in a file.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// MaxFileSize bounds a configuration file.
const MaxFileSize = 4 << 20

// Load reads the file at path over the defaults. An empty path means the
// defaults alone. getenv resolves env:VAR secrets.
func Load(path string, getenv func(string) string) (*Config, error) {
	if path == "" {
		c := Default()
		c.resolve(getenv)
		return c, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("config: %s is %d bytes; a configuration file is at most %d", path, st.Size(), MaxFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, getenv)
}

// DefaultPath is where spillway looks for its file: $SPILLWAY_CONFIG, else
// $XDG_CONFIG_HOME/spillway/spillway.yaml, else ~/.config/spillway/spillway.yaml.
func DefaultPath(getenv func(string) string) string {
	if p := getenv("SPILLWAY_CONFIG"); p != "" {
		return p
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "spillway", "spillway.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "spillway", "spillway.yaml")
	}
	return "spillway.yaml"
}

// Find returns the path Load should read: explicit if given (it must exist),
// else DefaultPath if that file exists, else "" (defaults alone).
func Find(explicit string, getenv func(string) string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("config: %w", err)
		}
		return explicit, nil
	}
	p := DefaultPath(getenv)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("config: %w", err)
	} else if getenv("SPILLWAY_CONFIG") != "" {
		return "", fmt.Errorf("config: SPILLWAY_CONFIG names %s: %w", p, err)
	}
	return "", nil
}

// Parse reads data (named name in messages) over the defaults.
func Parse(name string, data []byte, getenv func(string) string) (*Config, error) {
	l := newLoader(name)
	cfg := Default()
	cfg.Source = name
	body, blank, ok := l.shape(data, reflect.TypeOf(Config{}))
	if !ok {
		return nil, &Error{l.problems}
	}
	cfg.Blank = blank
	if body != nil {
		n := len(l.problems)
		l.decode(body, cfg)
		if len(l.problems) > n {
			return nil, l.sorted()
		}
	}
	cfg.resolve(getenv)
	walked := len(l.problems)
	l.validate(cfg)
	if err := l.result(walked); err != nil {
		return nil, err
	}
	cfg.Warnings = l.warnings
	if cfg.Blank {
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s holds no setting (it is empty, or only comments): the built-in defaults apply", name))
	}
	return cfg, nil
}

func newLoader(file string) *loader { return &loader{file: file, pos: map[string]*token.Position{}} }

// shape parses data, one YAML document, and checks its shape against t
// (walk). What walk found wrong is taken out, so that one check lists
// every mistake (a wrong field hides nothing else): body is what is left
// to decode, nil when nothing is (blank: the document is empty or null).
// ok is false when the file cannot be read as one document at all.
func (l *loader) shape(data []byte, t reflect.Type) (body ast.Node, blank, ok bool) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		l.yamlErr(err)
		return nil, false, false
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) > 1 {
		l.add(docs[1].Body.GetToken(), "", "a file holds one YAML document; found "+strconv.Itoa(len(docs)))
		return nil, false, false
	}
	if len(docs) == 0 {
		return nil, true, true
	}
	body = docs[0].Body
	if _, isNull := body.(*ast.NullNode); isNull {
		return nil, true, true
	}
	l.walk(body, t, "")
	l.bad = map[string]bool{}
	for _, p := range l.problems {
		l.bad[p.Field] = true
	}
	if l.bad[""] || !l.prune(body, "") {
		return nil, false, true
	}
	return body, false, true
}

// result is every problem, by line, or nil: of those found after the
// first walked (validation), a problem of a field whose value was taken
// out (or of the entry it is in) is dropped, as it would be about the
// default put in its place.
func (l *loader) result(walked int) error {
	if walked > 0 {
		kept := l.problems[:walked]
		for _, p := range l.problems[walked:] {
			if !l.under(p.Field) {
				kept = append(kept, p)
			}
		}
		l.problems = kept
	}
	if len(l.problems) > 0 {
		return l.sorted()
	}
	return nil
}

// Checked is a YAML file of spillway's other than its configuration (a
// simulator scenario) read as config check reads the configuration:
// every mistake at once, by file, line, column and field (DecodeFile).
type Checked struct {
	l      *loader
	walked int
	stop   bool // the file could not be decoded: its problems are all there is
}

// DecodeFile reads data (named name in messages), one YAML document, over
// into: a pointer to a struct with yaml tags, holding its defaults. The
// file's shape is checked against into's type first (unknown fields,
// values of the wrong type); what is wrong is taken out and the rest
// decoded. The caller checks the values with At, then Err says every
// problem.
func DecodeFile(name string, data []byte, into any) *Checked {
	l := newLoader(name)
	c := &Checked{l: l}
	body, _, ok := l.shape(data, reflect.TypeOf(into).Elem())
	if !ok {
		c.stop = true
		return c
	}
	if body != nil {
		if err := yaml.NodeToValue(body, into); err != nil {
			l.yamlErr(err)
			c.stop = true
		}
	}
	c.walked = len(l.problems)
	return c
}

// At reports a problem of the value at field (a dotted path as the file
// writes it: tiers.heavy.pool, outages[0].for), at its line when the file
// wrote it.
func (c *Checked) At(field, msg string) {
	if !c.stop {
		c.l.at(field, msg)
	}
}

// Err is every problem found, in the order of the file's lines (an
// *Error), or nil.
func (c *Checked) Err() error {
	if c.stop {
		return &Error{c.l.problems}
	}
	return c.l.result(c.walked)
}

type loader struct {
	file     string
	problems []Problem
	bad      map[string]bool // the fields walk found wrong
	warnings []string
	pos      map[string]*token.Position // field path → position of its value
}

// sorted is the problems as an Error, in the order of the file's lines
// (those not in the file, from the defaults, last).
func (l *loader) sorted() *Error {
	slices.SortStableFunc(l.problems, func(a, b Problem) int {
		la, lb := a.Line, b.Line
		if la == 0 {
			la = math.MaxInt
		}
		if lb == 0 {
			lb = math.MaxInt
		}
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(a.Col, b.Col))
	})
	return &Error{l.problems}
}

// under reports whether field is one walk found wrong, inside one, or the
// entry holding one.
func (l *loader) under(field string) bool {
	for b := range l.bad {
		if b == "" || within(field, b) || within(b, field) {
			return true
		}
	}
	return false
}

// within reports whether path is field or inside it (field.x, field[i]).
func within(path, field string) bool {
	rest, ok := strings.CutPrefix(path, field)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// prune takes out of n, at path, the entries walk found wrong, and reports
// whether anything of n is left to decode.
func (l *loader) prune(n ast.Node, path string) bool {
	switch x := unwrap(n).(type) {
	case *ast.MappingNode:
		was := len(x.Values)
		kept := x.Values[:0]
		for _, kv := range x.Values {
			if kp := join(path, keyName(kv.Key)); !l.bad[kp] && l.prune(kv.Value, kp) {
				kept = append(kept, kv)
			}
		}
		x.Values = kept
		return len(kept) > 0 || was == 0
	case *ast.MappingValueNode: // a mapping of one entry
		kp := join(path, keyName(x.Key))
		return !l.bad[kp] && l.prune(x.Value, kp)
	case *ast.SequenceNode:
		kept := x.Values[:0]
		for i, v := range x.Values {
			if ip := fmt.Sprintf("%s[%d]", path, i); !l.bad[ip] && l.prune(v, ip) {
				kept = append(kept, v)
			}
		}
		x.Values = kept
	}
	return true
}

func (l *loader) add(tk *token.Token, field, msg string) {
	p := Problem{File: l.file, Field: field, Msg: msg}
	if tk != nil {
		p.Line, p.Col = tk.Position.Line, tk.Position.Column
	}
	l.problems = append(l.problems, p)
}

// at reports a problem on a field by its path; fields not in the file come
// from the defaults and are reported without a line.
func (l *loader) at(field, msg string) {
	p := Problem{File: l.file, Field: field, Msg: msg}
	if pos, ok := l.pos[field]; ok {
		p.Line, p.Col = pos.Line, pos.Column
	} else if pos := l.nearest(field); pos != nil {
		// the field is missing from an entry the file wrote: point at the entry
		p.Line, p.Col = pos.Line, pos.Column
	} else if l.file != "" {
		p.Msg += " (from the built-in defaults)"
	}
	l.problems = append(l.problems, p)
}

// nearest is the position of the closest enclosing field written in the file.
func (l *loader) nearest(field string) *token.Position {
	for {
		i := strings.LastIndexAny(field, ".[")
		if i <= 0 {
			return nil
		}
		field = field[:i]
		if pos, ok := l.pos[field]; ok {
			return pos
		}
	}
}

func (l *loader) warn(field, msg string) {
	loc := l.file
	if pos, ok := l.pos[field]; ok {
		loc = fmt.Sprintf("%s:%d", l.file, pos.Line)
	}
	if loc == "" {
		loc = "defaults"
	}
	l.warnings = append(l.warnings, fmt.Sprintf("%s: %s: %s", loc, field, msg))
}

func (l *loader) yamlErr(err error) {
	var ye yaml.Error
	if errors.As(err, &ye) {
		l.add(ye.GetToken(), "", "YAML: "+ye.GetMessage())
		return
	}
	l.add(nil, "", "YAML: "+err.Error())
}

// decode merges the file into the defaults: sections field by field, and
// named entries (providers, models, chains) one by one.
func (l *loader) decode(body ast.Node, cfg *Config) {
	m, _ := mapping(unwrap(body))
	for _, kv := range m {
		// catalog: none takes the built-in models and chains away before
		// the file's own are merged, wherever in the file it stands
		if keyName(kv.Key) == "catalog" {
			if v, ok := scalarText(unwrap(kv.Value)); ok && v == CatalogNone {
				cfg.Models, cfg.Chains, cfg.ChainRules = map[string]Model{}, map[string][]string{}, nil
			}
		}
	}
	for _, kv := range m {
		key := keyName(kv.Key)
		val := unwrap(kv.Value)
		if val == nil {
			continue
		}
		if _, isNull := val.(*ast.NullNode); isNull {
			continue
		}
		var err error
		switch key {
		case "providers":
			err = mergeEntries(val, cfg.Providers)
		case "models":
			err = mergeEntries(val, cfg.Models)
		case "chains":
			err = mergeChains(val, cfg)
		default:
			f := reflect.ValueOf(cfg).Elem().FieldByIndex(fieldIndex(reflect.TypeOf(*cfg))[key].Index)
			if f.Kind() == reflect.Pointer { // an optional setting: set only when written
				v := reflect.New(f.Type().Elem())
				if err = yaml.NodeToValue(val, v.Interface()); err == nil {
					f.Set(v)
				}
				break
			}
			err = yaml.NodeToValue(val, f.Addr().Interface())
		}
		if err != nil {
			l.yamlErr(err)
		}
	}
}

// mergeChains merges the file's chains, each a list of models or an object
// {models, overflow, on_usage_limit}.
func mergeChains(n ast.Node, cfg *Config) error {
	m, _ := mapping(n)
	for _, kv := range m {
		name, val := keyName(kv.Key), unwrap(kv.Value)
		if val == nil {
			continue
		}
		if _, isObject := mapping(val); !isObject {
			var models []string
			if err := yaml.NodeToValue(val, &models); err != nil {
				return err
			}
			cfg.Chains[name] = models
			delete(cfg.ChainRules, name)
			continue
		}
		var obj chainObject
		if err := yaml.NodeToValue(val, &obj); err != nil {
			return err
		}
		cfg.Chains[name] = obj.Models
		if cfg.ChainRules == nil {
			cfg.ChainRules = map[string]ChainRules{}
		}
		cfg.ChainRules[name] = ChainRules{Overflow: obj.Overflow, OnUsageLimit: obj.OnUsageLimit}
	}
	return nil
}

func mergeEntries[V any](n ast.Node, into map[string]V) error {
	m, _ := mapping(n)
	for _, kv := range m {
		v := into[keyName(kv.Key)] // the default entry, or zero
		val := unwrap(kv.Value)
		if val == nil {
			continue
		}
		if err := yaml.NodeToValue(val, &v); err != nil {
			return err
		}
		into[keyName(kv.Key)] = v
	}
	return nil
}

// resolve fills provider types and secret values.
func (c *Config) resolve(getenv func(string) string) {
	for name, p := range c.Providers {
		if p.Type == "" && slices.Contains(providerTypes, name) {
			p.Type = name
		}
		if p.Auth == "" {
			p.Auth = AuthPassthrough
			if p.Cloud() != "" {
				p.Auth = AuthKey // a cloud is always sent spillway's own credentials
			}
		}
		if p.BaseURL == "" && p.Region != "" {
			p.BaseURL = CloudBaseURL(p.Type, p.Region)
		}
		if p.APIKey.IsEnv() {
			p.APIKey.Value = getenv(p.APIKey.EnvVar())
		} else {
			p.APIKey.Value = p.APIKey.Ref
		}
		c.Providers[name] = p
	}
	for _, k := range []*Secret{&c.Gateway.AdminKey, &c.Gateway.MetricsKey} {
		if k.IsEnv() {
			k.Value = getenv(k.EnvVar())
		} else {
			k.Value = k.Ref
		}
	}
	for i := range c.Gateway.Keys {
		k := &c.Gateway.Keys[i]
		switch ref := k.Key.Ref; {
		case strings.HasPrefix(ref, "sha256:"):
			k.Hash = strings.ToLower(strings.TrimPrefix(ref, "sha256:"))
		case k.Key.IsEnv():
			k.Key.Value = getenv(k.Key.EnvVar())
		case strings.HasPrefix(ref, "file:"):
			b, _ := os.ReadFile(strings.TrimPrefix(ref, "file:"))
			k.Key.Value = strings.TrimSpace(string(b))
		default:
			k.Key.Value = ref
		}
		if k.Hash == "" && k.Key.Value != "" {
			k.Hash = KeyHash(k.Key.Value)
		}
	}
	if len(c.Gateway.Keys) > 0 {
		// clients send gateway keys: the providers get the gateway's own
		// (a sign-in provider has none: the gateway refuses its route)
		for name, p := range c.Providers {
			if IsSignIn(name) {
				continue
			}
			p.Auth = AuthKey
			c.Providers[name] = p
		}
	}
}

// KeyHash is the SHA-256 of a gateway key, as keys: stores it (hex).
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

var providerTypes = []string{"openai", "anthropic", "gemini", Bedrock, Vertex}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortStrings(s []string) { sort.Strings(s) }
