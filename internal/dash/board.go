// Package dash is the gateway's live dashboard: a page at / (and under
// /ui/) that shows each chain's models and deployments (health, breaker,
// next probe, success rate and latency over the last minutes), the
// requests as they flow and fall back, recent failures in the
// classifier's words, the queue when one is configured, and the weekday ×
// hour capacity heatmap of `spillway report`, kept up to date as attempts
// come in.
//
// The gateway feeds it each attempt's event record (Observe) and each
// model switch (Fallback). A page opens one server-sent-events stream: the
// whole state first, then every attempt and switch as it happens, and the
// state again every two seconds while any page is open (made once for all
// pages, not once per page). The page's script, style and markup are
// embedded in the binary; it fetches nothing from anywhere else.
package dash

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/report"
	"github.com/spillway/spillway/policy"
)

// Queue is what the page shows of the task queue (the queue's store,
// adapted where the gateway is assembled).
type Queue interface {
	// Snapshot counts the tasks by status and lists the running ones.
	Snapshot(ctx context.Context) (QueueView, error)
}

// ErrNoQueue is a Queue's word that no queue database is configured (or
// made yet): the page shows no queue.
var ErrNoQueue = errors.New("no queue database")

// QueueView is the queue's counts and running tasks.
type QueueView struct {
	Counts  map[string]int `json:"counts"`
	Running []QueueTask    `json:"running"`
	Error   string         `json:"error,omitempty"`
}

// QueueTask is one running task.
type QueueTask struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	Since       time.Time `json:"since"`
}

// Options configure a Board.
type Options struct {
	// Engine is the gateway's current policy engine (it changes on a
	// reload): its configuration and breakers.
	Engine func() *policy.Engine
	// Clock times the windows and the state's ticks; the engine's when nil.
	Clock policy.Clock
	// Counts are the gateway's requests so far and in flight.
	Counts func() (total, inflight int64)
	// Queue, when set, is the task queue to show.
	Queue Queue
	// EventLog, when set, is the event log the heatmap starts from: its
	// last week is read when the first page opens (what comes after, from
	// Observe), and again once a day after that, to let old days go.
	EventLog string
	// Events, when set, gets each observed record (the event log's
	// writer): the board hands it on itself, so that its read of the log
	// counts each attempt once.
	Events events.Sink
	// Flush, when set, writes out what the event log's writer holds: the
	// read starts from everything observed before it.
	Flush func(context.Context) error
	// Exposed reports a gateway that listens beyond loopback: its pages'
	// streams are capped per address too (maxPagesPerAddress).
	Exposed func() bool
	// Location is the heatmap's time zone (time.Local when nil).
	Location *time.Location
	Log      *slog.Logger
}

const (
	window      = 15 * time.Minute // success rate and latency are over this
	recentSpan  = 5 * time.Minute  // a model's status weighs this
	keepFlow    = 60               // attempts on the page's live flow
	keepFailed  = 30               // recent failures listed
	tick        = 2 * time.Second  // the state, to open pages
	heatSpan    = 7 * 24 * time.Hour
	heatReseed  = 24 * time.Hour
	subscribers = 256
)

// The pages' streams open at once: on loopback (one person's machine)
// maxPages in all; beyond loopback (a team's gateway) maxPagesExposed in
// all and maxPagesPerAddress from one address, so that many pages from
// one place cannot lock the others out. A stream's frames are shared by
// every page (made once), so more pages hold little more.
const (
	maxPages           = 32
	maxPagesExposed    = 256
	maxPagesPerAddress = 4
)

// Board is the dashboard's state.
type Board struct {
	o     Options
	clock policy.Clock
	log   *slog.Logger

	mu        sync.Mutex
	stats     map[string]*ring // by model, and by model "@" deployment
	flow      []any            // Attempt and Switch, newest last
	failures  []Failure        // newest last
	fallbacks int64
	heat      *report.Aggregate
	pending   []pendingEvent // observed while the log is being read
	seeding   bool
	heatFrom  time.Time
	heatRes   *report.Result // the last result, until an attempt changes it
	heatVer   int            // counts the heatmap's changes
	pages     map[*page]struct{}
	ticking   bool
	closed    bool
	stopTick  func() bool
	stopSeed  func() bool
	read      chan struct{} // closed once the event log's first read is in
	readOnce  sync.Once
}

// Attempt is one upstream attempt as the live flow shows it.
type Attempt struct {
	Kind           string    `json:"kind"` // "attempt"
	TS             time.Time `json:"ts"`
	RequestID      string    `json:"request_id"`
	Attempt        int       `json:"attempt"`
	Model          string    `json:"model"`
	Deployment     string    `json:"deployment,omitempty"`
	RequestedModel string    `json:"requested_model"`
	FallbackFrom   string    `json:"fallback_from,omitempty"`
	Class          string    `json:"class"`
	Status         int       `json:"status"`
	LatencyMS      int64     `json:"latency_ms"`
	WaitMS         int64     `json:"wait_ms"`
	Stream         bool      `json:"stream"`
}

// Failure is a failed attempt with the classifier's one-line explanation.
type Failure struct {
	Attempt
	Summary string `json:"summary"`
	Message string `json:"message"` // the upstream's, redacted (as the event log has it)
}

// Switch is a request moving to another model.
type Switch struct {
	Kind      string    `json:"kind"` // "fallback"
	TS        time.Time `json:"ts"`
	RequestID string    `json:"request_id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Class     string    `json:"class"`
	Fallbacks int64     `json:"fallbacks"` // the gateway's, so far
}

// New makes a board; Close stops it.
func New(o Options) *Board {
	b := &Board{o: o, clock: o.Clock, log: o.Log, stats: map[string]*ring{}, pages: map[*page]struct{}{}, read: make(chan struct{})}
	if b.clock == nil {
		b.clock = o.Engine().Clock()
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.o.Location == nil {
		b.o.Location = time.Local
	}
	if b.o.Counts == nil {
		b.o.Counts = func() (int64, int64) { return 0, 0 }
	}
	if o.EventLog == "" { // the heatmap is what this board sees
		b.heatFrom = b.clock.Now()
		b.heat = report.NewAggregate(b.o.Location, b.heatFrom, time.Time{})
		b.readOnce.Do(func() { close(b.read) })
	}
	return b
}

// Read is closed once the heatmap has the event log's week: after the
// first page asked for it (at once without an event log).
func (b *Board) Read() <-chan struct{} { return b.read }

// Close ends the open pages' streams and the board's timers.
func (b *Board) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for p := range b.pages {
		close(p.out)
		delete(b.pages, p)
	}
	if b.stopTick != nil {
		b.stopTick()
	}
	if b.stopSeed != nil {
		b.stopSeed()
	}
}

// seedLocked starts reading the event log's last week into a new
// heatmap, once a page wants one (b.mu held), and again a day later.
//
// Every attempt counts once: Observe hands each record to the log's
// writer under b.mu, so a record observed before seeding began is queued
// before the flush below and is in the files up to the sizes measured
// after it; one observed after is kept in pending (with its key). The keys
// pending holds once the sizes are measured are skipped in the files: those
// records may be in both. Nothing waits on the disk under b.mu.
func (b *Board) seedLocked() {
	if b.seeding || b.closed || b.o.EventLog == "" {
		return
	}
	cut := b.clock.Now()
	b.seeding, b.pending = true, nil
	b.stopSeed = b.clock.AfterFunc(heatReseed, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.seedLocked()
	})
	go b.seed(cut)
}

// seed is seedLocked's read, on a goroutine of its own.
func (b *Board) seed(cut time.Time) {
	if b.o.Flush != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := b.o.Flush(ctx); err != nil {
			b.log.Debug("dashboard: the event log's writer did not flush", "error", err.Error())
		}
		cancel()
	}
	log, err := events.OpenRotated(b.o.EventLog) // the log as it is now, whatever the writer rotates meanwhile
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.log.Debug("dashboard: the heatmap starts without the event log", "error", err.Error())
	}
	var files []events.RotatedFile
	if log != nil {
		defer log.Close()
		files = log.Files
	}
	b.mu.Lock()
	skip := make(map[string]bool, len(b.pending))
	for _, p := range b.pending {
		skip[p.attempt] = true
	}
	b.mu.Unlock()
	from := cut.Add(-heatSpan)
	a := report.NewAggregate(b.o.Location, from, time.Time{})
	for _, f := range files {
		if f.Err != nil {
			continue
		}
		err := events.Read(events.Decompressed(f.Snapshot()), func(rec events.Record) error {
			if rec.Gap == nil && !skip[attemptID(rec)] { // a gap line is no attempt
				a.Add(b.eventOf(rec))
			}
			return nil
		})
		var me *events.MalformedError
		if err != nil && !errors.As(err, &me) {
			b.log.Debug("dashboard: part of the event log was not read", "file", f.Name, "error", err.Error())
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.pending {
		a.Add(p.ev)
	}
	b.heat, b.heatFrom, b.pending, b.seeding, b.heatRes = a, from, nil, false, nil
	b.heatVer++
	b.readOnce.Do(func() { close(b.read) })
}

// pendingEvent is an attempt observed while the log is read.
type pendingEvent struct {
	attempt string // its attemptID
	ev      report.Event
}

// eventOf is rec as the heatmap's event: a model outside the
// configuration (a name a client made up) is counted as "other", so that
// clients cannot grow the per-model table.
func (b *Board) eventOf(rec events.Record) report.Event {
	ev := report.EventOf(rec)
	if _, known := b.o.Engine().Config().Models[ev.Model]; !known {
		ev.Model = OtherModels
	}
	return ev
}

// OtherModels is the heatmap's row of the models outside the configuration.
const OtherModels = "other"

// attemptID is the id of a record's attempt: its request id and attempt
// number, which tell it from every other attempt.
func attemptID(rec events.Record) string { return rec.RequestID + "#" + strconv.Itoa(rec.Attempt) }

// Write is Observe: the board is the gateway's events.Sink, in front of
// the event log.
func (b *Board) Write(rec events.Record) { b.Observe(rec) }

// Observe takes in one attempt's record, and hands it to Options.Events
// (the gateway writes every record to the board).
func (b *Board) Observe(rec events.Record) {
	at := Attempt{Kind: "attempt", TS: rec.TS, RequestID: rec.RequestID, Attempt: rec.Attempt, Model: rec.Model, Deployment: rec.Deployment,
		RequestedModel: rec.RequestedModel, FallbackFrom: rec.FallbackFrom, Class: rec.Class, Status: rec.Status,
		LatencyMS: rec.LatencyMS, WaitMS: rec.WaitMS, Stream: rec.Stream}
	ev := b.eventOf(rec)
	b.mu.Lock()
	defer b.mu.Unlock()
	o := outcomeOf(rec.Class)
	if rec.CallerEnded || rec.HedgeLost {
		o = ignored // the caller ended it, or another attempt answered: nothing of the model's health
	}
	// only configured models have a line on the page: a name a client
	// makes up gets no ring
	if _, known := b.o.Engine().Config().Models[rec.Model]; known {
		end, now := rec.TS.UnixMilli()+rec.LatencyMS, b.clock.Now().UnixMilli()
		b.ring(rec.Model).add(end, now, rec.LatencyMS, o)
		if rec.Deployment != "" {
			b.ring(rec.Model+"@"+rec.Deployment).add(end, now, rec.LatencyMS, o)
		}
	}
	b.addFlow(at)
	var f *Failure
	if listed(rec) {
		f = &Failure{Attempt: at, Summary: explain(rec), Message: rec.Error}
		b.failures = append(b.failures, *f)
		if len(b.failures) > keepFailed {
			b.failures = slices.Delete(b.failures, 0, len(b.failures)-keepFailed)
		}
	}
	if b.o.Events != nil {
		b.o.Events.Write(rec) // under b.mu: see seedLocked; the writer's Write never blocks
	}
	if b.seeding {
		b.pending = append(b.pending, pendingEvent{attemptID(rec), ev})
	}
	if b.heat != nil && b.heat.Add(ev) { // before any page, the log has it all
		b.heatRes = nil
		b.heatVer++
	}
	if len(b.pages) > 0 {
		if f != nil {
			b.publish("attempt", f)
		} else {
			b.publish("attempt", at)
		}
	}
}

// Fallback takes in a request's move from one model to another.
func (b *Board) Fallback(ts time.Time, requestID, from, to, class string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fallbacks++
	sw := Switch{Kind: "fallback", TS: ts, RequestID: requestID, From: from, To: to, Class: class, Fallbacks: b.fallbacks}
	b.addFlow(sw)
	if len(b.pages) > 0 {
		b.publish("fallback", sw)
	}
}

// addFlow keeps the last keepFlow items of the live flow (b.mu held).
func (b *Board) addFlow(item any) {
	b.flow = append(b.flow, item)
	if len(b.flow) > keepFlow {
		b.flow = slices.Delete(b.flow, 0, len(b.flow)-keepFlow)
	}
}

// explain is the classifier's one-line explanation of a record's class.
func explain(rec events.Record) string {
	c, ok := classify.ParseClass(rec.Class)
	if !ok {
		return "the attempt ended as " + rec.Class + "."
	}
	return classify.Verdict{Class: c, Provider: classify.Provider(rec.Provider)}.Explained().Summary
}
