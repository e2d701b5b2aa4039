package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spillway/spillway/events"
)

// EventOf is an event log record as a report event.
func EventOf(r events.Record) Event {
	in := r.EstInputTokens
	if in == 0 && r.ReqBytes > 0 {
		in = int(r.ReqBytes / 4) // about four bytes a token
	}
	class := r.Class
	switch {
	case r.HedgeLost:
		class = "hedge_lost"
	case r.CallerEnded:
		class = CallerEnded
	}
	return Event{TS: r.TS, Source: "spillway", Model: r.Model, Class: class, First: r.Attempt == 1,
		Fallback: r.FallbackFrom != "" || (r.RequestedModel != "" && r.RequestedModel != r.Model),
		InTokens: in, Latency: r.LatencyMS, WaitMS: r.WaitMS, Message: r.Error}
}

// ReadEvents folds spillway's event log (JSONL, gzipped or not) into a.
func ReadEvents(r io.Reader, a *Aggregate) (Input, error) {
	in := Input{Source: "spillway"}
	err := events.Read(events.Decompressed(r), func(rec events.Record) error {
		if a.Add(EventOf(rec)) {
			in.Events++
		}
		return nil
	})
	var me *events.MalformedError
	if errors.As(err, &me) {
		in.Unreadable += me.Count
		err = nil
	}
	return in, err
}

// ReadEventLog folds spillway's event log at path and its rotated files
// (path.N, path.N.gz) into a, oldest first: one Input per file.
// counted wraps each file for progress (nil: none).
func ReadEventLog(path string, a *Aggregate, counted func(string, io.Reader) io.Reader) ([]Input, error) {
	files, err := events.RotatedFiles(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no event log at %s: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	var ins []Input
	found := false
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			found = true
			ins = append(ins, Input{Source: "spillway", Path: name, Error: err.Error()})
			continue
		}
		found = true
		var r io.Reader = f
		if counted != nil {
			r = counted(name, f)
		}
		in, err := ReadEvents(r, a)
		f.Close()
		in.Path = name
		if err != nil {
			in.Error = err.Error()
		}
		ins = append(ins, in)
	}
	if !found {
		return nil, fmt.Errorf("no event log at %s: %w", path, fs.ErrNotExist)
	}
	return ins, nil
}
