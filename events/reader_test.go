package events

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestRead(t *testing.T) {
	long := strings.Repeat("e", 1<<20) // far past bufio.Scanner's 64 KiB
	tests := []struct {
		name      string
		in        string
		wantIDs   []string
		wantCount int   // malformed lines
		wantLines []int // their numbers, as listed
	}{
		{name: "empty"},
		{name: "one line without newline", in: `{"request_id":"a"}`, wantIDs: []string{"a"}},
		{
			name:    "blank lines, CRLF, spaces",
			in:      "\n{\"request_id\":\"a\"}\r\n\n   \n\t{\"request_id\":\"b\"}  \n\n",
			wantIDs: []string{"a", "b"},
		},
		{
			name:    "unknown fields are ignored",
			in:      `{"request_id":"a","future_field":{"x":[1,2]}}` + "\n",
			wantIDs: []string{"a"},
		},
		{
			name:    "long line",
			in:      `{"request_id":"a","error":"` + long + `"}` + "\n" + `{"request_id":"b"}`,
			wantIDs: []string{"a", "b"},
		},
		{
			name:      "malformed lines are counted and skipped",
			in:        "{\"request_id\":\"a\"}\nnot json\n{\"request_id\":\"b\"}\n{\"request_id\":\"c\"\n\nnull\n[1]\n\"s\"\n{\"status\":\"x\"}\n{\"ts\":\"yesterday\"}\n{\"request_id\":\"d\"}",
			wantIDs:   []string{"a", "b", "d"},
			wantCount: 7,
			wantLines: []int{2, 4, 6, 7, 8},
		},
		{
			name:      "truncated last line",
			in:        "{\"request_id\":\"a\"}\n{\"request_id\":\"b\",\"sta",
			wantIDs:   []string{"a"},
			wantCount: 1,
			wantLines: []int{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader splits every line across reads.
			var ids []string
			err := Read(iotest.OneByteReader(strings.NewReader(tt.in)), func(rec Record) error {
				ids = append(ids, rec.RequestID)
				return nil
			})
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("records %q, want %q", ids, tt.wantIDs)
			}
			var me *MalformedError
			switch {
			case tt.wantCount == 0 && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tt.wantCount > 0 && (!errors.As(err, &me) || me.Count != tt.wantCount || !slices.Equal(me.Lines, tt.wantLines)):
				t.Errorf("err = %v, want %d malformed at %v", err, tt.wantCount, tt.wantLines)
			}
		})
	}
}

func TestMalformedErrorMessage(t *testing.T) {
	tests := []struct {
		err  MalformedError
		want string
	}{
		{MalformedError{Count: 1, Lines: []int{3}}, "1 malformed event line (line 3)"},
		{MalformedError{Path: "e.jsonl", Count: 2, Lines: []int{3, 9}}, "e.jsonl: 2 malformed event lines (line 3, 9)"},
		{MalformedError{Count: 8, Lines: []int{1, 2, 3, 4, 5}}, "8 malformed event lines (line 1, 2, 3, 4, 5, …)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestReadStopsAtCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Read(strings.NewReader("{}\n{}\n{}\n"), func(Record) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("err = %v after %d records, want stop after 1", err, n)
	}
}

func TestReadFileNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(path, []byte("{}\nbad\n"), 0o600)
	err := ReadFile(path, func(Record) error { return nil })
	var me *MalformedError
	if !errors.As(err, &me) || me.Path != path || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("err = %v, want a MalformedError naming %s", err, path)
	}
	if err := ReadFile(path+".missing", func(Record) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
}

func TestReadRotated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	files := map[string]string{ // name -> request IDs it holds
		"events.jsonl.10": "a",
		"events.jsonl.3":  "b c",
		"events.jsonl.1":  "d",
		"events.jsonl":    "e f",
		// Not rotated files of this log.
		"events.jsonl.01":  "x",
		"events.jsonl.bak": "x",
		"events.jsonl.-1":  "x",
		"other.jsonl.2":    "x",
	}
	for name, ids := range files {
		var b bytes.Buffer
		for id := range strings.FieldsSeq(ids) {
			b.WriteString(`{"request_id":"` + id + "\"}\n")
		}
		os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o600)
	}
	var got []string
	if err := ReadRotated(path, func(r Record) error { got = append(got, r.RequestID); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d", "e", "f"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}

	// Malformed lines in two files: both reported, reading goes on.
	os.WriteFile(filepath.Join(dir, "events.jsonl.3"), []byte("oops\n"), 0o600)
	os.WriteFile(path, []byte("{}\n{}\noops\n"), 0o600)
	n := 0
	err := ReadRotated(path, func(Record) error { n++; return nil })
	if n != 4 || err == nil || !strings.Contains(err.Error(), ".3: 1 malformed") || !strings.Contains(err.Error(), "events.jsonl: 1 malformed event line (line 3)") {
		t.Errorf("read %d records, err = %v", n, err)
	}

	// Only rotated files left: still read.
	os.Remove(path)
	if err := ReadRotated(path, func(Record) error { return nil }); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("without the current file: err = %v, want the malformed line of .3", err)
	}
}

func TestReadRotatedMissing(t *testing.T) {
	for _, path := range []string{
		filepath.Join(t.TempDir(), "events.jsonl"),
		filepath.Join(t.TempDir(), "no", "such", "events.jsonl"),
	} {
		if err := ReadRotated(path, func(Record) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: err = %v, want ErrNotExist", path, err)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"explicit", map[string]string{"SPILLWAY_EVENTS": "/tmp/e.jsonl", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/tmp/e.jsonl"},
		{"xdg", map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/h"}, "/x/state/spillway/events.jsonl"},
		{"relative xdg is ignored", map[string]string{"XDG_STATE_HOME": "state", "HOME": "/h"}, "/h/.local/state/spillway/events.jsonl"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.local/state/spillway/events.jsonl"},
		{"nothing", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DefaultPath(func(k string) string { return tt.env[k] })
			if got != filepath.FromSlash(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"",
		"\n\n",
		`{"ts":"2026-03-01T12:34:56.123Z","request_id":"r","attempt":1,"status":529,"stream":true,"error":"x"}` + "\n",
		"{}\r\n{\"request_id\":\"\\u00e9\"}\nnot json\n",
		`{"ts":"yesterday"}`,
		"null\n[]\n{\"attempt\":1e999}\n{\"a\":",
		"\xff\xfe{\"error\":\"\xc3\x28\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		records := 0
		err := Read(bytes.NewReader(data), func(Record) error { records++; return nil })
		bad := 0
		if err != nil {
			me, ok := err.(*MalformedError)
			if !ok {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if me.Count == 0 || len(me.Lines) > maxListed || !slices.IsSorted(me.Lines) {
				t.Fatalf("inconsistent %#v", me)
			}
			bad = me.Count
		}
		// Every non-blank line is either a record or a malformed line.
		lines := 0
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				lines++
			}
		}
		if records+bad != lines {
			t.Fatalf("%d records + %d malformed != %d non-blank lines", records, bad, lines)
		}
	})
}

// OpenRotated holds the log as it was when opened: a rotation after it
// moves no file, and what the writer appends after it is outside the
// snapshot (a whole read of the file still finds it).
func TestOpenRotated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	write := func(name, ids string) {
		t.Helper()
		var b bytes.Buffer
		for id := range strings.FieldsSeq(ids) {
			b.WriteString(`{"request_id":"` + id + "\"}\n")
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("events.jsonl.2", "a")
	write("events.jsonl.1", "b c")
	write("events.jsonl", "d")
	log, err := OpenRotated(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// the writer rotates, and writes on
	for _, mv := range [][2]string{{"events.jsonl.2", "events.jsonl.3"}, {"events.jsonl.1", "events.jsonl.2"}, {"events.jsonl", "events.jsonl.1"}} {
		if err := os.Rename(filepath.Join(dir, mv[0]), filepath.Join(dir, mv[1])); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl.1"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"request_id":"late"}` + "\n" + `{"request_id":"cu`)
	f.Close()
	write("events.jsonl", "e")

	var names, snap []string
	for _, f := range log.Files {
		if f.Err != nil {
			t.Fatalf("%s: %v", f.Name, f.Err)
		}
		names = append(names, filepath.Base(f.Name))
		if err := Read(Decompressed(f.Snapshot()), func(r Record) error { snap = append(snap, r.RequestID); return nil }); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	if want := []string{"events.jsonl.2", "events.jsonl.1", "events.jsonl"}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(snap, want) {
		t.Errorf("snapshot read %q, want %q", snap, want)
	}
	last := log.Files[len(log.Files)-1]
	var rest []string
	err = Read(last.File, func(r Record) error { rest = append(rest, r.RequestID); return nil })
	var me *MalformedError
	if !slices.Equal(rest, []string{"late"}) || !errors.As(err, &me) || me.Cut != 1 {
		t.Errorf("the rest of the current file: %q, err %v; want the appended record and a cut one", rest, err)
	}
}

// A file that exists but cannot be opened is listed with its error; a log
// none of whose files exists is fs.ErrNotExist.
func TestOpenRotatedErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	if _, err := OpenRotated(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no log: err = %v, want ErrNotExist", err)
	}
	// a symlink to itself: it is listed, and opening it fails (ELOOP)
	if err := os.Symlink("events.jsonl.1", filepath.Join(dir, "events.jsonl.1")); err != nil {
		t.Fatal(err)
	}
	log, err := OpenRotated(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if len(log.Files) != 1 || log.Files[0].Err == nil || log.Files[0].File != nil || errors.Is(log.Files[0].Err, fs.ErrNotExist) {
		t.Fatalf("files %+v, want events.jsonl.1 with its error", log.Files)
	}
	if err := ReadRotated(path, func(Record) error { return nil }); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadRotated: err = %v, want the open error", err)
	}
}
