package events

import (
	"bufio"
	"bytes"
	"compress/gzip"

	"errors"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/spillway/spillway/internal/lineio"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// maxListed is how many malformed line numbers a MalformedError keeps.
const maxListed = 5

// MalformedError reports lines that were not JSON objects decoding into a
// Record. Reading went on past them: every good record was delivered.
type MalformedError struct {
	Path  string // the file, when known
	Count int    // malformed lines in all
	Lines []int  // 1-based numbers of the first few (at most 5)
	// Cut is how many of them are an object cut short: what a write that
	// stopped part-way (a full disk, a crash) leaves of a record.
	Cut int
}

func (e *MalformedError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	fmt.Fprintf(&b, "%d malformed event line", e.Count)
	if e.Count != 1 {
		b.WriteString("s")
	}
	for i, n := range e.Lines {
		if i == 0 {
			b.WriteString(" (line ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(n))
	}
	if e.Count > len(e.Lines) {
		b.WriteString(", …")
	}
	if len(e.Lines) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// Read streams the records of a JSONL event log to fn, in order (a gap
// line, that says records the writer lost, comes as a Record with only Gap
// set). Lines are
// decoded by the encoding/json v2 prototype (the Go team's
// go-json-experiment/json): twice as fast as encoding/json on records
// (spillway report reads millions), and its keys match exactly, as the
// contract says (a "Model" key is not "model"). Lines may
// be of any length; blank lines are skipped; a line that is not a record is
// counted and skipped, and after the whole input a *MalformedError lists
// them. Unknown fields are ignored (the format only grows). An error from
// fn stops reading and is returned as is.
func Read(r io.Reader, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var bad MalformedError
	var buf []byte
	for n := 1; ; n++ {
		var err error
		buf, err = lineio.Read(br, buf[:0])
		if line := bytes.TrimSpace(buf); len(line) > 0 {
			var rec Record
			var derr error
			if line[0] == '{' {
				derr = jsonv2.Unmarshal(line, &rec)
			}
			if line[0] != '{' || derr != nil {
				bad.Count++
				if errors.Is(derr, io.ErrUnexpectedEOF) {
					bad.Cut++
				}
				if len(bad.Lines) < maxListed {
					bad.Lines = append(bad.Lines, n)
				}
			} else if ferr := fn(rec); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("events: read line %d: %w", n, err)
		}
	}
	if bad.Count > 0 {
		return &bad
	}
	return nil
}

// ReadFile is Read on the file at path; a *MalformedError names the file.
func ReadFile(path string, fn func(Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer f.Close()
	err = Read(f, fn)
	if me, ok := err.(*MalformedError); ok {
		me.Path = path
	}
	return err
}

// ReadRotated reads a rotated log in chronological order: path.N, …,
// path.1, then path (any of them gzipped: path.N.gz, as logrotate leaves
// them, or gzip data under the plain name), each to its end. Missing files
// are skipped, but if none exists the error wraps fs.ErrNotExist. Malformed
// lines in several files come back joined (errors.As finds the first
// *MalformedError); an error from fn, or a file that exists but cannot be
// opened, stops reading.
func ReadRotated(path string, fn func(Record) error) error {
	log, err := OpenRotated(path)
	if err != nil {
		return err
	}
	defer log.Close()
	var malformed []error
	for _, f := range log.Files {
		if f.Err != nil {
			return fmt.Errorf("events: %w", f.Err)
		}
		err := Read(Decompressed(f.File), fn)
		if me, ok := err.(*MalformedError); ok {
			me.Path = f.Name
			malformed = append(malformed, me)
		} else if err != nil {
			return err
		}
	}
	return errors.Join(malformed...)
}

// RotatedLog is a rotated log's files, open (OpenRotated); Close closes
// them.
type RotatedLog struct {
	Files []RotatedFile // oldest first, as RotatedFiles lists them
}

// RotatedFile is one file of a RotatedLog.
type RotatedFile struct {
	Name string   // path.N, path.N.gz or path
	File *os.File // the open file; nil when Err is set
	Size int64    // what it held when it was opened
	Err  error    // why a file that exists could not be opened (or stat'ed)
}

// Snapshot is the file as it was when it was opened: its first Size bytes,
// without what a writer appends after (a record it is part-way through
// included). Decompressed reads it as Read needs.
func (f RotatedFile) Snapshot() io.Reader { return io.LimitReader(f.File, f.Size) }

// OpenRotated opens a rotated log's files (RotatedFiles), all of them
// before any is read: an open file stays itself when the writer rotates,
// so the files hold the log as it was, in order, whatever rotation happens
// while they are read. A file that does not exist (the current one before
// the first write, or one rotated away since the listing) is left out; one
// that exists but cannot be opened is listed with its Err. If none exists,
// the error wraps fs.ErrNotExist.
func OpenRotated(path string) (*RotatedLog, error) {
	names, err := RotatedFiles(path)
	if err != nil {
		return nil, err
	}
	log := &RotatedLog{}
	for _, name := range names {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			log.Files = append(log.Files, RotatedFile{Name: name, Err: err})
			continue
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			log.Files = append(log.Files, RotatedFile{Name: name, Err: err})
			continue
		}
		log.Files = append(log.Files, RotatedFile{Name: name, File: f, Size: st.Size()})
	}
	if len(log.Files) == 0 {
		return nil, fmt.Errorf("events: no log at %s: %w", path, os.ErrNotExist)
	}
	return log, nil
}

// Close closes the log's files.
func (l *RotatedLog) Close() error {
	var errs []error
	for _, f := range l.Files {
		if f.File != nil {
			errs = append(errs, f.File.Close())
		}
	}
	return errors.Join(errs...)
}

// RotatedFiles lists a rotated log's files oldest first: path.N (or
// path.N.gz), …, path.1, then path (which may not exist).
func RotatedFiles(path string) ([]string, error) {
	nums, err := rotatedNumbers(path)
	if err != nil {
		return nil, err
	}
	gz, err := rotatedNumbersWith(path, ".gz")
	if err != nil {
		return nil, err
	}
	seen := map[int]string{}
	for _, n := range nums {
		seen[n] = rotatedName(path, n)
	}
	for _, n := range gz {
		if _, ok := seen[n]; !ok {
			seen[n] = rotatedName(path, n) + ".gz"
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	files := make([]string, 0, len(nums)+1)
	for _, n := range slices.Backward(nums) {
		files = append(files, seen[n])
	}
	return append(files, path), nil
}

// Decompressed is r, or r gunzipped when it starts with gzip's magic.
func Decompressed(r io.Reader) io.Reader {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		if zr, err := gzip.NewReader(br); err == nil {
			return zr
		}
	}
	return br
}
