package report

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/internal/words"
)

func itoa(n int) string { return strconv.Itoa(n) }

func hh(h int) string { return fmt.Sprintf("%02d:00", h) }

func pct(r float64) string {
	if r > 0 && r < 0.001 {
		return "<0.1%"
	}
	return strconv.FormatFloat(r*100, 'f', 1, 64) + "%"
}

// findings says in plain words what the numbers show.
func findings(r Result) []string {
	var out []string
	if r.Totals.Attempts == 0 {
		return append([]string{"nothing to report: no attempts in range"}, lossFindings(r)...)
	}
	limits := ""
	if r.Totals.UsageLimit > 0 {
		limits = ", " + words.Count(r.Totals.UsageLimit, "usage limit")
	}
	if r.Metric == "capacity_count" { // the inputs record failures only
		out = append(out, fmt.Sprintf("%s: %d capacity, %s, %s%s.",
			words.Count(r.Totals.Attempts, "failure line"), r.Totals.Capacity, words.Count(r.Totals.RateLimit, "rate limit"), words.Count(r.Totals.Quota, "quota error"), limits))
	} else {
		out = append(out, fmt.Sprintf("%s; %s hit capacity (%d), %s, %s%s.",
			words.Count(r.Totals.Attempts, "attempt"), pct(rate(r.Totals.Capacity, r.Totals.Attempts)), r.Totals.Capacity, words.Count(r.Totals.RateLimit, "rate limit"), words.Count(r.Totals.Quota, "quota error"), limits))
	}
	out = append(out, lossFindings(r)...)
	if r.Totals.UsageLimit > 0 {
		out = append(out, fmt.Sprintf("%s: your plan's window was used up; it comes back at its reset (spillway exec --until-reset waits for it; a chain's overflow spills to another provider).", words.Count(r.Totals.UsageLimit, "usage limit")))
	}
	byCount := r.Metric == "capacity_count"
	switch {
	case byCount && r.Peak != nil && r.Quiet != nil && r.Quiet.Capacity > 0:
		peakH, quietH := float64(r.Peak.Capacity)/float64(span(r.Peak)), float64(r.Quiet.Capacity)/float64(span(r.Quiet))
		out = append(out, fmt.Sprintf("Between %s and %s the log has %.1f× as many capacity errors an hour as between %s and %s.",
			hh(r.Peak.From), hh(r.Peak.To), peakH/quietH, hh(r.Quiet.From), hh(r.Quiet.To)))
	case byCount && r.Peak != nil:
		out = append(out, fmt.Sprintf("Capacity errors peak between %s and %s.", hh(r.Peak.From), hh(r.Peak.To)))
	case byCount:
	case r.Peak != nil && r.Quiet != nil && r.Quiet.Rate > 0:
		out = append(out, fmt.Sprintf("%s between %s and %s you hit capacity %.1f× as often as in the quiet hours %s–%s (%s against %s of attempts).",
			on(r), hh(r.Peak.From), hh(r.Peak.To), r.Peak.Rate/r.Quiet.Rate, hh(r.Quiet.From), hh(r.Quiet.To), pct(r.Peak.Rate), pct(r.Quiet.Rate)))
	case r.Peak != nil && r.Quiet != nil:
		out = append(out, fmt.Sprintf("%s between %s and %s %s of attempts hit capacity; in the quiet hours %s–%s none did.",
			on(r), hh(r.Peak.From), hh(r.Peak.To), pct(r.Peak.Rate), hh(r.Quiet.From), hh(r.Quiet.To)))
	case r.Peak != nil:
		out = append(out, fmt.Sprintf("%s capacity errors peak between %s and %s (%s of attempts).", on(r), hh(r.Peak.From), hh(r.Peak.To), pct(r.Peak.Rate)))
	}
	if r.Quiet != nil && byCount {
		out = append(out, fmt.Sprintf("Quiet window: %s (%d capacity errors in it); `spillway report --save-windows` lets `queue add --window quiet` use it.", r.Quiet.Spec, r.Quiet.Capacity))
	} else if r.Quiet != nil {
		out = append(out, fmt.Sprintf("Quiet window: %s (%s of %s hit capacity); `spillway report --save-windows` lets `queue add --window quiet` use it.", r.Quiet.Spec, pct(r.Quiet.Rate), words.Count(r.Quiet.Attempts, "attempt")))
	} else if r.QuietNote != "" {
		out = append(out, "No quiet window: "+r.QuietNote+".")
	}
	// the model that fails most, against the one that fails least
	var worst, best *ModelStats
	for i := range r.Models {
		m := &r.Models[i]
		if m.Attempts < 20 || m.Model == "(unknown)" {
			continue
		}
		if worst == nil || m.Capacity > worst.Capacity {
			worst = m
		}
		if best == nil || m.Capacity < best.Capacity {
			best = m
		}
	}
	// said only when one model clearly stands out against another
	if worst != nil && best != nil && worst != best && worst.Capacity > 0 && worst.Capacity >= 1.5*best.Capacity {
		s := fmt.Sprintf("%s hits capacity most: %s of %s", worst.Model, pct(worst.Capacity), words.Count(worst.Attempts, "attempt"))
		if best.Capacity > 0 {
			s += fmt.Sprintf(", %.1f× %s (%s)", worst.Capacity/best.Capacity, best.Model, pct(best.Capacity))
		} else {
			s += fmt.Sprintf("; %s none of %d", best.Model, best.Attempts)
		}
		out = append(out, s+".")
	} else if worst != nil && best != nil && worst != best && worst.Capacity > 0 {
		out = append(out, "No model stands out: every model with 20 attempts or more hits capacity within 1.5× of the others.")
	}
	if t := r.Threshold; t != nil {
		out = append(out, fmt.Sprintf("Above %s input tokens capacity failures rise from %s to %s (%s confidence, %d attempts with a known size).",
			tokens(t.Tokens), pct(t.BelowRate), pct(t.AboveRate), t.Confidence, t.Attempts))
	} else if r.SizeNote != "" {
		out = append(out, "Request size: "+r.SizeNote+".")
	}
	if r.Totals.WaitMS > 0 {
		out = append(out, "Time lost waiting (backoff, Retry-After, the ladder): "+(time.Duration(r.Totals.WaitMS)*time.Millisecond).Round(time.Second).String()+".")
	}
	if r.Sources["text"] > 0 && r.Sources["text"] < r.Totals.Attempts {
		out = append(out, "Text logs record failures only: mixed with sources that record every attempt, their lines raise the failure rates above; read a text log alone for its own pattern.")
	}
	if r.QuotaN > 0 {
		out = append(out, fmt.Sprintf("%d quota errors: your plan's limits, not the provider's capacity; waiting for a quiet hour does not help (the plan or its reset does).", r.QuotaN))
	}
	return out
}

// lossFindings say what the event log lost: the records its gap lines
// say were never written, and the records cut off mid-write.
func lossFindings(r Result) []string {
	var out []string
	lost, stretches, cut := 0, 0, 0
	var over events.Gap
	for _, in := range r.Inputs {
		if in.Source == "spillway" {
			lost, stretches, cut = lost+in.Lost, stretches+in.GapCount, cut+in.Cut
			over = joinGaps(over, in.lostSpan)
		}
	}
	if lost > 0 {
		s := words.Count(lost, "attempt") + " never reached the event log"
		if stretches > 1 {
			s += ", in " + itoa(stretches) + " stretches"
		}
		s += between(over.From, over.Until) + ": spillway could not write them"
		if over.Error != "" && stretches > 1 {
			s += " (the last time: " + clean(over.Error, 200) + ")"
		} else if over.Error != "" {
			s += " (" + clean(over.Error, 200) + ")"
		}
		out = append(out, s+", so the report counts fewer attempts than happened then.")
	}
	switch {
	case cut == 1:
		out = append(out, "1 line of the event log is a record cut off mid-write (the disk filled up, or spillway stopped, while writing it); it was skipped.")
	case cut > 1:
		out = append(out, itoa(cut)+" lines of the event log are records cut off mid-write (the disk filled up, or spillway stopped, while writing them); they were skipped.")
	}
	return out
}

// tokens writes a token count as 32k.
func tokens(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return itoa(n/1000) + "k"
	}
	return itoa(n)
}

// span is a window's length in hours.
func span(w *Window) int { return (w.To-w.From+23)%24 + 1 }

// on names the days of the peak window, capitalised to start a sentence.
func on(r Result) string {
	if r.PeakOn == "weekdays" {
		return "On weekdays"
	}
	return "Every day"
}
