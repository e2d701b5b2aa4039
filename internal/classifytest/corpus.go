// Package classifytest loads the classifier corpus (testdata/classify) for
// the tests of classify and of the commands built on it.
package classifytest

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/spillway/spillway/classify"
)

// Entry is one corpus case.
type Entry struct {
	Name    string            `yaml:"name"`
	Status  int               `yaml:"status"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	Event   string            `yaml:"event"`
	Text    string            `yaml:"text"`
	Now     string            `yaml:"now"`
	// Hint is the caller's provider hint (classify.Input.Provider): the
	// cloud a gateway knows it sent the request to.
	Hint string `yaml:"hint"`
	Want struct {
		Class     string  `yaml:"class"`
		Provider  string  `yaml:"provider"`
		Retryable *bool   `yaml:"retryable"`
		Wait      *string `yaml:"wait"`
		Notice    *bool   `yaml:"notice"`
	} `yaml:"want"`
	File string `yaml:"-"`
}

// DefaultNow is the reference time of entries without their own.
var DefaultNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// Input builds the classifier input of the entry.
func (e Entry) Input(t testing.TB) classify.Input {
	h := http.Header{}
	for k, v := range e.Headers {
		h.Set(k, v)
	}
	in := classify.Input{Status: e.Status, Header: h, Body: []byte(e.Body), Event: e.Event, Text: e.Text, Now: DefaultNow, Provider: classify.Provider(e.Hint)}
	if e.Now != "" {
		now, err := time.Parse(time.RFC3339, e.Now)
		if err != nil {
			t.Fatalf("%s: bad now: %v", e.Name, err)
		}
		in.Now = now
	}
	return in
}

// WantWait is the expected wait, if the entry sets one.
func (e Entry) WantWait(t testing.TB) (time.Duration, bool) {
	if e.Want.Wait == nil {
		return 0, false
	}
	d, err := time.ParseDuration(*e.Want.Wait)
	if err != nil {
		t.Fatalf("%s: bad want.wait %q", e.Name, *e.Want.Wait)
	}
	return d, true
}

// Load reads every corpus file under dir.
func Load(t testing.TB, dir string) []Entry {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in %s: %v", dir, err)
	}
	var all []Entry
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var entries []Entry
		if err := yaml.UnmarshalWithOptions(b, &entries, yaml.DisallowUnknownField()); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range entries {
			entries[i].File = filepath.Base(f)
			if entries[i].Want.Class == "" {
				t.Fatalf("%s: entry %q has no want.class", f, entries[i].Name)
			}
			if _, ok := classify.ParseClass(entries[i].Want.Class); !ok {
				t.Fatalf("%s: entry %q: unknown class %q", f, entries[i].Name, entries[i].Want.Class)
			}
		}
		all = append(all, entries...)
	}
	return all
}
