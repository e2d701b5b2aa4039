package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// The shape check: before the file is decoded, walk holds every node of it
// to the Go type it is decoded into, so that each mistake (an unknown
// field, a value of the wrong kind) names its line and field.

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
		l.walkFields(n, t, path)
	case t.Kind() == reflect.Map:
		l.walkEntries(n, t, path)
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

// walkFields checks a mapping against the fields of struct type t: each
// known, each once.
func (l *loader) walkFields(n ast.Node, t reflect.Type, path string) {
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
}

// walkEntries checks a mapping of names to entries (map type t): each name
// once, each entry as t's element.
func (l *loader) walkEntries(n ast.Node, t reflect.Type, path string) {
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
