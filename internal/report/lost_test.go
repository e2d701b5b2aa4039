package report_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/internal/report"
)

// A log the disk filled up under (testdata/report/lost.jsonl, as the
// events package's writer wrote it): its gap line is counted and shown in
// the text, the JSON and the page, and the record the disk cut off is
// named for what it is, not as an unreadable line.
func TestReportSaysWhatTheLogLost(t *testing.T) {
	log := filepath.Join("..", "..", "testdata", "report", "lost.jsonl")
	r := build(t, report.Options{EventLog: log, EventLogNamed: true, Only: []string{"spillway"}, Loc: time.UTC})
	if len(r.Inputs) != 1 {
		t.Fatalf("inputs %+v", r.Inputs)
	}
	in := r.Inputs[0]
	if in.Events != 15 || in.Lost != 15 || in.GapCount != 1 || in.Unreadable != 1 || in.Cut != 1 || len(in.Gaps) != 1 {
		t.Fatalf("input %+v: want 15 events, 15 records lost in 1 gap, 1 line cut short", in)
	}
	line := "spillway " + log + ": 15 events, 15 records lost between Mon 2026-11-30 09:10 and 09:24, 1 half-written record skipped"
	if got := report.InputLines(r); !slices.Equal(got, []string{line}) {
		t.Fatalf("input lines %q\nwant %q", got, line)
	}
	lost := "15 attempts never reached the event log between Mon 2026-11-30 09:10 and 09:24: spillway could not write them " +
		"(write /home/me/.local/state/spillway/events.jsonl: no space left on device), so the report counts fewer attempts than happened then."
	cut := "1 line of the event log is a record cut off mid-write (the disk filled up, or spillway stopped, while writing it); it was skipped."
	if len(r.Findings) < 3 || r.Findings[1] != lost || r.Findings[2] != cut {
		t.Fatalf("findings %q\nwant after the first:\n%s\n%s", r.Findings, lost, cut)
	}
	var text bytes.Buffer
	if err := report.Text(&text, r, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  " + line + "\n", "  • " + lost + "\n", "  • " + cut + "\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks the line %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := report.JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Inputs []map[string]any `json:"inputs"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"source": "spillway", "path": log, "events": 15.0, "unreadable_lines": 1.0, "duplicates_skipped": 0.0,
		"records_lost": 15.0, "gap_count": 1.0, "cut_lines": 1.0, "gaps": []any{map[string]any{"lost": 15.0, "from": "2026-11-30T09:10:00Z",
			"until": "2026-11-30T09:24:00Z", "error": "write /home/me/.local/state/spillway/events.jsonl: no space left on device"}}}
	if b, _ := json.Marshal(got.Inputs); len(got.Inputs) != 1 || !jsonEqual(got.Inputs[0], want) {
		t.Fatalf("JSON inputs %s\nwant [%v]", b, want)
	}
	var page bytes.Buffer
	if err := report.HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<ul id="inputs"><li>` + line + `</li></ul>`, "<li>" + lost + "</li>"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// its times in the report's zone
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	r = build(t, report.Options{EventLog: log, EventLogNamed: true, Only: []string{"spillway"}, Loc: berlin})
	if got, want := report.InputLines(r), "spillway "+log+": 15 events, 15 records lost between Mon 2026-11-30 10:10 and 10:24, 1 half-written record skipped"; !slices.Equal(got, []string{want}) {
		t.Fatalf("in Berlin: %q, want %q", got, want)
	}
	// a gap outside the range read is not counted
	r = build(t, report.Options{EventLog: log, EventLogNamed: true, Only: []string{"spillway"}, Loc: time.UTC, Since: time.Date(2026, 11, 30, 9, 25, 0, 0, time.UTC)})
	if in := r.Inputs[0]; in.Events != 5 || in.Lost != 0 || in.GapCount != 0 {
		t.Fatalf("from 09:25: input %+v, want 5 events and nothing lost", in)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
