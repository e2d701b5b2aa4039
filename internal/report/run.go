package report

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/agentfiles"
	"github.com/spillway/spillway/internal/lineio"
)

// Sources a report reads, besides text logs.
var Sources = []string{"spillway", "codex", "claude", "gemini"}

// Options say what a report reads and over which time.
type Options struct {
	// Only limits the sources read (Sources' names); empty: all that are
	// found.
	Only []string
	// EventLog is spillway's event log; "" the default place. A missing
	// log is skipped unless EventLogNamed (the user named it).
	EventLog      string
	EventLogNamed bool
	// NoAuto reads no source but the text logs.
	NoAuto bool
	// CodexHome, ClaudeHome, GeminiHome are the agents' directories; ""
	// their defaults ($CODEX_HOME or ~/.codex, $CLAUDE_CONFIG_DIR or
	// ~/.claude, $GEMINI_CLI_HOME/.gemini or ~/.gemini).
	CodexHome, ClaudeHome, GeminiHome string
	TextLogs                          []string
	Pattern                           *regexp.Regexp
	Since, Until                      time.Time
	Loc                               *time.Location
	Getenv                            func(string) string
	// TempDir is where Gemini CLI leaves its error reports
	// (gemini-client-error-*.json); os.TempDir() when "".
	TempDir string
	// Progress, when set, is told what is being read (a terminal shows it).
	Progress func(what string, bytes int64)
}

func (o Options) wants(src string) bool {
	return !o.NoAuto && (len(o.Only) == 0 || slices.Contains(o.Only, src))
}

// Build reads every input and returns the report. A source that is not
// there is skipped (an explicitly named one is an error); unreadable lines
// are counted, never fatal.
func Build(ctx context.Context, o Options) (Result, error) {
	if o.Loc == nil {
		o.Loc = time.Local
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	for _, s := range o.Only {
		if !slices.Contains(Sources, s) {
			return Result{}, fmt.Errorf("report: no source %q (sources: %s; text logs with --text-log)", s, strings.Join(Sources, ", "))
		}
	}
	a := NewAggregate(o.Loc, o.Since, o.Until)
	var ins []Input
	var absent []string
	var dup dedup // what of the agents' files the gateway's log holds too
	if o.wants("spillway") {
		got, missing, d, err := readGateway(o, a)
		if err != nil {
			return Result{}, err
		}
		if missing != "" {
			absent = append(absent, missing)
		}
		ins, dup = append(ins, got...), d
	}
	got, missing, err := readAgents(ctx, o, a, dup)
	if err != nil {
		return Result{}, err
	}
	ins, absent = append(ins, got...), append(absent, missing...)
	got, err = readTextLogs(o, a)
	if err != nil {
		return Result{}, err
	}
	ins = append(ins, got...)
	r := a.Result(ins)
	r.Absent = absent
	return r, nil
}

// readGateway reads spillway's own event log (Options.EventLog, else the
// default path): its inputs, the log as absent ("spillway PATH") when it
// is not there and was not named, and what of the agents' files it holds
// too.
func readGateway(o Options, a *Aggregate) (ins []Input, absent string, dup dedup, err error) {
	path := o.EventLog
	if path == "" {
		path = events.DefaultPath(o.Getenv)
	}
	if path == "" {
		return nil, "", dedup{}, nil
	}
	turns := &gatewayTurns{index: map[string]bool{"codex": o.wants("codex"), "claude": o.wants("claude"), "gemini": o.wants("gemini")}}
	ins, err = ReadEventLog(path, a, o.counted, turns.add)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !o.EventLogNamed:
		absent = "spillway " + path
	case err != nil:
		return nil, "", dedup{}, fmt.Errorf("report: %w", err)
	default:
		turns.sort()
		dup = dedup{codexProvider: agentfiles.CodexProviderID, turns: turns}
	}
	return ins, absent, dup, nil
}

// readAgents reads the agents' own files (Codex's, Claude Code's, Gemini
// CLI's) that o wants, skipping the turns dup leaves to the gateway's log:
// their inputs, and the homes not there ("codex DIR"); a home named and
// not there is an error.
func readAgents(ctx context.Context, o Options, a *Aggregate, dup dedup) (ins []Input, absent []string, err error) {
	agents := []struct {
		name, dir string
		files     func(string) []string
		read      func(string, *Aggregate, dedup) Input
	}{
		{"codex", cmp.Or(o.CodexHome, agentfiles.CodexHome(o.Getenv)), codexFiles, readCodex},
		{"claude", cmp.Or(o.ClaudeHome, agentfiles.ClaudeHome(o.Getenv)), claudeFiles, readClaude},
		{"gemini", cmp.Or(o.GeminiHome, agentfiles.GeminiHome(o.Getenv)), geminiFiles, nil},
	}
	// Gemini CLI's error reports are read only when its sessions are
	var geminiErrs []geminiError
	loaded := false
	agents[2].read = func(path string, a *Aggregate, dup dedup) Input {
		if !loaded {
			geminiErrs, loaded = geminiErrors(o.TempDir), true
		}
		return readGeminiChats(geminiErrs)(path, a, dup)
	}
	for _, ag := range agents {
		if !o.wants(ag.name) || ag.dir == "" {
			continue
		}
		if _, err := os.Stat(ag.dir); err != nil {
			named := (ag.name == "codex" && o.CodexHome != "") || (ag.name == "claude" && o.ClaudeHome != "") || (ag.name == "gemini" && o.GeminiHome != "")
			if named {
				return nil, nil, fmt.Errorf("report: %s: %w", ag.name, err)
			}
			absent = append(absent, ag.name+" "+ag.dir)
			continue
		}
		for _, f := range ag.files(ag.dir) {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			if !o.Since.IsZero() {
				if fi, err := os.Stat(f); err == nil && fi.ModTime().Before(o.Since) {
					continue // written to last before the range starts
				}
			}
			if o.Progress != nil {
				o.Progress(ag.name+" "+filepath.Base(f), 0)
			}
			in := ag.read(f, a, dup)
			in.Source, in.Path = ag.name, f
			ins = append(ins, in)
		}
	}
	return ins, absent, nil
}

// readTextLogs reads the text logs named (--text-log); a file that cannot
// be opened is an error, one that cannot be read is its input's Error.
func readTextLogs(o Options, a *Aggregate) (ins []Input, err error) {
	for _, path := range o.TextLogs {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("report: --text-log: %w", err)
		}
		in, err := ReadText(events.Decompressed(o.counted(path, f)), a, TextOptions{Pattern: o.Pattern, Loc: o.Loc})
		f.Close()
		in.Path = path
		if err != nil {
			in.Error = err.Error()
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// dedup says which turns of the agents' own files the gateway's event log
// holds too, so that each is counted once (from the log, which says
// more): a turn is left to the log only when the log holds its request,
// never for the time it happened. The zero value, when no log was read,
// skips nothing.
type dedup struct {
	// codexProvider: only Codex sessions of this model provider (the one
	// spillway setup codex writes) can have gone through the gateway
	codexProvider string
	// turns: the gateway's requests, by the agent whose endpoint they came
	// to and their model
	turns *gatewayTurns
}

// inLog reports whether agent's turn that started at start is the gateway
// log's: one of its requests to that agent's endpoint for one of models,
// started within 2 s, that no other turn took (and takes it).
func (d dedup) inLog(agent string, start time.Time, models ...string) bool {
	return d.turns != nil && d.turns.take(agent, start, models...)
}

// codexInLog is inLog for a turn of a Codex session of provider: only one
// of spillway's provider can be in the log.
func (d dedup) codexInLog(provider string, start time.Time, model string) bool {
	return d.codexProvider != "" && provider == d.codexProvider && d.inLog("codex", start, model)
}

// walkFiles lists the files under root whose name match says, sorted.
func walkFiles(root string, match func(path, name string) bool) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable directories are skipped
		}
		if !d.IsDir() && match(p, d.Name()) {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// counted is r, telling o.Progress (when set) the bytes read of what every
// 16 MiB.
func (o Options) counted(what string, r io.Reader) io.Reader {
	if o.Progress == nil {
		return r
	}
	return &counter{r: r, tell: func(n int64) { o.Progress(what, n) }}
}

type counter struct {
	r    io.Reader
	n    int64
	tell func(int64)
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if (c.n+int64(n))>>24 != c.n>>24 {
		c.tell(c.n + int64(n))
	}
	c.n += int64(n)
	return n, err
}

// jsonLines hands fn each line of the JSONL file at path that holds one of
// markers (every line when there are none), trimmed. A line that is not a
// JSON object, or that fn could not read (it returns false), counts as
// unreadable; an open or read error goes into in.Error.
func jsonLines(path string, markers [][]byte, in *Input, fn func(line []byte) bool) {
	f, err := os.Open(path)
	if err != nil {
		in.Error = err.Error()
		return
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var buf []byte
	for {
		var err error
		buf, err = lineio.Read(br, buf[:0])
		if line := bytes.TrimSpace(buf); len(line) > 0 {
			switch {
			case line[0] != '{':
				in.Unreadable++
			case markers != nil && !wanted(line, markers):
			case !fn(line):
				in.Unreadable++
			}
		}
		if err != nil {
			if err != io.EOF {
				in.Error = err.Error()
			}
			return
		}
	}
}
