package config_test

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/config"
)

func TestCheckPathModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"gemini-2.5-pro", true},
		{"0_model.v2", true},
		{"a" + strings.Repeat("b", 127), true},
		{"a" + strings.Repeat("b", 128), false}, // 129 characters
		{"", false},
		{"-gemini", false},
		{".hidden", false},
		{"../x", false},
		{"models/x", false},
		{"x%2Fy", false},
		{"x?key=y", false},
		{"x#y", false},
		{"x y", false},
		{"gémini", false},
	} {
		err := config.CheckPathModel(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckPathModel(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "cannot go in a URL") {
			t.Errorf("CheckPathModel(%q) = %q, want it to say why", tc.name, err)
		}
	}
}
