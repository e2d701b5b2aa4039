package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/words"
)

// Weekdays are the heatmap's rows, Monday first.
var Weekdays = [7]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// JSON writes the result as indented JSON (schema spillway.report/v1).
func JSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// cellValue is what a cell shows: its capacity share (or, by count, its
// capacity errors), -1 with no data.
func cellValue(r Result, c Cell) float64 {
	if c.Attempts == 0 {
		return -1
	}
	if r.Metric == "capacity_count" {
		return float64(c.Capacity)
	}
	return float64(c.Capacity) / float64(c.Attempts)
}

// scale is the range of the cell values with data (for the colour
// scale: the least is palest, the most darkest).
func scale(r Result) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for d := range r.Heatmap {
		for h := range r.Heatmap[d] {
			if v := cellValue(r, r.Heatmap[d][h]); v >= 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi == 0 {
		lo = 0
	}
	return lo, hi
}

// shade is a value's place on the scale, 0 (the least) to 1 (the most);
// no capacity errors at all is 0 whatever the scale.
func shade(v, lo, hi float64) float64 {
	if v <= 0 || hi <= 0 {
		return 0
	}
	if hi == lo {
		return 1
	}
	return math.Max(0, math.Min((v-lo)/(hi-lo), 1))
}

// rgb is the colour of a shade: from near white to dark red.
func rgb(s float64) (int, int, int) {
	lo, hi := [3]float64{247, 244, 240}, [3]float64{103, 0, 13}
	var c [3]int
	for i := range c {
		c[i] = int(math.Round(lo[i] + (hi[i]-lo[i])*s))
	}
	return c[0], c[1], c[2]
}

// Fills are the heatmap's cell colours ("rgb(R, G, B)"), the HTML
// report's and the dashboard's; "" for a cell with no attempts.
func Fills(r Result) [7][24]string {
	var out [7][24]string
	lo, hi := scale(r)
	for d := range r.Heatmap {
		for h := range r.Heatmap[d] {
			if v := cellValue(r, r.Heatmap[d][h]); v >= 0 {
				cr, cg, cb := rgb(shade(v, lo, hi))
				out[d][h] = fmt.Sprintf("rgb(%d, %d, %d)", cr, cg, cb)
			}
		}
	}
	return out
}

// Text writes the terminal view; colour uses 24-bit ANSI backgrounds (a
// terminal), else the heatmap is drawn in characters.
func Text(w io.Writer, r Result, colour bool) error {
	bw := &errWriter{w: w}
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("spillway report")
	if r.From != nil {
		p(": %s to %s (%s)", r.From.Format("Mon 2006-01-02 15:04"), r.To.Format("Mon 2006-01-02 15:04"), r.TZ)
	}
	p("\n")
	for _, line := range InputLines(r) {
		p("  %s\n", line)
	}
	if r.Totals.Attempts == 0 {
		textNothing(p, r)
		return bw.err
	}
	textHeatmap(p, r, colour)
	textModels(bw, p, r)
	textSizes(p, r)
	textDays(p, r)
	textQuota(p, r)
	p("\nFindings\n")
	for _, f := range r.Findings {
		p("  • %s\n", f)
	}
	return bw.err
}

// printf is how the parts of Text write: fmt.Fprintf to its writer.
type printf func(format string, a ...any)

// textNothing says why there is nothing to report: no source was there
// (and where it looked), or none had an attempt in range.
func textNothing(p printf, r Result) {
	switch {
	case len(r.Inputs) == 0:
		p("\nNothing to report: no source was there. Looked for:\n")
		for _, a := range r.Absent {
			p("  %s (not there)\n", a)
		}
		p("spillway serve writes the event log as requests go through it; or name what to read:\n--events FILE, --text-log FILE, --codex-home, --claude-home, --gemini-home.\n")
	default:
		p("\nNo attempts in range.\n")
	}
}

// textHeatmap draws the weekday-by-hour heatmap: in 24-bit colour, or in
// characters.
func textHeatmap(p printf, r Result, colour bool) {
	what := "share of attempts"
	if r.Metric == "capacity_count" {
		what = "number of errors"
	}
	p("\nCapacity errors by weekday and hour (%s; ", what)
	if colour {
		p("darker is worse; blank: no data)\n")
	} else {
		p("' .:-=+*#%%@' from the least to the most; '·' no data)\n")
	}
	p("     ")
	for h := 0; h < 24; h++ {
		p("%02d ", h)
	}
	p("\n")
	lo, hi := scale(r)
	const ramp = " .:-=+*#%@"
	for d := range r.Heatmap {
		p("%s  ", Weekdays[d])
		for h := range r.Heatmap[d] {
			rt := cellValue(r, r.Heatmap[d][h])
			switch {
			case colour && rt < 0:
				p("   ")
			case colour:
				cr, cg, cb := rgb(shade(rt, lo, hi))
				p("\x1b[48;2;%d;%d;%dm  \x1b[0m ", cr, cg, cb)
			case rt < 0:
				p(" · ")
			default:
				i := int(math.Round(shade(rt, lo, hi) * float64(len(ramp)-1)))
				ch := ramp[i]
				p(" %c%c", ch, ch)
			}
		}
		p("\n")
	}
}

// textModels writes the table of models, if there are any.
func textModels(w io.Writer, p printf, r Result) {
	if len(r.Models) == 0 {
		return
	}
	p("\nModels\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tattempts\tfailed\tcapacity\trate limit\tquota\tfallbacks\tretries/request\twaited\tp50\tp95\t")
	for _, m := range r.Models {
		rpr := "-"
		if m.RetriesPerRequest != nil {
			rpr = fmt.Sprintf("%.2f", *m.RetriesPerRequest)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", m.Model, m.Attempts, pct(m.Rate), pct(m.Capacity),
			m.Classes["rate_limit"], m.Classes["quota"], m.Fallbacks, rpr, dur(m.WaitMS), ms(m.LatencyP50), ms(m.LatencyP95))
	}
	tw.Flush()
}

// textSizes writes capacity errors by request size, if any attempt has
// a size.
func textSizes(p printf, r Result) {
	sized := false
	for _, b := range r.Sizes {
		sized = sized || b.Attempts > 0
	}
	if !sized {
		return
	}
	p("\nCapacity errors by request size (input tokens)\n")
	for _, b := range r.Sizes {
		if b.Attempts == 0 {
			continue
		}
		bar := strings.Repeat("█", int(math.Round(b.Rate*40)))
		p("  %-12s %8d attempts %7s  %s\n", sizeLabel(b), b.Attempts, pct(b.Rate), bar)
	}
}

// textDays writes the days, when there is more than one.
func textDays(p printf, r Result) {
	if len(r.Days) <= 1 {
		return
	}
	p("\nBy day\n")
	for _, d := range r.Days {
		t, _ := time.Parse(time.DateOnly, d.Date)
		p("  %s %s %8d attempts %7s capacity", d.Date, t.Format("Mon"), d.Attempts, pct(d.Rate))
		if d.Quota > 0 {
			p(", %d quota", d.Quota)
		}
		p("\n")
	}
}

// textQuota writes the quota errors, kept apart from capacity: their
// number and the first five.
func textQuota(p printf, r Result) {
	if r.QuotaN <= 0 {
		return
	}
	p("\nQuota errors (kept apart from capacity): %d\n", r.QuotaN)
	for i, q := range r.Quota {
		if i == 5 {
			p("  …\n")
			break
		}
		p("  %s %s %s: %s\n", q.TS.Format("2006-01-02 15:04"), q.Source, q.Model, q.Message)
	}
}

// InputLines say what each input gave, one line a file, or, for a source
// of many files, their sum: "spillway events.jsonl: 15 events, 15 records
// lost between Mon 2026-11-30 09:10 and 09:24, 1 half-written record
// skipped".
func InputLines(r Result) []string {
	perSource := map[string][]Input{}
	var order []string
	for _, in := range r.Inputs {
		if _, ok := perSource[in.Source]; !ok {
			order = append(order, in.Source)
		}
		perSource[in.Source] = append(perSource[in.Source], in)
	}
	var out []string
	for _, src := range order {
		ins := perSource[src]
		if len(ins) > 5 {
			sum := Input{Source: src, Path: words.Count(len(ins), "file")}
			errs := 0
			for _, in := range ins {
				sum.Events += in.Events
				sum.Unreadable += in.Unreadable
				sum.Duplicates += in.Duplicates
				sum.Lost += in.Lost
				sum.GapCount += in.GapCount
				sum.lostSpan = joinGaps(sum.lostSpan, in.lostSpan)
				sum.Cut += in.Cut
				if in.Error != "" {
					errs++
				}
			}
			if errs > 0 {
				sum.Error = words.Count(errs, "file") + " unreadable"
			}
			ins = []Input{sum}
		}
		for _, in := range ins {
			line := fmt.Sprintf("%-8s %s: %s", in.Source, in.Path, words.Count(in.Events, "event"))
			if in.Lost > 0 {
				line += ", " + lost(in.Lost, in.GapCount, in.lostSpan)
			}
			if in.Cut > 0 {
				line += ", " + words.Count(in.Cut, "half-written record") + " skipped"
			}
			if n := in.Unreadable - in.Cut; n > 0 {
				line += ", " + words.Count(n, "unreadable line") + " skipped"
			}
			if in.Duplicates > 0 {
				line += fmt.Sprintf(", %s already in the event log skipped", words.Count(in.Duplicates, "turn"))
			}
			if in.Error != "" {
				line += " (" + clean(in.Error, 200) + ")"
			}
			out = append(out, line)
		}
	}
	return out
}

// lost says n records lost in so many stretches, and over which span
// ("15 records lost between Mon 2026-11-30 09:10 and 09:24").
func lost(n, stretches int, over events.Gap) string {
	s := words.Count(n, "record") + " lost"
	if stretches > 1 {
		s += " in " + itoa(stretches) + " stretches"
	}
	return s + between(over.From, over.Until)
}

// between is " between FROM and UNTIL" (the day once when it is the
// same), "" when either is unknown.
func between(from, until time.Time) string {
	if from.IsZero() || until.IsZero() {
		return ""
	}
	s := " between " + from.Format("Mon 2006-01-02 15:04") + " and "
	if y, m, d := from.Date(); y == until.Year() && m == until.Month() && d == until.Day() {
		return s + until.Format("15:04")
	}
	return s + until.Format("Mon 2006-01-02 15:04")
}

func sizeLabel(b SizeBucket) string {
	if b.MaxTokens == 0 {
		return "≥" + tokens(b.MinTokens)
	}
	return tokens(b.MinTokens) + "–" + tokens(b.MaxTokens)
}

func dur(msec int64) string {
	if msec == 0 {
		return "-"
	}
	return (time.Duration(msec) * time.Millisecond).Round(time.Second).String()
}

func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	return (time.Duration(*v) * time.Millisecond).Round(time.Millisecond).String()
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
