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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/redact"
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

func (b *Board) ring(key string) *ring {
	r := b.stats[key]
	if r == nil {
		r = &ring{}
		b.stats[key] = r
	}
	return r
}

// outcome is what an attempt says of the model's health.
type outcome uint8

const (
	okay    outcome = iota
	failed          // the model's or the provider's failure
	ignored         // the request's own fault, a lost hedge, the caller's end: says nothing of the model
)

// listed reports whether rec is one of the page's recent failures: every
// failure but the request's own fault (its body, its size, its content),
// a lost hedge and one the caller ended. A key refused, a quota, a usage
// window or a network failure is listed, though it says nothing of the
// model (outcomeOf).
func listed(rec events.Record) bool {
	switch rec.Class {
	case string(classify.OK), string(classify.BadRequest), string(classify.ContextLength), string(classify.ContentFilter), policy.HedgeLost:
		return false
	}
	return !rec.CallerEnded && !rec.HedgeLost
}

// outcomeOf is what an attempt of class says of its model: only what the
// breaker holds against a model (capacity, timeout) and a server error
// (which the plan treats as capacity after its retry) are its failures.
// The request's own fault, the caller's key or account (auth, quota, a
// plan's usage window, a rate limit), the network (a provider down is
// shown on its own) and what is not known say nothing of it.
func outcomeOf(class string) outcome {
	switch class {
	case string(classify.OK):
		return okay
	case string(classify.Capacity), string(classify.Timeout), string(classify.ServerError):
		return failed
	}
	return ignored
}

// A ring keeps a model's (or deployment's) outcomes in time slots over
// the window: counts and a latency histogram per slot, so that the page's
// numbers cover the last 15 minutes at any rate, in constant memory.
const (
	slot      = 10 * time.Second
	slots     = int(window / slot)
	perOctave = 4                // latency bins per doubling: a median within 12%
	bins      = 24*perOctave + 1 // up to 2^25 ms (9.3 hours); the last takes the rest
)

// bucket is one slot's outcomes.
type bucket struct {
	n      int64 // the slot's number (unix ms / slot); 0: unused
	ok, ko int32
	lat    [bins]uint32 // the answered attempts' latencies
}

type ring struct{ b [slots]bucket }

// binOf is the latency bin of ms: exact below 4 ms, then perOctave bins
// per doubling.
func binOf(ms int64) int {
	if ms < perOctave {
		return int(max(ms, 0))
	}
	k := bits.Len64(uint64(ms)) - 1 // 2^k ≤ ms < 2^(k+1), k ≥ 2
	sub := int(ms>>(k-2)) & (perOctave - 1)
	return min(perOctave*(k-1)+sub, bins-1)
}

// binMid is the middle of bin i's range, in ms.
func binMid(i int) int64 {
	if i < perOctave {
		return int64(i)
	}
	k, sub := i/perOctave+1, int64(i%perOctave)
	lo := (perOctave + sub) << (k - 2)
	hi := (perOctave+sub+1)<<(k-2) - 1
	return (lo + hi) / 2
}

// add counts one attempt that ended at (unix ms) as o, now being now.
func (r *ring) add(at, now, latency int64, o outcome) {
	if o == ignored {
		return
	}
	cur := max(now/slot.Milliseconds(), 1)
	n := min(max(at/slot.Milliseconds(), 1), cur) // an end ahead of now counts now
	bk := &r.b[int(n%int64(slots))]
	if bk.n != n {
		if bk.n > n && bk.n <= cur { // the slot holds a later one: this attempt is older than the window
			return
		}
		*bk = bucket{n: n} // a slot from before the clock stepped back is stale too
	}
	if o == okay {
		bk.ok++
		bk.lat[binOf(latency)]++
	} else {
		bk.ko++
	}
}

// Rolling is a model's or deployment's attempts over the last minutes.
type Rolling struct {
	OK       int     `json:"ok"`
	Failed   int     `json:"failed"`
	Rate     float64 `json:"success_rate"` // of OK+Failed; 0 with none
	P50MS    int64   `json:"p50_ms"`       // of the answered ones (within 12%); 0 with none
	RecentOK int     `json:"-"`
	RecentKO int     `json:"-"`
}

// rolling sums r's slots within the window before now (and within the
// recent span).
func (r *ring) rolling(now time.Time) Rolling {
	var out Rolling
	if r == nil {
		return out
	}
	cur := now.UnixMilli() / slot.Milliseconds()
	recent := cur - int64(recentSpan/slot)
	var lat [bins]uint32
	for i := range r.b {
		bk := &r.b[i]
		if bk.n == 0 || bk.n <= cur-int64(slots) || bk.n > cur {
			continue
		}
		out.OK += int(bk.ok)
		out.Failed += int(bk.ko)
		if bk.n > recent {
			out.RecentOK += int(bk.ok)
			out.RecentKO += int(bk.ko)
		}
		for j, c := range bk.lat {
			lat[j] += c
		}
	}
	if n := out.OK + out.Failed; n > 0 {
		out.Rate = float64(out.OK) / float64(n)
	}
	if out.OK > 0 {
		half, seen := uint32((out.OK+1)/2), uint32(0)
		for j, c := range lat {
			if seen += c; seen >= half {
				out.P50MS = binMid(j)
				break
			}
		}
	}
	return out
}

// status is a model's or deployment's word on the page: failing (breaker
// open, or most recent attempts failed), probing (half-open), degraded
// (some recent attempts failed), healthy, or idle (no recent attempts).
func status(breaker policy.BreakerState, down bool, r Rolling) string {
	switch {
	case breaker == policy.StateOpen || down:
		return "failing"
	case breaker == policy.StateHalfOpen:
		return "probing"
	case r.RecentKO > 0 && r.RecentKO >= r.RecentOK:
		return "failing"
	case r.RecentKO > 0:
		return "degraded"
	case r.RecentOK > 0:
		return "healthy"
	}
	return "idle"
}

// State is everything the page shows; a page gets it first, and every
// two seconds after.
type State struct {
	Now           time.Time  `json:"now"`
	Requests      int64      `json:"requests"`
	Inflight      int64      `json:"inflight"`
	Fallbacks     int64      `json:"fallbacks"`
	WindowMin     int        `json:"window_min"`
	Chains        []Chain    `json:"chains"`
	ProvidersDown []string   `json:"providers_down"`
	Flow          []any      `json:"flow"` // Attempt and Switch, by "kind"
	Failures      []Failure  `json:"failures"`
	Queue         *QueueView `json:"queue"`
	// Heat is the heatmap; in the stream's later states only when the
	// page does not have this one yet (it keeps the one it has)
	Heat    *Heat `json:"heat,omitempty"`
	heatVer int
}

// Chain is a chain's models in order (heavy first); models in no chain
// are listed under "other models".
type Chain struct {
	Name   string  `json:"name"`
	Models []Model `json:"models"`
}

// Model is one model's health.
type Model struct {
	Name        string              `json:"name"`
	Tier        string              `json:"tier"`
	Provider    string              `json:"provider"`
	Breaker     policy.BreakerState `json:"breaker"`
	NextProbeS  float64             `json:"next_probe_s"`
	Status      string              `json:"status"`
	Rolling     Rolling             `json:"rolling"`
	Deployments []Deployment        `json:"deployments,omitempty"`
}

// Deployment is one named deployment's health.
type Deployment struct {
	Name       string              `json:"name"`
	Provider   string              `json:"provider"`
	Breaker    policy.BreakerState `json:"breaker"`
	NextProbeS float64             `json:"next_probe_s"`
	Status     string              `json:"status"`
	Rolling    Rolling             `json:"rolling"`
}

// Heat is the report's heatmap and per-model table.
type Heat struct {
	From     time.Time           `json:"from"`
	Since    string              `json:"since"` // From's day in TZ, as 2026-12-06 (never the browser's locale)
	TZ       string              `json:"tz"`
	Metric   string              `json:"metric"`
	Cells    [7][24]report.Cell  `json:"cells"`
	Fills    [7][24]string       `json:"fills"` // the report's colours; "" with no attempts
	Weekdays []string            `json:"weekdays"`
	Quiet    *report.Window      `json:"quiet"`
	Peak     *report.Window      `json:"peak"`
	Models   []report.ModelStats `json:"models"`
	Reading  bool                `json:"reading"` // the event log is still being read
}

// State is the board now. The queue is asked within ctx.
func (b *Board) State(ctx context.Context) State {
	eng := b.o.Engine()
	cfg := eng.Config()
	now := b.clock.Now()
	health := eng.Health()
	downs := nonNil(eng.ProvidersDown())
	down := map[string]bool{}
	for _, p := range downs {
		down[p] = true
	}
	total, inflight := b.o.Counts()
	st := State{Now: now.UTC(), Requests: total, Inflight: inflight, WindowMin: int(window / time.Minute), ProvidersDown: downs}
	var q *QueueView
	if b.o.Queue != nil {
		v, err := b.o.Queue.Snapshot(ctx)
		switch {
		case errors.Is(err, ErrNoQueue):
		case err != nil:
			q = &QueueView{Counts: map[string]int{}, Running: []QueueTask{}, Error: redact.String(err.Error())}
		default:
			q = &v
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	models := map[string]Model{}
	for _, h := range health {
		m := Model{Name: h.Name, Tier: h.Tier, Provider: h.Provider, Breaker: h.Breaker, NextProbeS: h.NextProbe.Seconds(),
			Rolling: b.stats[h.Name].rolling(now)}
		m.Status = status(h.Breaker, down[h.Provider], m.Rolling)
		for _, d := range h.Deployments {
			if d.Name == "" {
				continue
			}
			r := b.stats[h.Name+"@"+d.Name].rolling(now)
			m.Deployments = append(m.Deployments, Deployment{Name: d.Name, Provider: d.Provider, Breaker: d.Breaker,
				NextProbeS: d.NextProbe.Seconds(), Status: status(d.Breaker, down[d.Provider], r), Rolling: r})
		}
		models[h.Name] = m
	}
	listed := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Chains)) {
		c := Chain{Name: name}
		for _, mn := range cfg.Chains[name] {
			if m, ok := models[mn]; ok {
				c.Models = append(c.Models, m)
				listed[mn] = true
			}
		}
		st.Chains = append(st.Chains, c)
	}
	other := Chain{Name: "other models"}
	for _, h := range health {
		if !listed[h.Name] {
			other.Models = append(other.Models, models[h.Name])
		}
	}
	if len(other.Models) > 0 {
		st.Chains = append(st.Chains, other)
	}
	st.Fallbacks = b.fallbacks
	st.Flow = nonNil(slices.Clone(b.flow))
	st.Failures = nonNil(slices.Clone(b.failures))
	st.Queue = q
	if b.heat == nil { // the first page: the log's week is read now
		b.seedLocked()
	}
	h := b.heatLocked()
	st.Heat, st.heatVer = &h, b.heatVer
	return st
}

// heatLocked is the heatmap, from the last result while no attempt
// changed it.
func (b *Board) heatLocked() Heat {
	if b.heat == nil { // the log is being read for the first time
		return Heat{Weekdays: report.Weekdays[:], Models: []report.ModelStats{}, Reading: true}
	}
	if b.heatRes == nil {
		r := b.heat.Result(nil)
		b.heatRes = &r
	}
	r := b.heatRes
	return Heat{From: b.heatFrom.UTC(), Since: b.heatFrom.In(b.o.Location).Format("2006-01-02"), TZ: r.TZ, Metric: r.Metric, Cells: r.Heatmap, Fills: report.Fills(*r),
		Weekdays: report.Weekdays[:], Quiet: r.Quiet, Peak: r.Peak, Models: nonNil(r.Models), Reading: b.seeding}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// page is one open stream.
type page struct {
	out     chan []byte
	heatVer int    // the heatmap it has (-1: none yet)
	addr    string // the address it was opened from
}

// frame is one server-sent event.
func frame(name string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil { // the board's own types: cannot happen
		data = []byte(`{}`)
	}
	out := make([]byte, 0, len(name)+len(data)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// publish sends an event to every open page (b.mu held). A page that
// cannot keep up misses it; the next state sets it right.
func (b *Board) publish(name string, v any) {
	f := frame(name, v)
	for p := range b.pages {
		select {
		case p.out <- f:
		default:
		}
	}
}

// join opens a page's stream from addr (the client's address, without
// its port); why says what refused it ("" when it opened): the board is
// closed, or too many are open in all or from addr (pagesOpen).
func (b *Board) join(addr string) (*page, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, "the gateway is stopping"
	}
	if why := b.full(addr); why != "" {
		return nil, why
	}
	p := &page{out: make(chan []byte, subscribers), heatVer: -1, addr: addr}
	b.pages[p] = struct{}{}
	if !b.ticking {
		b.ticking = true
		b.stopTick = b.clock.AfterFunc(tick, b.tick)
	}
	return p, ""
}

// full says why no other page may open from addr, "" when one may
// (b.mu held).
func (b *Board) full(addr string) string {
	if b.o.Exposed == nil || !b.o.Exposed() {
		if len(b.pages) >= maxPages {
			return fmt.Sprintf("%d pages are open on this gateway, its limit; close one", maxPages)
		}
		return ""
	}
	if len(b.pages) >= maxPagesExposed {
		return fmt.Sprintf("%d pages are open on this gateway, its limit; close one", maxPagesExposed)
	}
	n := 0
	for p := range b.pages {
		if p.addr == addr {
			n++
		}
	}
	if n >= maxPagesPerAddress {
		return fmt.Sprintf("%d pages are open from your address, the limit for one address; close one", maxPagesPerAddress)
	}
	return ""
}

// leave closes a page's stream.
func (b *Board) leave(p *page) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.pages[p]; ok {
		delete(b.pages, p)
		close(p.out)
	}
}

// tick sends the state to the open pages, made once for all of them, and
// comes again while any is open.
func (b *Board) tick() {
	b.mu.Lock()
	n := len(b.pages)
	if n == 0 || b.closed {
		b.ticking = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	st := b.State(ctx)
	cancel()
	full := frame("state", st)
	st.Heat = nil
	lite := frame("state", st)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	// the heatmap goes to a page that does not have this one yet; a page
	// that misses it (its queue full) gets it at the next tick
	for p := range b.pages {
		f, heat := lite, p.heatVer != st.heatVer
		if heat {
			f = full
		}
		select {
		case p.out <- f:
			if heat {
				p.heatVer = st.heatVer
			}
		default:
		}
	}
	b.stopTick = b.clock.AfterFunc(tick, b.tick)
}

// has notes that p got the heatmap of version ver (its first state).
func (b *Board) has(p *page, ver int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p.heatVer = ver
}
