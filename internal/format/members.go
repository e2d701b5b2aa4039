package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/spillway/spillway/internal/wire"
)

// Member is one member of a JSON object: its name and its value, raw JSON.
// For Reshape, Keep (when set) says whether a body's own member of the
// name, its raw value given, stays; one it refuses is replaced by this one.
type Member struct {
	Name  string
	Value []byte
	Keep  func(value []byte) bool
}

// Reshape is body, a JSON object, with the members named in drop taken out
// (every one of a name that comes twice) and add's members appended after
// the rest, each unless body has a member of its name (that its Keep
// keeps, when it has a Keep; one it refuses is dropped): what a cloud's
// envelope makes of a request body (Bedrock's and Vertex AI's: no model,
// their anthropic_version). The other members keep their bytes and their
// order: no number or string is decoded and written again, only the
// whitespace between members goes. An error says how body is not an
// object (wire.ErrNotObject).
func Reshape(body []byte, drop []string, add ...Member) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("%w (it is empty)", wire.ErrNotObject)
	}
	d := jsontext.NewDecoder(bytes.NewReader(body),
		jsontext.AllowDuplicateNames(true), // as the caller's provider would read it
		jsontext.AllowInvalidUTF8(true))
	if d.PeekKind() != '{' {
		if _, err := d.ReadValue(); err != nil {
			return nil, notObject(err)
		}
		return nil, wire.ErrNotObject
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, notObject(err)
	}
	out := make([]byte, 0, len(body)+64)
	out = append(out, '{')
	has := make([]bool, len(add))
	var plain []byte
	for d.PeekKind() != '}' {
		mark := len(out)
		if mark > 1 {
			out = append(out, ',')
		}
		name, err := d.ReadValue() // a name, as it was written
		if err != nil {
			return nil, notObject(err)
		}
		out = append(out, name...) // (name is the decoder's until its next read)
		if plain, err = jsontext.AppendUnquote(plain[:0], name); err != nil {
			return nil, notObject(err)
		}
		value, err := d.ReadValue()
		if err != nil {
			return nil, notObject(err)
		}
		if slices.Contains(drop, string(plain)) || refused(add, string(plain), value) {
			out = out[:mark]
			continue
		}
		for i, m := range add {
			has[i] = has[i] || m.Name == string(plain)
		}
		out = append(append(out, ':'), value...)
	}
	if _, err := d.ReadToken(); err != nil { // the '}'
		return nil, notObject(err)
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w (something follows the object)", wire.ErrNotObject)
	}
	for i, m := range add {
		if has[i] {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		name, err := jsontext.AppendQuote(out, m.Name)
		if err != nil {
			return nil, err
		}
		out = append(append(name, ':'), m.Value...)
	}
	return append(out, '}'), nil
}

// Prefixed is a Member's Keep that keeps a string value starting with
// prefix (as written: an escaped letter does not match).
func Prefixed(prefix string) func([]byte) bool {
	quoted := []byte(`"` + prefix)
	return func(v []byte) bool { return bytes.HasPrefix(v, quoted) }
}

// refused reports whether a member of add named name has a Keep that
// refuses value.
func refused(add []Member, name string, value []byte) bool {
	for _, m := range add {
		if m.Name == name && m.Keep != nil && !m.Keep(value) {
			return true
		}
	}
	return false
}

// notObject is the error of a body that is not a JSON object, for err,
// what the decoder found.
func notObject(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w (it ends in the middle)", wire.ErrNotObject)
	}
	return fmt.Errorf("%w (%v)", wire.ErrNotObject, err)
}
