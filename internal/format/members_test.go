package format

import (
	"errors"
	"strings"
	"testing"

	"github.com/spillway/spillway/internal/wire"
)

func TestReshape(t *testing.T) {
	version := Member{Name: "v", Value: []byte(`"1"`)}
	list := Member{Name: "l", Value: []byte(`["a","b"]`)}
	tests := []struct {
		name string
		body string
		drop []string
		add  []Member
		want string
	}{
		{"nothing to do", `{"a":1,"b":[1, 2]}`, nil, nil, `{"a":1,"b":[1, 2]}`},
		{"dropped, first and last", `{"x":1,"a":2,"x":3}`, []string{"x"}, nil, `{"a":2}`},
		{"all dropped", `{"x":1,"y":2}`, []string{"x", "y"}, []Member{version}, `{"v":"1"}`},
		{"added in their order", `{"a":1}`, nil, []Member{version, list}, `{"a":1,"v":"1","l":["a","b"]}`},
		{"one the body has", "{\n\t\"l\" : null ,\"a\":1}", nil, []Member{version, list}, `{"l":null,"a":1,"v":"1"}`},
		{"one the body has under an escaped name", `{"\u006c":0}`, nil, []Member{list}, `{"\u006c":0}`},
		{"one dropped and added", `{"v":"0","a":1}`, []string{"v"}, []Member{version}, `{"a":1,"v":"1"}`},
		{"values as they were", `{"n":-0.0e+00,"s":"\ud83d\ude00\/","o":{ "k" : [ ] }}`, nil, nil, `{"n":-0.0e+00,"s":"\ud83d\ude00\/","o":{ "k" : [ ] }}`},
		{"invalid UTF-8 kept", "{\"s\":\"\xff\"}", nil, nil, "{\"s\":\"\xff\"}"},
		{"a name that needs quoting", `{}`, nil, []Member{{Name: `a"b`, Value: []byte(`1`)}}, `{"a\"b":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Reshape([]byte(tt.body), tt.drop, tt.add...)
			if err != nil || string(got) != tt.want {
				t.Errorf("Reshape(%s) = %s %v, want %s", tt.body, got, err, tt.want)
			}
		})
	}
}

func TestReshapeNotObject(t *testing.T) {
	tests := []struct{ body, words string }{
		{"", "empty"},
		{"  \n", "empty"},
		{"[1]", "not a JSON object"},
		{"12", "not a JSON object"},
		{`{"a":1`, "ends in the middle"},
		{`{"a" 1}`, "not a JSON object ("},
		{`{"a":1} {}`, "something follows"},
		{`{"a":tru}`, "not a JSON object ("},
	}
	for _, tt := range tests {
		_, err := Reshape([]byte(tt.body), []string{"model"})
		if !errors.Is(err, wire.ErrNotObject) || !strings.Contains(err.Error(), tt.words) {
			t.Errorf("Reshape(%q): %v, want wire.ErrNotObject saying %q", tt.body, err, tt.words)
		}
	}
}
