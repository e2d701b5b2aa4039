// Package report is `spillway report`: when, on which model and at what
// request size capacity errors hit, read from spillway's event log, the
// agents' own files (Codex rollouts, Claude Code transcripts, Gemini CLI
// sessions) and plain text logs. Every source becomes a stream of Events;
// an Aggregate folds them in constant memory (counters, a streaming
// quantile estimate per model) and Result is what the outputs render.
package report

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/redact"

	"github.com/beorn7/perks/quantile"
)

// Event is one attempt at a model, or one failure line of a text log.
type Event struct {
	TS     time.Time
	Source string // spillway, codex, claude, gemini, text
	Model  string // "" when the source does not say
	// Class is the attempt's outcome: "ok" or a failure class (capacity,
	// rate_limit, quota, …); "error" for a text log's line that says no
	// more.
	Class string
	// First marks the first attempt of a request: requests are counted by
	// it, so retries per request need no set of request ids.
	First    bool
	Fallback bool  // on a model other than the one asked for
	InTokens int   // the request's input tokens; 0 when unknown
	Latency  int64 // ms; < 0 when unknown
	WaitMS   int64 // waited before this attempt
	Message  string
}

// failed reports an attempt that did not answer.
// A lost hedge and an attempt its caller ended are not failures of the
// model.
func (e Event) failed() bool {
	return e.Class != "ok" && e.Class != "hedge_lost" && e.Class != CallerEnded
}

// CallerEnded is the class the report gives an attempt its caller ended
// (events.Record.CallerEnded): what was cut, not how the model was.
const CallerEnded = "caller_ended"

// Cell is one weekday × hour of the heatmap.
type Cell struct {
	Attempts int `json:"attempts"`
	Capacity int `json:"capacity"`
	Failures int `json:"failures"`
}

// sizeEdges are the lower bounds (input tokens) of the size buckets.
var sizeEdges = []int{0, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000}

type modelAgg struct {
	attempts, requests, fallbacks int
	classes                       map[string]int
	waitMS                        int64
	lat                           *quantile.Stream
	latN                          int
}

type dayAgg struct{ attempts, capacity, failures, quota int }

// Aggregate folds events; the zero value is not ready: use NewAggregate.
type Aggregate struct {
	loc          *time.Location
	since, until time.Time
	cells        [7][24]Cell // Monday first
	models       map[string]*modelAgg
	sizes        []sizeAgg
	days         map[string]*dayAgg
	sources      map[string]int
	quota        []QuotaIncident
	limits       []QuotaIncident // usage limits, the last maxQuotaListed
	quotaN       int
	first, last  time.Time
	total        Totals
}

type sizeAgg struct{ attempts, capacity int }

// maxQuotaListed bounds the quota incidents kept one by one.
const maxQuotaListed = 50

// NewAggregate folds events in loc between since and until (zero: open).
func NewAggregate(loc *time.Location, since, until time.Time) *Aggregate {
	return &Aggregate{loc: loc, since: since, until: until, models: map[string]*modelAgg{},
		sizes: make([]sizeAgg, len(sizeEdges)), days: map[string]*dayAgg{}, sources: map[string]int{}}
}

// overlaps reports whether from–until (either zero: unknown) meets the
// range.
func (a *Aggregate) overlaps(from, until time.Time) bool {
	return (a.until.IsZero() || from.IsZero() || from.Before(a.until)) && (a.since.IsZero() || until.IsZero() || !until.Before(a.since))
}

// SetUntil moves the end of the range (zero: open): an aggregate read from
// a log up to a time goes on with the events after it.
func (a *Aggregate) SetUntil(t time.Time) { a.until = t }

// Add folds one event; it reports whether the event was in range.
func (a *Aggregate) Add(e Event) bool { return a.AddN(e, 1) }

// AddN folds n events alike (a text log's lines of one hour and class).
func (a *Aggregate) AddN(e Event, n int) bool {
	if n <= 0 || e.TS.IsZero() || (!a.since.IsZero() && e.TS.Before(a.since)) || (!a.until.IsZero() && !e.TS.Before(a.until)) {
		return false
	}
	t := e.TS.In(a.loc)
	if a.first.IsZero() || t.Before(a.first) {
		a.first = t
	}
	if t.After(a.last) {
		a.last = t
	}
	a.sources[e.Source] += n
	failed := e.failed()
	capacity := e.Class == "capacity"
	quota := e.Class == "quota"
	c := &a.cells[(int(t.Weekday())+6)%7][t.Hour()]
	c.Attempts += n
	a.total.Attempts += n
	if e.First {
		a.total.Requests += n
	}
	if failed {
		c.Failures += n
		a.total.Failures += n
	}
	if capacity {
		c.Capacity += n
		a.total.Capacity += n
	}
	switch e.Class {
	case "rate_limit":
		a.total.RateLimit += n
	case "quota":
		a.total.Quota += n
	case "usage_limit":
		a.total.UsageLimit += n
	}
	a.total.WaitMS += e.WaitMS * int64(n)
	key := t.Format(time.DateOnly)
	d := a.days[key]
	if d == nil {
		d = &dayAgg{}
		a.days[key] = d
	}
	d.attempts += n
	if failed {
		d.failures += n
	}
	if capacity {
		d.capacity += n
	}
	if e.Class == "usage_limit" {
		if len(a.limits) == maxQuotaListed {
			a.limits = a.limits[1:]
		}
		a.limits = append(a.limits, QuotaIncident{TS: t, Model: e.Model, Source: e.Source, Message: clean(e.Message, 200)})
	}
	if quota {
		d.quota += n
		a.quotaN += n
		if len(a.quota) < maxQuotaListed {
			a.quota = append(a.quota, QuotaIncident{TS: t, Model: e.Model, Source: e.Source, Message: clean(e.Message, 200)})
		}
	}
	model := e.Model
	if model == "" {
		model = "(unknown)"
	}
	m := a.models[model]
	if m == nil {
		m = &modelAgg{classes: map[string]int{}, lat: quantile.NewTargeted(map[float64]float64{0.5: 0.01, 0.95: 0.005})}
		a.models[model] = m
	}
	m.attempts += n
	m.classes[e.Class] += n
	if e.First {
		m.requests += n
	}
	if e.Fallback {
		m.fallbacks += n
	}
	m.waitMS += e.WaitMS * int64(n)
	if e.Latency >= 0 && e.Class == "ok" { // an answer's latency (not a lost hedge's, nor a cut one's)
		for range n {
			m.lat.Insert(float64(e.Latency))
		}
		m.latN += n
	}
	if e.InTokens > 0 {
		i := bucketOf(e.InTokens)
		a.sizes[i].attempts += n
		if capacity {
			a.sizes[i].capacity += n
		}
	}
	return true
}

// bucketOf is the size bucket of n input tokens.
func bucketOf(n int) int {
	i, _ := slices.BinarySearch(sizeEdges, n+1)
	return i - 1
}

// clean is a message fit to show: secrets redacted (the agents' files are
// not), control characters (a terminal's escapes) dropped, at most n bytes
// cut at a character's edge.
func clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, redact.String(s))
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Totals are the counts over everything read.
type Totals struct {
	Attempts  int `json:"attempts"`
	Requests  int `json:"requests"`
	Failures  int `json:"failures"`
	Capacity  int `json:"capacity"`
	RateLimit int `json:"rate_limit"`
	Quota     int `json:"quota"` // billing: credits, spend limits
	// UsageLimit counts a plan's usage window used up (it resets by
	// itself), apart from quota.
	UsageLimit int   `json:"usage_limit"`
	WaitMS     int64 `json:"wait_ms"`
}

// QuotaIncident is a quota failure: a plan's limit, kept apart from
// capacity (waiting for the pool does not help; the plan or the reset
// does).
type QuotaIncident struct {
	TS      time.Time `json:"ts"`
	Model   string    `json:"model"`
	Source  string    `json:"source"`
	Message string    `json:"message"`
}

// ModelStats are one model's numbers.
type ModelStats struct {
	Model     string         `json:"model"`
	Attempts  int            `json:"attempts"`
	Requests  int            `json:"requests"`
	Failures  int            `json:"failures"`
	Rate      float64        `json:"failure_rate"`
	Capacity  float64        `json:"capacity_rate"`
	Classes   map[string]int `json:"classes"`
	Fallbacks int            `json:"fallbacks"`
	// RetriesPerRequest is the attempts after the first, per request
	// (null when the source does not mark requests).
	RetriesPerRequest *float64 `json:"retries_per_request"`
	WaitMS            int64    `json:"wait_ms"`
	LatencyP50        *float64 `json:"latency_p50_ms"`
	LatencyP95        *float64 `json:"latency_p95_ms"`
}

// SizeBucket is the capacity rate of requests of one size range.
type SizeBucket struct {
	MinTokens int     `json:"min_tokens"`
	MaxTokens int     `json:"max_tokens"` // exclusive; 0: no bound
	Attempts  int     `json:"attempts"`
	Capacity  int     `json:"capacity"`
	Rate      float64 `json:"capacity_rate"`
}

// Threshold is the request size above which capacity failures clearly
// rise.
type Threshold struct {
	Tokens     int     `json:"tokens"`
	BelowRate  float64 `json:"below_rate"`
	AboveRate  float64 `json:"above_rate"`
	Z          float64 `json:"z"`
	Confidence string  `json:"confidence"` // high or moderate
	Attempts   int     `json:"attempts"`
}

// Window is a daily span of hours in the report's time zone.
type Window struct {
	Spec     string  `json:"spec"` // HH:00-HH:00
	From     int     `json:"from_hour"`
	To       int     `json:"to_hour"` // exclusive; may be below From (across midnight)
	Attempts int     `json:"attempts"`
	Capacity int     `json:"capacity"`
	Rate     float64 `json:"capacity_rate"`
}

// Day is one day's counts.
type Day struct {
	Date     string  `json:"date"`
	Attempts int     `json:"attempts"`
	Capacity int     `json:"capacity"`
	Quota    int     `json:"quota"`
	Failures int     `json:"failures"`
	Rate     float64 `json:"capacity_rate"`
}

// Result is a finished report (the JSON schema in docs/report.md).
type Result struct {
	Schema string     `json:"schema"`
	TZ     string     `json:"tz"`
	From   *time.Time `json:"from"`
	To     *time.Time `json:"to"`
	Inputs []Input    `json:"inputs"`
	// Absent are the places looked in that were not there ("codex
	// ~/.codex"), so that an empty report says where it looked.
	Absent  []string    `json:"absent,omitempty"`
	Totals  Totals      `json:"totals"`
	Heatmap [7][24]Cell `json:"heatmap"` // [weekday Monday=0][hour]
	// Metric is what the heatmap and the windows weigh: capacity_rate (the
	// share of attempts) or capacity_count (when the inputs record only
	// failures, as text logs do).
	Metric    string       `json:"heatmap_metric"`
	Models    []ModelStats `json:"models"`
	Sizes     []SizeBucket `json:"sizes"`
	Threshold *Threshold   `json:"size_threshold"`
	SizeNote  string       `json:"size_note"`
	Quiet     *Window      `json:"quiet_window"`
	// PeakOn says which days the peak window was found over: "weekdays"
	// (Monday to Friday) or "every day".
	PeakOn    string          `json:"peak_days"`
	Peak      *Window         `json:"peak_window"`
	QuietNote string          `json:"quiet_note"`
	Days      []Day           `json:"days"`
	QuotaN    int             `json:"quota_incidents"`
	Quota     []QuotaIncident `json:"quota_list"`
	// UsageLimits are the plans' usage limits met, the last 50, oldest
	// first (what they said: their reset is in the message).
	UsageLimits []QuotaIncident `json:"usage_limit_list"`
	Findings    []string        `json:"findings"`
	Sources     map[string]int  `json:"sources"`
}

// Input is one file or log read, and what came of it.
type Input struct {
	Source     string `json:"source"`
	Path       string `json:"path"`
	Events     int    `json:"events"`
	Unreadable int    `json:"unreadable_lines"`
	// Duplicates are the turns of an agent's file left out because the
	// gateway's event log holds them too.
	Duplicates int `json:"duplicates_skipped"`
	// Lost is the records the event log says it lost (its gap lines: the
	// writer could not write them) in range, in GapCount stretches; Gaps
	// are the first maxGapsListed of them, in the report's zone.
	Lost     int          `json:"records_lost"`
	GapCount int          `json:"gap_count"`
	Gaps     []events.Gap `json:"gaps,omitempty"`
	// Cut is how many of the unreadable lines are a record cut off
	// mid-write (a full disk, a crash).
	Cut   int    `json:"cut_lines"`
	Error string `json:"error,omitempty"`
	// lostSpan is the first and the last time of the records lost, of
	// all the gaps (zero: unknown).
	lostSpan events.Gap
}

// maxGapsListed bounds the gaps an input keeps one by one.
const maxGapsListed = 20

// Schema names the JSON layout; it changes only by adding fields.
const Schema = "spillway.report/v1"

func rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*10000) / 10000
}

// Result finishes the report.
func (a *Aggregate) Result(inputs []Input) Result {
	r := Result{Schema: Schema, TZ: a.loc.String(), Inputs: inputs, Totals: a.total, Heatmap: a.cells, QuotaN: a.quotaN, Quota: slices.Clip(a.quota), Sources: maps.Clone(a.sources)}
	if r.Inputs == nil {
		r.Inputs = []Input{}
	}
	r.UsageLimits = slices.Clone(a.limits)
	slices.SortStableFunc(r.UsageLimits, func(x, y QuotaIncident) int { return x.TS.Compare(y.TS) })
	if r.UsageLimits == nil {
		r.UsageLimits = []QuotaIncident{}
	}
	if r.Quota == nil {
		r.Quota = []QuotaIncident{}
	}
	if !a.first.IsZero() {
		f, l := a.first, a.last
		r.From, r.To = &f, &l
	}
	for name, m := range a.models {
		s := ModelStats{Model: name, Attempts: m.attempts, Requests: m.requests, Classes: maps.Clone(m.classes), Fallbacks: m.fallbacks, WaitMS: m.waitMS}
		for c, n := range m.classes {
			if (Event{Class: c}).failed() {
				s.Failures += n
			}
		}
		s.Rate, s.Capacity = rate(s.Failures, s.Attempts), rate(m.classes["capacity"], s.Attempts)
		if m.requests > 0 {
			v := math.Round(float64(m.attempts-m.requests)/float64(m.requests)*100) / 100
			s.RetriesPerRequest = &v
		}
		if m.latN > 0 {
			p50, p95 := math.Round(m.lat.Query(0.5)), math.Round(m.lat.Query(0.95))
			s.LatencyP50, s.LatencyP95 = &p50, &p95
		}
		r.Models = append(r.Models, s)
	}
	slices.SortFunc(r.Models, func(x, y ModelStats) int {
		return cmp.Or(cmp.Compare(y.Attempts, x.Attempts), cmp.Compare(x.Model, y.Model))
	})
	if r.Models == nil {
		r.Models = []ModelStats{}
	}
	for i, s := range a.sizes {
		b := SizeBucket{MinTokens: sizeEdges[i], Attempts: s.attempts, Capacity: s.capacity, Rate: rate(s.capacity, s.attempts)}
		if i+1 < len(sizeEdges) {
			b.MaxTokens = sizeEdges[i+1]
		}
		r.Sizes = append(r.Sizes, b)
	}
	r.Threshold, r.SizeNote = threshold(a.sizes)
	// a source that records only failures (a text log) has no share of
	// attempts to show: its heatmap and windows count capacity errors
	r.Metric = "capacity_rate"
	if a.total.Failures == a.total.Attempts {
		r.Metric = "capacity_count"
	}
	r.Quiet, r.Peak, r.QuietNote = windows(a.cells, r.Metric == "capacity_count")
	// the peak as people live it: on weekdays, when they have data
	var weekdays [7][24]Cell
	copy(weekdays[:5], a.cells[:5])
	if _, peak, _ := windows(weekdays, r.Metric == "capacity_count"); peak != nil {
		r.Peak, r.PeakOn = peak, "weekdays"
	} else if r.Peak != nil {
		r.PeakOn = "every day"
	}
	for date, d := range a.days {
		r.Days = append(r.Days, Day{Date: date, Attempts: d.attempts, Capacity: d.capacity, Quota: d.quota, Failures: d.failures, Rate: rate(d.capacity, d.attempts)})
	}
	slices.SortFunc(r.Days, func(x, y Day) int { return cmp.Compare(x.Date, y.Date) })
	if r.Days == nil {
		r.Days = []Day{}
	}
	r.Findings = findings(r)
	return r
}

// minSide is the fewest attempts with a known size on each side of a
// threshold for it to be named at all.
const minSide = 30

// threshold finds the bucket edge that best splits the capacity rate of
// smaller and larger requests (a two-proportion z-test at each edge); it
// names one only where the rate above is at least 1.5× the rate below and
// z ≥ 2, with at least minSide attempts each side.
func threshold(sizes []sizeAgg) (*Threshold, string) {
	total := 0
	for _, s := range sizes {
		total += s.attempts
	}
	if total < 2*minSide {
		return nil, "too little data: " + itoa(total) + " attempts with a known request size (at least " + itoa(2*minSide) + " needed)"
	}
	var best *Threshold
	for k := 1; k < len(sizes); k++ {
		var bn, bc, an, ac int
		for i, s := range sizes {
			if i < k {
				bn, bc = bn+s.attempts, bc+s.capacity
			} else {
				an, ac = an+s.attempts, ac+s.capacity
			}
		}
		if bn < minSide || an < minSide {
			continue
		}
		p1, p2 := float64(bc)/float64(bn), float64(ac)/float64(an)
		p := float64(bc+ac) / float64(bn+an)
		se := math.Sqrt(p * (1 - p) * (1/float64(bn) + 1/float64(an)))
		if se == 0 || p2 < 1.5*p1 || p2 == 0 {
			continue
		}
		z := (p2 - p1) / se
		if z < 2 || (best != nil && z <= best.Z) {
			continue
		}
		conf := "moderate"
		if z >= 3.3 {
			conf = "high"
		}
		best = &Threshold{Tokens: sizeEdges[k], BelowRate: rate(bc, bn), AboveRate: rate(ac, an), Z: math.Round(z*100) / 100, Confidence: conf, Attempts: bn + an}
	}
	if best == nil {
		return nil, "no size above which capacity failures clearly rise (" + itoa(total) + " attempts with a known size)"
	}
	return best, ""
}

// minHour is the fewest attempts an hour needs to count toward a window.
const minHour = 5

// windows finds the quiet window (the longest run of hours, across
// midnight too, whose capacity rate is in the lowest third of the range
// between the best and the worst hour, each with minHour attempts) and the
// peak window (the longest run in the highest third), over every day of
// the week together; none when the worst hour is not 1.5× the best. By
// counts, an hour's number of capacity errors is weighed instead.
func windows(cells [7][24]Cell, byCount bool) (quiet, peak *Window, note string) {
	var hours [24]Cell
	var all Cell
	for d := range cells {
		for h := range cells[d] {
			hours[h].Attempts += cells[d][h].Attempts
			hours[h].Capacity += cells[d][h].Capacity
			all.Attempts += cells[d][h].Attempts
			all.Capacity += cells[d][h].Capacity
		}
	}
	known := 0
	for _, c := range hours {
		if c.Attempts >= minHour {
			known++
		}
	}
	if byCount {
		// a log's silent hour is a quiet one, given enough errors to tell
		// (two an hour of the day on average)
		if all.Capacity < 48 {
			return nil, nil, "too little data: " + itoa(all.Capacity) + " capacity errors (48 needed to tell the hours apart)"
		}
		known = 24
	}
	if known < 12 || all.Capacity == 0 {
		if all.Capacity == 0 && known >= 12 {
			return nil, nil, "no capacity errors at all: any hour is quiet"
		}
		return nil, nil, "too little data: " + itoa(known) + " of 24 hours have " + itoa(minHour) + " attempts or more (12 needed)"
	}
	value := func(c Cell) (float64, bool) {
		if byCount {
			return float64(c.Capacity), true
		}
		return float64(c.Capacity) / float64(max(c.Attempts, 1)), c.Attempts >= minHour
	}
	lo, hi := math.Inf(1), 0.0
	for _, c := range hours {
		if v, ok := value(c); ok {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi < 1.5*lo || hi == 0 {
		return nil, nil, "no hour stands out: the best and worst hours differ by less than 1.5×"
	}
	// the lowest third of the range is quiet, the highest third the peak
	low := func(c Cell) bool { v, ok := value(c); return ok && v <= lo+(hi-lo)/3 }
	high := func(c Cell) bool { v, ok := value(c); return ok && v >= hi-(hi-lo)/3 }
	return longestRun(hours, low), longestRun(hours, high), ""
}

// longestRun is the longest circular run of hours that ok holds for (not
// all 24), or nil.
func longestRun(hours [24]Cell, ok func(Cell) bool) *Window {
	bestFrom, bestLen := -1, 0
	for from := 0; from < 24; from++ {
		if !ok(hours[from]) || ok(hours[(from+23)%24]) {
			continue // not the start of a run
		}
		n := 0
		for n < 24 && ok(hours[(from+n)%24]) {
			n++
		}
		if n > bestLen {
			bestFrom, bestLen = from, n
		}
	}
	if bestFrom < 0 {
		return nil
	}
	w := &Window{From: bestFrom, To: (bestFrom + bestLen) % 24}
	var c Cell
	for i := 0; i < bestLen; i++ {
		c.Attempts += hours[(bestFrom+i)%24].Attempts
		c.Capacity += hours[(bestFrom+i)%24].Capacity
	}
	w.Attempts, w.Capacity, w.Rate = c.Attempts, c.Capacity, rate(c.Capacity, c.Attempts)
	w.Spec = hh(w.From) + "-" + hh(w.To)
	return w
}
