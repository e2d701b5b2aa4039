package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/wire"
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

// ReadEvents folds spillway's event log (JSONL, gzipped or not) into a,
// and counts what its gap lines say was lost; seen, when set, is shown each
// attempt's record as well.
func ReadEvents(r io.Reader, a *Aggregate, seen func(events.Record)) (Input, error) {
	in := Input{Source: "spillway"}
	err := events.Read(events.Decompressed(r), func(rec events.Record) error {
		if g := rec.Gap; g != nil {
			if a.overlaps(g.From, g.Until) {
				here := events.Gap{Lost: g.Lost, From: in0(g.From, a.loc), Until: in0(g.Until, a.loc), Error: g.Error}
				in.Lost += int(g.Lost)
				in.GapCount++
				in.lostSpan = joinGaps(in.lostSpan, here)
				if len(in.Gaps) < maxGapsListed {
					in.Gaps = append(in.Gaps, here)
				}
			}
			return nil
		}
		if a.Add(EventOf(rec)) {
			in.Events++
		}
		if seen != nil {
			seen(rec)
		}
		return nil
	})
	var me *events.MalformedError
	if errors.As(err, &me) {
		in.Unreadable += me.Count
		in.Cut += me.Cut
		err = nil
	}
	return in, err
}

// joinGaps is the gaps a and b as one: from the first of their times to
// the last, with b's error (the later).
func joinGaps(a, b events.Gap) events.Gap {
	if !b.From.IsZero() && (a.From.IsZero() || b.From.Before(a.From)) {
		a.From = b.From
	}
	if b.Until.After(a.Until) {
		a.Until = b.Until
	}
	if b.Error != "" {
		a.Error = b.Error
	}
	return a
}

// in0 is t in loc, the zero time kept zero.
func in0(t time.Time, loc *time.Location) time.Time {
	if t.IsZero() {
		return t
	}
	return t.In(loc)
}

// ReadEventLog folds spillway's event log at path and its rotated files
// (path.N, path.N.gz) into a, oldest first: one Input per file.
// counted wraps each file for progress (nil: none); seen is shown every
// record (nil: none).
func ReadEventLog(path string, a *Aggregate, counted func(string, io.Reader) io.Reader, seen func(events.Record)) ([]Input, error) {
	log, err := events.OpenRotated(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no event log at %s: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	defer log.Close()
	var ins []Input
	for _, f := range log.Files {
		if f.Err != nil {
			ins = append(ins, Input{Source: "spillway", Path: f.Name, Error: f.Err.Error()})
			continue
		}
		var r io.Reader = f.File
		if counted != nil {
			r = counted(f.Name, f.File)
		}
		in, err := ReadEvents(r, a, seen)
		in.Path = f.Name
		if err != nil {
			in.Error = err.Error()
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// gatewayTurns is when the gateway started the requests of the agents,
// by the agent whose endpoint they came to and their model, in Unix
// milliseconds: a turn in an agent's file that the gateway's log holds too
// is counted once, from the log. Each request matches one turn at most.
// (No record names the agent's own id of a request: a record's
// request_id is the gateway's, and the upstream's response id is in no
// record; so a turn is matched by its model and its start.)
type gatewayTurns struct {
	index map[string]bool     // the agents read: their requests are kept
	by    map[string][]turnAt // by agent and model (turnKey)
	used  []bool              // by request
}

// turnAt is one gateway request's start, and its number.
type turnAt struct {
	ms int64
	id int
}

// sameTurn is how far apart an agent's start of a turn and the gateway's
// start of its request may be.
const sameTurn = 2 * time.Second

// agentOf names the agent whose kind of request came to a gateway
// endpoint: Codex calls Responses (/v1/responses, a ChatGPT plan's
// /backend-api/codex/responses), Claude Code Messages (also in its Bedrock
// and Vertex AI modes: the cloud routes of wire.CloudEndpoints, whose Path
// labels the records), Gemini CLI the generateContent methods (under any
// API version, and Code Assist's).
func agentOf(endpoint string) string {
	for _, ep := range wire.CloudEndpoints { // each of them Anthropic's Messages
		if endpoint == ep.Path {
			return "claude"
		}
	}
	switch {
	case strings.HasSuffix(endpoint, "/responses"):
		return "codex"
	case strings.HasPrefix(endpoint, "/v1/messages"):
		return "claude"
	case strings.HasSuffix(endpoint, ":generateContent"), strings.HasSuffix(endpoint, ":streamGenerateContent"):
		return "gemini"
	}
	return ""
}

func turnKey(agent, model string) string { return agent + "\x00" + model }

// add takes a record of the log: for a request's first attempt at an
// agent's endpoint, its start (before any wait for a pacing turn: ts is
// the attempt's start) under the model asked for and the one sent to.
func (g *gatewayTurns) add(rec events.Record) {
	if rec.Source != events.SourceGateway || rec.Attempt != 1 {
		return
	}
	agent := agentOf(rec.Endpoint)
	if !g.index[agent] {
		return
	}
	if g.by == nil {
		g.by = map[string][]turnAt{}
	}
	at := turnAt{ms: rec.TS.UnixMilli() - rec.WaitMS, id: len(g.used)}
	g.used = append(g.used, false)
	g.by[turnKey(agent, rec.Model)] = append(g.by[turnKey(agent, rec.Model)], at)
	if rec.RequestedModel != "" && rec.RequestedModel != rec.Model {
		g.by[turnKey(agent, rec.RequestedModel)] = append(g.by[turnKey(agent, rec.RequestedModel)], at)
	}
}

// sort readies g for take.
func (g *gatewayTurns) sort() {
	for _, v := range g.by {
		slices.SortFunc(v, func(a, b turnAt) int { return cmp.Compare(a.ms, b.ms) })
	}
}

// take reports whether the gateway started a request of agent's for one
// of models within sameTurn of start that no other turn took, and takes
// it.
func (g *gatewayTurns) take(agent string, start time.Time, models ...string) bool {
	lo, hi := start.Add(-sameTurn).UnixMilli(), start.Add(sameTurn).UnixMilli()
	for _, m := range models {
		v := g.by[turnKey(agent, m)]
		i, _ := slices.BinarySearchFunc(v, lo, func(a turnAt, ms int64) int { return cmp.Compare(a.ms, ms) })
		for ; i < len(v) && v[i].ms <= hi; i++ {
			if !g.used[v[i].id] {
				g.used[v[i].id] = true
				return true
			}
		}
	}
	return false
}
