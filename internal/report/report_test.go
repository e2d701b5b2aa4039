package report_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/report"
)

// world is a synthetic history with known patterns: four weeks of
// attempts every hour; on weekdays 10:00–16:00 capacity errors are ten
// times as likely; gpt-6-astra fails at capacity more than gpt-6.1-sol;
// requests of 32k input tokens and more fail more.
type world struct {
	peakFrom, peakTo int     // weekday hours of the peak
	base, peak       float64 // capacity probability outside and inside it
	astraExtra       float64 // added for gpt-6-astra
	bigExtra         float64 // added for requests ≥ 32k tokens
	quota            int     // quota errors sprinkled in
}

var loc = time.FixedZone("UTC+1", 3600)

func (w world) records(seed uint64) []events.Record {
	rnd := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, loc) // a Monday
	var out []events.Record
	n := 0
	for h := 0; h < 28*24; h++ {
		at := start.Add(time.Duration(h) * time.Hour)
		for i := 0; i < 20; i++ {
			model := "gpt-6.1-sol"
			if i%2 == 0 {
				model = "gpt-6-astra"
			}
			size := 2000 + rnd.IntN(20000)
			if i%4 == 0 {
				size = 40000 + rnd.IntN(40000)
			}
			p := w.base
			if at.Weekday() >= time.Monday && at.Weekday() <= time.Friday && at.Hour() >= w.peakFrom && at.Hour() < w.peakTo {
				p = w.peak
			}
			if model == "gpt-6-astra" {
				p += w.astraExtra
			}
			if size >= 32000 {
				p += w.bigExtra
			}
			class := "ok"
			if rnd.Float64() < p {
				class = "capacity"
			}
			n++
			r := events.Record{TS: at.Add(time.Duration(i) * time.Minute).UTC(), RequestID: "r" + itoa(n), Attempt: 1, Source: "gateway",
				Provider: "openai", Model: model, RequestedModel: model, Class: class, EstInputTokens: size, LatencyMS: int64(200 + rnd.IntN(800))}
			if class == "capacity" {
				r.Status, r.LatencyMS = 503, 40
			}
			out = append(out, r)
			if class == "capacity" { // the fallback that answered
				out = append(out, events.Record{TS: r.TS.Add(time.Second), RequestID: r.RequestID, Attempt: 2, Source: "gateway", Provider: "openai",
					Model: "gpt-6-luna", RequestedModel: model, FallbackFrom: model, Class: "ok", EstInputTokens: size, LatencyMS: 300, WaitMS: 250})
			}
		}
	}
	for i := 0; i < w.quota; i++ {
		out = append(out, events.Record{TS: start.Add(time.Duration(30+i) * time.Hour).UTC(), RequestID: "q" + itoa(i), Attempt: 1, Source: "exec",
			Model: "gpt-6-astra", RequestedModel: "gpt-6-astra", Class: "quota", Error: "You exceeded your current quota"})
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// writeLog writes recs as a rotated event log: the older half gzipped in
// path.1.gz, the rest in path, with one broken line.
func writeLog(t *testing.T, recs []events.Record) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	var old, cur bytes.Buffer
	for i, r := range recs {
		b, _ := json.Marshal(r)
		if i < len(recs)/2 {
			old.Write(append(b, '\n'))
		} else {
			cur.Write(append(b, '\n'))
		}
	}
	cur.WriteString("{not json\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(old.Bytes())
	zw.Close()
	if err := os.WriteFile(path+".1.gz", gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, cur.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func build(t *testing.T, o report.Options) report.Result {
	t.Helper()
	if o.Loc == nil {
		o.Loc = loc
	}
	r, err := report.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReportFindsTheSeededPatterns(t *testing.T) {
	w := world{peakFrom: 10, peakTo: 16, base: 0.02, peak: 0.30, astraExtra: 0.10, bigExtra: 0.10, quota: 3}
	recs := w.records(7)
	path := writeLog(t, recs)
	r := build(t, report.Options{EventLog: path, EventLogNamed: true, Only: []string{"spillway"}})

	if r.Totals.Attempts != len(recs) {
		t.Fatalf("attempts %d, want %d (the gzipped rotated file and the current one)", r.Totals.Attempts, len(recs))
	}
	unreadable := 0
	for _, in := range r.Inputs {
		unreadable += in.Unreadable
	}
	if len(r.Inputs) != 2 || unreadable != 1 {
		t.Fatalf("inputs %+v: want two files and the one broken line counted", r.Inputs)
	}
	// the darkest heatmap cell is in the seeded peak
	bestD, bestH, best := 0, 0, -1.0
	for d := range r.Heatmap {
		for h, c := range r.Heatmap[d] {
			if v := float64(c.Capacity) / float64(c.Attempts); v > best {
				bestD, bestH, best = d, h, v
			}
		}
	}
	if bestD > 4 || bestH < 10 || bestH >= 16 {
		t.Errorf("the worst cell is %s %02d:00, outside the seeded weekday 10:00–16:00 peak", report.Weekdays[bestD], bestH)
	}
	if r.Peak == nil || r.Peak.From != 10 || r.Peak.To != 16 {
		t.Errorf("peak window %+v, want 10:00-16:00", r.Peak)
	}
	if r.Quiet == nil || (r.Quiet.From < 16 && r.Quiet.From >= 10) {
		t.Errorf("quiet window %+v, want one outside the peak (%s)", r.Quiet, r.QuietNote)
	}
	// per model: the seeded rates, within sampling noise
	rates := map[string]float64{}
	for _, m := range r.Models {
		rates[m.Model] = m.Capacity
	}
	// expected: base mix (5/7 of days × 6/24 hours at the peak) plus the
	// extras (a quarter of requests are big)
	peakShare := 5.0 / 7 * 6 / 24
	mean := w.base*(1-peakShare) + w.peak*peakShare + w.bigExtra/4
	for model, want := range map[string]float64{"gpt-6-astra": mean + w.astraExtra, "gpt-6.1-sol": mean} {
		if math.Abs(rates[model]-want) > 0.03 {
			t.Errorf("%s capacity rate %.3f, want about %.3f", model, rates[model], want)
		}
	}
	for _, m := range r.Models {
		switch m.Model {
		case "gpt-6-luna":
			if m.Fallbacks != m.Attempts || m.RetriesPerRequest != nil && *m.RetriesPerRequest != 0 {
				t.Errorf("gpt-6-luna: %+v: every attempt a fallback", m)
			}
			if m.WaitMS != int64(m.Attempts)*250 {
				t.Errorf("gpt-6-luna waited %d ms, want %d", m.WaitMS, m.Attempts*250)
			}
		case "gpt-6-astra":
			if m.LatencyP50 == nil || *m.LatencyP50 < 400 || *m.LatencyP50 > 800 || *m.LatencyP95 < *m.LatencyP50 {
				t.Errorf("astra latency p50 %v p95 %v, want the answered attempts' (200–1000 ms, uniform)", m.LatencyP50, m.LatencyP95)
			}
		}
	}
	if th := r.Threshold; th == nil || th.Tokens != 32000 || th.Confidence != "high" {
		t.Errorf("size threshold %+v (%s), want 32k with high confidence", r.Threshold, r.SizeNote)
	}
	if r.QuotaN != 3 || r.Totals.Quota != 3 || len(r.Quota) != 3 {
		t.Errorf("quota incidents %d, want the 3 seeded, apart from capacity", r.QuotaN)
	}
	if len(r.Days) != 28 {
		t.Errorf("%d days, want 28", len(r.Days))
	}
	joined := strings.Join(r.Findings, "\n")
	for _, want := range []string{"On weekdays between 10:00 and 16:00 you hit capacity", "gpt-6-astra hits capacity most", "Above 32k input tokens", "3 quota errors"} {
		if !strings.Contains(joined, want) {
			t.Errorf("findings lack %q:\n%s", want, joined)
		}
	}
}

func TestReportSaysWhenDataIsThin(t *testing.T) {
	w := world{peakFrom: 10, peakTo: 16, base: 0.02, peak: 0.30}
	recs := w.records(3)[:40] // two hours of one day
	r := build(t, report.Options{EventLog: writeLog(t, recs), EventLogNamed: true, Only: []string{"spillway"}})
	if r.Threshold != nil || !strings.Contains(r.SizeNote, "too little data") {
		t.Errorf("threshold %+v note %q: want too little data", r.Threshold, r.SizeNote)
	}
	if r.Quiet != nil || !strings.Contains(r.QuietNote, "too little data") {
		t.Errorf("quiet %+v note %q: want too little data", r.Quiet, r.QuietNote)
	}
}

func TestReportRange(t *testing.T) {
	w := world{base: 0.1}
	recs := w.records(1)
	since := time.Date(2026, 11, 9, 0, 0, 0, 0, loc)
	until := time.Date(2026, 11, 16, 0, 0, 0, 0, loc)
	r := build(t, report.Options{EventLog: writeLog(t, recs), EventLogNamed: true, Only: []string{"spillway"}, Since: since, Until: until})
	if len(r.Days) != 7 || r.Days[0].Date != "2026-11-09" || r.Days[6].Date != "2026-11-15" {
		t.Fatalf("days %+v, want the week of Nov 9", r.Days)
	}
}

func TestReportJSONIsStable(t *testing.T) {
	r := build(t, report.Options{EventLog: writeLog(t, world{base: 0.1}.records(2)), EventLogNamed: true, Only: []string{"spillway"}})
	var buf bytes.Buffer
	if err := report.JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"schema", "tz", "from", "to", "inputs", "totals", "heatmap", "heatmap_metric", "models", "sizes", "size_threshold",
		"size_note", "quiet_window", "peak_window", "quiet_note", "days", "quota_incidents", "quota_list", "findings", "sources"} {
		if _, ok := m[key]; !ok {
			t.Errorf("JSON lacks %q (docs/report.md documents it)", key)
		}
	}
	if m["schema"] != report.Schema {
		t.Errorf("schema %v", m["schema"])
	}
	if hm := m["heatmap"].([]any); len(hm) != 7 || len(hm[0].([]any)) != 24 {
		t.Errorf("heatmap is not 7 × 24")
	}
}

func TestMissingNamedLogIsAnError(t *testing.T) {
	_, err := report.Build(context.Background(), report.Options{EventLog: filepath.Join(t.TempDir(), "none.jsonl"), EventLogNamed: true, Only: []string{"spillway"}})
	if err == nil {
		t.Fatal("a named event log that is not there must be an error")
	}
	if _, err := report.Build(context.Background(), report.Options{Only: []string{"codx"}}); err == nil || !strings.Contains(err.Error(), "sources: spillway, codex, claude, gemini") {
		t.Fatalf("unknown source: %v", err)
	}
}

// An attempt its caller ended is counted as such, not as a failure of the
// model.
func TestCallerEndedIsNotAFailure(t *testing.T) {
	ts := time.Date(2026, 11, 10, 11, 0, 0, 0, loc)
	ended := events.Record{TS: ts, RequestID: "a", Attempt: 1, Model: "gpt-6-astra", Class: "unknown", Error: "cancelled by the caller", CallerEnded: true}
	full := events.Record{TS: ts, RequestID: "b", Attempt: 1, Model: "gpt-6-astra", Class: "capacity"}
	a := report.NewAggregate(loc, time.Time{}, time.Time{})
	a.Add(report.EventOf(ended))
	a.Add(report.EventOf(full))
	r := a.Result(nil)
	if len(r.Models) != 1 || r.Models[0].Attempts != 2 || r.Models[0].Failures != 1 || r.Models[0].Classes[report.CallerEnded] != 1 {
		t.Fatalf("models %+v: want 2 attempts, 1 failure (capacity), 1 caller_ended", r.Models)
	}
	if r.Totals.Failures != 1 {
		t.Errorf("totals %+v: want 1 failure", r.Totals)
	}
}
