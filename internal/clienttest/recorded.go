package clienttest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// Member is one member of a JSON object, its value's bytes as written.
type Member struct{ Name, Value string }

// Members are the members of obj, a JSON object, in order (a name given
// twice, twice), each value's bytes as written.
func Members(t testing.TB, obj []byte) []Member {
	t.Helper()
	d := jsontext.NewDecoder(bytes.NewReader(obj), jsontext.AllowDuplicateNames(true))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		t.Fatalf("not an object: %v %s", err, obj)
	}
	var ms []Member
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		name := tok.String()
		v, err := d.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, Member{name, string(v)})
	}
	return ms
}

// RecordedBody is the body of a client request recorded under
// testdata/clients (NAME.json), its bytes as the file holds them.
func RecordedBody(t testing.TB, name string) []byte {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "testdata", "clients", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Members(t, b) {
		if m.Name == "body" {
			return []byte(m.Value)
		}
	}
	t.Fatalf("%s has no body", name)
	return nil
}
