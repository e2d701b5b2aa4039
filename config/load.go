package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
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

var (
	durationType = reflect.TypeOf(Duration(0))
	tierType     = reflect.TypeOf(Tier(""))
	secretType   = reflect.TypeOf(Secret{})
)

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// chainObject is a chain written as an object, as the file writes it.
type chainObject struct {
	Models       []string `yaml:"models"`
	Overflow     string   `yaml:"overflow"`
	OnUsageLimit string   `yaml:"on_usage_limit"`
}

// walkChain checks a chain written as {models: [...], overflow: Y,
// on_usage_limit: overflow|fail} as walk checks any mapping; its models
// are found at both paths (chains.X.models[i] and chains.X[i]) for the
// checks that follow.
func (l *loader) walkChain(n ast.Node, m []*ast.MappingValueNode, path string) {
	l.walk(n, reflect.TypeOf(chainObject{}), path)
	for _, kv := range m {
		if keyName(kv.Key) != "models" {
			continue
		}
		if seq, ok := unwrap(kv.Value).(*ast.SequenceNode); ok {
			for i, v := range seq.Values {
				l.pos[fmt.Sprintf("%s[%d]", path, i)] = v.GetToken().Position
			}
		}
		return
	}
	l.add(nil, path, "a chain written as an object needs models: [...]")
}

// walk checks the file's shape against the Go type before decoding, so that
// every mistake names its line and field and says what is allowed.
func (l *loader) walk(n ast.Node, t reflect.Type, path string) {
	if tag := customTag(n); tag != nil {
		// (a tag of the application's, !foo, means nothing here, and the
		// YAML decoder cannot take one everywhere: "ladder: !x !y" crashed it)
		l.add(tag, path, fmt.Sprintf("the YAML tag %s means nothing here; remove it", tag.Value))
		return
	}
	n = unwrap(n)
	if n == nil {
		return
	}
	if _, set := l.pos[path]; path != "" && !set {
		l.pos[path] = n.GetToken().Position
	}
	if _, isNull := n.(*ast.NullNode); isNull {
		return
	}
	if m, ok := mapping(n); ok && t.Kind() == reflect.Slice && strings.HasPrefix(path, "chains.") && strings.Count(path, ".") == 1 {
		l.walkChain(n, m, path) // a chain's object form
		return
	}
	switch {
	case t == durationType:
		s, ok := scalarText(n)
		if !ok {
			l.add(n.GetToken(), path, "must be a duration such as 500ms, 30s or 2m")
			return
		}
		if _, err := parseDuration(s); err != nil {
			l.add(n.GetToken(), path, err.Error())
		}
	case t == tierType:
		s, _ := scalarText(n)
		if Tier(s).Rank() == 0 {
			l.add(n.GetToken(), path, fmt.Sprintf("unknown tier %q; allowed: heavy, medium, light", s))
		}
	case t == secretType:
		if _, ok := scalarText(n); !ok {
			l.add(n.GetToken(), path, "must be a string: env:VARIABLE (recommended) or the key itself")
		}
	case t.Kind() == reflect.Struct:
		m, ok := mapping(n)
		if !ok {
			l.add(n.GetToken(), path, "must be a mapping of "+strings.Join(fieldNames(t), ", "))
			return
		}
		fields := fieldIndex(t)
		seen := map[string]bool{}
		for _, kv := range m {
			key := keyName(kv.Key)
			kp := join(path, key)
			if seen[key] {
				l.add(kv.Key.GetToken(), kp, "is set twice")
				continue
			}
			seen[key] = true
			f, ok := fields[key]
			if !ok {
				l.add(kv.Key.GetToken(), kp, fmt.Sprintf("unknown field %q; allowed here: %s", key, strings.Join(fieldNames(t), ", ")))
				continue
			}
			l.walk(kv.Value, f.Type, kp)
		}
	case t.Kind() == reflect.Map:
		m, ok := mapping(n)
		if !ok {
			l.add(n.GetToken(), path, "must be a mapping of names to entries")
			return
		}
		seen := map[string]bool{}
		for _, kv := range m {
			key := keyName(kv.Key)
			kp := join(path, key)
			if seen[key] {
				l.add(kv.Key.GetToken(), kp, "is defined twice")
				continue
			}
			seen[key] = true
			l.pos[kp] = kv.Key.GetToken().Position
			l.walk(kv.Value, t.Elem(), kp)
		}
	case t.Kind() == reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			l.add(n.GetToken(), path, "must be a list, e.g. [a, b]")
			return
		}
		for i, v := range seq.Values {
			l.walk(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Pointer:
		l.walk(n, t.Elem(), path)
	case t.Kind() == reflect.Bool:
		if _, ok := n.(*ast.BoolNode); !ok {
			l.add(n.GetToken(), path, fmt.Sprintf("must be true or false, not %s", written(n)))
		}
	case t.Kind() == reflect.Int:
		if _, ok := n.(*ast.IntegerNode); !ok {
			l.add(n.GetToken(), path, fmt.Sprintf("must be a whole number, not %s", written(n)))
		}
	case t.Kind() == reflect.Float64:
		switch n.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			l.add(n.GetToken(), path, fmt.Sprintf("must be a number, not %s", written(n)))
		}
	case t.Kind() == reflect.String:
		if _, ok := scalarText(n); !ok {
			l.add(n.GetToken(), path, "must be a single value, not a list or mapping")
		}
	}
}

// written is a value as the file wrote it, quoted once.
func written(n ast.Node) string {
	if s, ok := scalarText(n); ok {
		return strconv.Quote(s)
	}
	return n.String()
}

// customTag is the first tag on n, or on what it tags, that is not one of
// YAML's own (!!str, !!int, …): nil when there is none.
func customTag(n ast.Node) *token.Token {
	for {
		switch x := n.(type) {
		case *ast.TagNode:
			switch x.Start.Value {
			case "!!str", "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq":
			default:
				return x.Start
			}
			n = x.Value
		case *ast.AnchorNode:
			n = x.Value
		default:
			return nil
		}
	}
}

func unwrap(n ast.Node) ast.Node {
	for {
		switch x := n.(type) {
		case *ast.TagNode:
			n = x.Value
		case *ast.AnchorNode:
			n = x.Value
		case *ast.CommentGroupNode:
			return nil
		default:
			return n
		}
	}
}

func mapping(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch x := n.(type) {
	case *ast.MappingNode:
		return x.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{x}, true
	}
	return nil, false
}

// keyName is a mapping key as written, without the quotes that a key such as
// "openai us" needs (the node's String() keeps them).
func keyName(k ast.MapKeyNode) string {
	if s, ok := scalarText(k); ok {
		return s
	}
	return k.String()
}

func scalarText(n ast.Node) (string, bool) {
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value, true
	case ast.ScalarNode:
		return fmt.Sprint(x.GetValue()), true
	}
	return "", false
}

func fieldIndex(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = f
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for n := range fieldIndex(t) {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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

// modelProviderProblem says why a model or deployment cannot name provider:
// it is not defined, or it is a sign-in provider (whose models are the
// chains' own, reached only on the sign-in's route).
func modelProviderProblem(c *Config, provider string) string {
	if IsSignIn(provider) {
		return fmt.Sprintf("provider %q carries a person's own sign-in and serves the chains' models on its own route (/backend-api/codex/, /v1internal); a model cannot name it", provider)
	}
	return fmt.Sprintf("provider %q is not defined; defined providers: %s", provider, strings.Join(modelProviders(c), ", "))
}

// modelProviders are the providers a model may name, sorted.
func modelProviders(c *Config) []string {
	var out []string
	for _, n := range sortedKeys(c.Providers) {
		if !IsSignIn(n) {
			out = append(out, n)
		}
	}
	return out
}

// resolve fills provider types and secret values.
func (c *Config) resolve(getenv func(string) string) {
	for name, p := range c.Providers {
		if p.Type == "" && slices.Contains(providerTypes, name) {
			p.Type = name
		}
		if p.Auth == "" {
			p.Auth = "passthrough"
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
			p.Auth = "key"
			c.Providers[name] = p
		}
	}
}

// KeyHash is the SHA-256 of a gateway key, as keys: stores it (hex).
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

var providerTypes = []string{"openai", "anthropic", "gemini"}

func (l *loader) validate(c *Config) {
	if host, port, err := net.SplitHostPort(c.Listen); err != nil {
		l.at("listen", fmt.Sprintf("%q is not host:port; write it like 127.0.0.1:8787", c.Listen))
	} else {
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			l.at("listen", fmt.Sprintf("port %q must be a number from 0 to 65535", port))
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && len(c.Gateway.Keys) == 0 {
			l.at("listen", fmt.Sprintf("%s is reachable from other machines: set gateway.keys (the keys clients must send) before listening beyond 127.0.0.1", c.Listen))
		}
	}
	seenKeys := map[string]string{}
	for i, k := range c.Gateway.Keys {
		fk := fmt.Sprintf("gateway.keys[%d]", i)
		switch {
		case k.Name == "":
			l.at(fk+".name", "every gateway key needs a name (it names the key in logs and limits)")
		case k.Hash == "":
			l.at(fk+".key", "give the key as sha256:HEX (spillway config hash-key prints it), env:VAR or file:PATH; the variable or file is empty or missing")
		case len(k.Hash) != 64 || strings.Trim(k.Hash, "0123456789abcdef") != "":
			l.at(fk+".key", "sha256: takes the key's SHA-256 as 64 hex digits")
		case seenKeys[k.Hash] != "":
			l.at(fk+".key", "the same key as "+seenKeys[k.Hash])
		}
		seenKeys[k.Hash] = k.Name
		for j := 0; j < i; j++ {
			if k.Name != "" && c.Gateway.Keys[j].Name == k.Name {
				l.at(fk+".name", fmt.Sprintf("%q is also the name of gateway.keys[%d]; names tell keys apart in limits and logs", k.Name, j))
			}
		}
		for _, ch := range k.Chains {
			if _, ok := c.Chains[ch]; !ok {
				l.at(fk+".chains", fmt.Sprintf("chain %q is not defined; defined chains: %s", ch, strings.Join(sortedKeys(c.Chains), ", ")))
			}
		}
	}
	if len(c.Gateway.Keys) > 0 && c.Gateway.AdminKey.Ref == "" {
		l.warn("gateway.admin_key", "gateway.keys without an admin_key: beyond loopback the dashboard and GET /spillway/status answer 401 to everyone (on loopback they are open), and reloading over HTTP is off")
	}
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		fp := "providers." + name
		if !slices.Contains(providerTypes, p.Type) {
			if p.Type == "" {
				l.at(fp+".type", fmt.Sprintf("provider %q needs a type; allowed: %s", name, strings.Join(providerTypes, ", ")))
			} else {
				l.at(fp+".type", fmt.Sprintf("unknown type %q; allowed: %s", p.Type, strings.Join(providerTypes, ", ")))
			}
		}
		if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.at(fp+".base_url", fmt.Sprintf("%q is not an http(s) URL; write it like https://api.openai.com/v1", p.BaseURL))
		}
		switch p.Auth {
		case "passthrough":
		case "key":
			if IsSignIn(name) {
				l.at(fp+".auth", fmt.Sprintf("provider %q carries the caller's own sign-in: only auth: passthrough", name))
				break
			}
			if p.APIKey.Ref == "" {
				l.at(fp+".api_key", "auth: key needs an api_key (env:VARIABLE)")
			} else if p.APIKey.Value == "" {
				l.warn(fp+".api_key", fmt.Sprintf("%s is not set in this environment; requests to %s will fail with auth", p.APIKey.EnvVar(), name))
			}
		default:
			l.at(fp+".auth", fmt.Sprintf("unknown auth %q; allowed: passthrough (send the client's key), key (send api_key)", p.Auth))
		}
		if p.KeyHeader != "" && p.Auth != "key" {
			l.warn(fp+".key_header", "is used only with auth: key (it names the header that carries api_key); with auth: passthrough the client's own header is sent")
		}
		if _, err := url.ParseQuery(p.Query); err != nil {
			l.at(fp+".query", fmt.Sprintf("%q is not a URL query (write it like api-version=2024-10-21): %v", p.Query, err))
		}
		if p.APIKey.Ref != "" && !p.APIKey.IsEnv() {
			l.warn(fp+".api_key", "a key written in the file; prefer env:VARIABLE so the file can be shared")
		}
	}
	modelNames := sortedKeys(c.Models)
	for _, name := range modelNames {
		m := c.Models[name]
		fp := "models." + name
		if err := CheckModelName(name); err != nil {
			l.at(fp, err.Error())
		}
		_, providerSet := l.pos[fp+".provider"]
		switch {
		case len(m.Deployments) > 0 && providerSet:
			l.at(fp+".provider", "a model with deployments names a provider in each deployment, not here")
		case len(m.Deployments) > 0:
			m.Provider = "" // a built-in model's, which its deployments replace
			c.Models[name] = m
			l.deployments(c, name, m)
		default:
			if _, ok := c.Providers[m.Provider]; !ok || IsSignIn(m.Provider) {
				l.at(fp+".provider", modelProviderProblem(c, m.Provider))
			}
		}
		if m.Tier.Rank() == 0 {
			l.at(fp+".tier", fmt.Sprintf("unknown tier %q; allowed: heavy, medium, light", m.Tier))
		}
		if m.Context < 0 {
			l.at(fp+".context", fmt.Sprintf("context window must be a number of tokens (or left out when unknown), not %d", m.Context))
		}
		if m.Hedge && c.FirstToken(name) <= 0 {
			l.warn(fp+".hedge", "has no effect without a first-token limit (first_token_timeout here, or timeouts.first_token): the hedge starts when that limit passes")
		}
		if m.Hold.Tokens < 0 {
			l.at(fp+".hold.tokens", fmt.Sprintf("must be 0 (no token limit) or more, not %d", m.Hold.Tokens))
		}
		for i, d := range c.Deployments(name) {
			// a Gemini model's name goes in the URL's path
			if !c.ProviderType(d.Provider).ModelInPath() {
				continue
			}
			if err := CheckPathModel(d.Upstream); err != nil {
				field := fp
				switch {
				case len(m.Deployments) > 0 && m.Deployments[i].Upstream != "":
					field = fmt.Sprintf("%s.deployments[%d].upstream", fp, i)
				case m.Upstream != "":
					field = fp + ".upstream"
				}
				l.at(field, err.Error())
			}
		}
		if m.Chain != "" && !slices.Contains(c.Chains[m.Chain], name) {
			l.at(fp+".chain", fmt.Sprintf("%q is not a chain that holds %s; chains holding it: %s", m.Chain, name, orNone(chainsOf(c, name))))
		}
	}
	for _, name := range modelNames {
		if in := chainsOf(c, name); len(in) > 1 && c.Models[name].Chain == "" {
			at := "models." + name
			if _, written := l.pos[at]; !written {
				at = "chains." + in[len(in)-1]
				for _, c := range in { // the chain the file wrote, not a built-in one
					if _, written := l.pos["chains."+c]; written {
						at = "chains." + c
						break
					}
				}
			}
			l.at(at, fmt.Sprintf("model %s is in chains %s; a request for it walks one: name it with models.%s.chain: %s", name, strings.Join(in, " and "), name, in[0]))
		}
	}
	for _, name := range sortedKeys(c.ChainRules) {
		r, fp := c.ChainRules[name], "chains."+name
		switch r.OnUsageLimit {
		case "", UsageLimitFail, UsageLimitOverflow:
		default:
			l.at(fp+".on_usage_limit", fmt.Sprintf("unknown value %q; allowed: overflow (a usage limit goes to the overflow chain), fail (it is passed on; the default)", r.OnUsageLimit))
		}
		if r.OnUsageLimit == UsageLimitOverflow && r.Overflow == "" {
			l.at(fp+".on_usage_limit", "on_usage_limit: overflow needs an overflow: chain to go to")
		}
		if r.Overflow == "" {
			continue
		}
		y, ok := c.Chains[r.Overflow]
		switch {
		case !ok:
			l.at(fp+".overflow", fmt.Sprintf("chain %q is not defined; defined chains: %s", r.Overflow, strings.Join(sortedKeys(c.Chains), ", ")))
		case r.Overflow == name:
			l.at(fp+".overflow", "a chain cannot overflow into itself")
		case c.ChainRules[r.Overflow].Overflow == name:
			l.at(fp+".overflow", fmt.Sprintf("chains %s and %s overflow into each other: a cycle (overflow is not transitive; give one of them none)", name, r.Overflow))
		default:
			// an overflow chain may speak another wire format: its
			// models are cross-vendor steps of this chain's walks
			l.crossVendor(c, c.Chains[name], y, fp+".overflow")
		}
	}
	for _, name := range sortedKeys(c.Chains) {
		chain := c.Chains[name]
		fp := "chains." + name
		if len(chain) == 0 {
			l.at(fp, "a chain needs at least one model")
			continue
		}
		seen := map[string]bool{}
		for i, m := range chain {
			ip := fmt.Sprintf("%s[%d]", fp, i)
			model, ok := c.Models[m]
			if !ok {
				l.at(ip, fmt.Sprintf("model %q is not defined; defined models: %s", m, strings.Join(modelNames, ", ")))
				continue
			}
			if seen[m] {
				l.at(ip, fmt.Sprintf("model %q appears twice in the chain", m))
			}
			seen[m] = true
			if i > 0 {
				if prev, ok := c.Models[chain[i-1]]; ok && model.Tier.Rank() > prev.Tier.Rank() {
					l.warn(ip, fmt.Sprintf("%s (%s) comes after %s (%s): chains usually go heavy → medium → light", m, model.Tier, chain[i-1], prev.Tier))
				}
			}
		}
		// a chain may mix wire formats: a step to another vendor's model
		// is translated, with that provider's own key
		for j := 1; j < len(chain); j++ {
			l.crossVendor(c, chain[:j], chain[j:j+1], fmt.Sprintf("%s[%d]", fp, j))
		}
	}
	if c.Pacing.MaxConcurrency < 1 {
		l.at("pacing.max_concurrency", fmt.Sprintf("must be at least 1, not %d", c.Pacing.MaxConcurrency))
	}
	if !slices.Contains([]string{PaceAuto, PacePressure, PaceAlways}, c.Pacing.When) {
		l.at("pacing.when", fmt.Sprintf("unknown %q; allowed: auto (the gateway under pressure, the library and the queue always), pressure, always", c.Pacing.When))
	}
	if c.Pacing.Relax <= 0 {
		l.at("pacing.relax", "must be more than 0s")
	}
	if c.Catalog != CatalogBuiltin && c.Catalog != CatalogNone {
		l.at("catalog", fmt.Sprintf("unknown %q; allowed: builtin (the Codex CLI, Claude Code and Gemini CLI models), none (only this file's)", c.Catalog))
	}
	if c.Catalog == CatalogNone && len(c.Models) == 0 {
		l.at("catalog", "catalog: none needs models: of the file's own")
	}
	for _, r := range []struct {
		key string
		n   int
	}{{"retry.network_retries", c.Retry.NetworkRetries}, {"retry.rate_limit_retries", c.Retry.RateLimitRetries}, {"retry.timeout_retries", c.Retry.TimeoutRetries}} {
		if r.n < 0 || r.n > 20 {
			l.at(r.key, fmt.Sprintf("must be from 0 to 20, not %d", r.n))
		}
	}
	for i := 1; i < len(c.Retry.Ladder); i++ {
		if c.Retry.Ladder[i] < c.Retry.Ladder[i-1] {
			l.warn(fmt.Sprintf("retry.ladder[%d]", i), "the ladder usually grows: each rung waits longer than the one before")
		}
	}
	if c.Retry.BackoffMax < c.Retry.BackoffBase {
		l.at("retry.backoff_max", fmt.Sprintf("must be at least backoff_base (%s)", c.Retry.BackoffBase.D()))
	}
	if c.Breaker.Failures < 1 {
		l.at("breaker.failures", fmt.Sprintf("must be at least 1, not %d", c.Breaker.Failures))
	}
	if c.Breaker.Consecutive < 0 {
		l.at("breaker.consecutive", fmt.Sprintf("must be 0 (off) or more, not %d", c.Breaker.Consecutive))
	}
	if c.Breaker.Window <= 0 {
		l.at("breaker.window", "must be more than 0s")
	}
	if c.Breaker.Cooldown <= 0 {
		l.at("breaker.cooldown", "must be more than 0s")
	}
	switch u, err := url.Parse(c.State); {
	case c.State == "memory":
	case err == nil && (u.Scheme == "redis" || u.Scheme == "rediss") && u.Host != "":
		// the gateways of a fleet share their breakers' evidence (internal/fleet)
	default:
		l.at("state", fmt.Sprintf("%q: allowed: memory, or redis://HOST:PORT[/DB] for a fleet of gateways that share their breakers", c.State))
	}
	switch db := c.Queue.DB; {
	case db == "sqlite", strings.HasPrefix(db, "sqlite:") && len(db) > len("sqlite:"):
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		if _, err := url.Parse(db); err != nil {
			l.at("queue.db", "not a valid postgres:// URL")
		}
	default:
		l.at("queue.db", fmt.Sprintf("%q: allowed: sqlite, sqlite:PATH, or a postgres:// URL", db))
	}
	if c.Queue.GlobalConcurrency < 0 {
		l.at("queue.global_concurrency", fmt.Sprintf("must be 0 (no limit) or more, not %d", c.Queue.GlobalConcurrency))
	}
	if c.Queue.Concurrency < 1 || c.Queue.Concurrency > 64 {
		l.at("queue.concurrency", fmt.Sprintf("must be from 1 to 64, not %d", c.Queue.Concurrency))
	}
	if c.Queue.GapMax < c.Queue.GapMin {
		l.at("queue.gap_max", fmt.Sprintf("must be at least gap_min (%s)", c.Queue.GapMin.D()))
	}
	if c.Events.MaxSizeMB < 1 {
		l.at("events.max_size_mb", fmt.Sprintf("must be at least 1, not %d", c.Events.MaxSizeMB))
	}
	if c.Gateway.MaxBodyMB < 1 || c.Gateway.MaxBodyMB > 1024 {
		l.at("gateway.max_body_mb", fmt.Sprintf("must be from 1 to 1024, not %d", c.Gateway.MaxBodyMB))
	}
	if c.Gateway.MaxInflightMB < 1 {
		l.at("gateway.max_inflight_mb", fmt.Sprintf("must be at least 1, not %d", c.Gateway.MaxInflightMB))
	} else if c.Gateway.MaxBodyMB > c.Gateway.MaxInflightMB {
		l.at("gateway.max_body_mb", fmt.Sprintf("%d MiB is more than gateway.max_inflight_mb (%d): a request that large could never be taken", c.Gateway.MaxBodyMB, c.Gateway.MaxInflightMB))
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"gateway.read_timeout", c.Gateway.ReadTimeout}, {"gateway.keepalive_timeout", c.Gateway.KeepaliveTimeout}} {
		if d.v <= 0 {
			l.at(d.key, "must be more than 0s: without it a client that sends nothing holds its connection forever")
		}
	}
	if c.Gateway.MaxConnections < 1 {
		l.at("gateway.max_connections", fmt.Sprintf("must be at least 1, not %d: the connections a gateway beyond loopback holds at once (default 1024)", c.Gateway.MaxConnections))
	}
	if c.Gateway.MaxConnectionsPerAddress < 0 {
		l.at("gateway.max_connections_per_address", fmt.Sprintf("must be 0 (no cap, the default) or more, not %d", c.Gateway.MaxConnectionsPerAddress))
	}
	for i, o := range c.Gateway.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" && u.Path != "/" {
			l.at(fmt.Sprintf("gateway.allowed_origins[%d]", i), fmt.Sprintf("%q is not an origin; write it like https://app.example or http://localhost:3000", o))
		}
	}
	// the watchdogs had no section of their own before; a file that sets
	// them under gateway: still works
	for _, old := range []struct {
		key, now string
		from     Duration
		to       *Duration
	}{
		{"gateway.first_token_timeout", "timeouts.first_token", c.Gateway.FirstToken, &c.Timeouts.FirstToken},
		{"gateway.idle_timeout", "timeouts.idle", c.Gateway.Idle, &c.Timeouts.Idle},
	} {
		if _, set := l.pos[old.key]; set {
			if _, both := l.pos[old.now]; both {
				l.at(old.key, "is also set as "+old.now+"; keep only "+old.now)
				continue
			}
			*old.to = old.from
			l.warn(old.key, "has moved to "+old.now+" (it applies to the library and the queue too); spillway reads it there")
		}
	}
	c.Gateway.FirstToken, c.Gateway.Idle = 0, 0
	if c.Events.Keep < 0 {
		l.at("events.keep", fmt.Sprintf("must be 0 or more, not %d", c.Events.Keep))
	}
}

// crossVendor warns about the cross-vendor steps from the models of from to
// those of to: a model of to whose wire format differs from that of a model
// of from that a walk reaches it from. Such a step is translated and sent
// with its provider's own api_key (never the caller's credentials), so a
// provider without one makes it always skipped; and a request that needs
// what the target does not take (tools: false, images: false) skips it.
// The warnings name field, where to is written.
func (l *loader) crossVendor(c *Config, from, to []string, at string) {
	for _, target := range to {
		m, ok := c.Models[target]
		if !ok {
			continue
		}
		format := c.ModelType(target)
		var others []string // the models of from of another format
		for _, f := range from {
			if t := c.ModelType(f); t != "" && format != "" && t != format {
				others = append(others, f)
			}
		}
		if len(others) == 0 {
			continue
		}
		if none := keyless(c, target); none != "" {
			l.warn(at, fmt.Sprintf("%s is another vendor's (%s) model: a cross-vendor step uses its provider's own api_key, and %s, so this step is always skipped", target, format, none))
		}
		for _, lack := range []struct {
			what string
			has  func(Model) bool
		}{{"tools", Model.TakesTools}, {"images", Model.TakesImages}} {
			if lack.has(m) {
				continue
			}
			for _, f := range others {
				if lack.has(c.Models[f]) {
					l.warn(at, fmt.Sprintf("%s is another vendor's (%s) model with %s: false, and %s takes %s: a cross-vendor step to it loses %s, so a request with %s skips it", target, format, lack.what, f, lack.what, lack.what, lack.what))
					break
				}
			}
		}
	}
}

// keyless says, of a model none of whose deployments' providers has an
// api_key (none written, or an env:VAR not set), "provider anthropic has
// none" (with the variable that is not set); "" when one has a key.
func keyless(c *Config, model string) string {
	var names []string
	for _, d := range c.Deployments(model) {
		if c.Providers[d.Provider].APIKey.Value != "" {
			return ""
		}
		if !slices.Contains(names, d.Provider) {
			names = append(names, d.Provider)
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("provider %s has none%s", names[0], unsetEnv(c.Providers[names[0]].APIKey))
	}
	return fmt.Sprintf("none of its providers (%s) has one", strings.Join(names, ", "))
}

// unsetEnv says why an env:VAR key is empty: " (VAR is not set in this
// environment)"; "" for a key not written.
func unsetEnv(s Secret) string {
	if s.IsEnv() {
		return fmt.Sprintf(" (%s is not set in this environment)", s.EnvVar())
	}
	return ""
}

// deployments checks a model's deployments: names told apart and fit to
// print, weights from 1 to maxWeight, defined providers, one wire format.
func (l *loader) deployments(c *Config, name string, m Model) {
	seen := map[string]int{}
	var format Format
	for i, d := range c.Deployments(name) {
		dp := fmt.Sprintf("models.%s.deployments[%d]", name, i)
		if j, dup := seen[d.Name]; dup {
			l.at(dp+".name", fmt.Sprintf("%q is also the name of deployments[%d]; give each a name of its own", d.Name, j))
		}
		seen[d.Name] = i
		if !deploymentName.MatchString(d.Name) {
			field, what := dp+".name", fmt.Sprintf("%q", d.Name)
			if m.Deployments[i].Name == "" {
				field, what = dp+".provider", fmt.Sprintf("the provider's name %q (the deployment's name when it has none)", d.Name)
			}
			l.at(field, fmt.Sprintf("%s cannot name a deployment: routes and metrics write it as model@name, so use letters, digits, '.', '_' and '-' (or give the deployment a name:)", what))
		}
		if w := m.Deployments[i].Weight; w < 0 || w > maxWeight {
			l.at(dp+".weight", fmt.Sprintf("must be 1 to %d (0 means 1), not %d", maxWeight, w))
		}
		if _, ok := c.Providers[d.Provider]; !ok || IsSignIn(d.Provider) {
			l.at(dp+".provider", modelProviderProblem(c, d.Provider))
			continue
		}
		if t := c.ProviderType(d.Provider); format == "" {
			format = t
		} else if t != format {
			l.at(dp+".provider", fmt.Sprintf("%s speaks %s but the model's first deployment speaks %s; a model's deployments share one wire format", d.Provider, t, format))
		}
	}
}

// maxWeight bounds a deployment's weight: shares finer than 1 in 1000 mean
// nothing to a balancer that sees a few requests a second.
const maxWeight = 1000

// chainsOf names the chains that hold model, sorted.
func chainsOf(c *Config, model string) []string {
	var in []string
	for _, n := range sortedKeys(c.Chains) {
		if slices.Contains(c.Chains[n], model) {
			in = append(in, n)
		}
	}
	return in
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortStrings(s []string) { sort.Strings(s) }
