package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Exit codes of spillway doctor (1 and 2 keep their meaning: an error, a
// usage mistake).
const (
	ExitHealthy  = 0
	ExitDegraded = 3
	ExitBroken   = 4
)

// ExitCode is the exit code of a report.
func (r Report) ExitCode() int {
	switch r.Status {
	case Broken:
		return ExitBroken
	case Degraded:
		return ExitDegraded
	}
	return ExitHealthy
}

// JSON writes the report as JSON.
func JSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// width is what a line of the findings takes at most: a terminal's 100
// columns (a finding listing every model of a provider would otherwise
// pad every row to it).
const width = 100

// Text writes the verdict, then the findings as a table: status, area and
// subject in columns, the finding wrapped beside them, its evidence on the
// lines under it.
func Text(w io.Writer, r Report) error {
	fmt.Fprintf(w, "%s\n\n", r.Verdict)
	ws, wa, wsub := len("STATUS"), len("AREA"), len("SUBJECT")
	for _, f := range r.Findings {
		ws, wa, wsub = max(ws, len(f.Status)), max(wa, len(f.Area)), max(wsub, len(f.Subject))
	}
	wsub = min(wsub, 40)
	indent := ws + wa + wsub + 6
	room := max(width-indent, 30)
	pad := strings.Repeat(" ", indent)
	row := func(status, area, subject, finding string) {
		lines := wrap(finding, room)
		if len(subject) > wsub { // a long subject takes its own line
			fmt.Fprintf(w, "%-*s  %-*s  %s\n", ws, status, wa, area, subject)
			status, area, subject = "", "", ""
		}
		fmt.Fprintf(w, "%-*s  %-*s  %-*s  %s\n", ws, status, wa, area, wsub, subject, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%s\n", pad, l)
		}
	}
	row("STATUS", "AREA", "SUBJECT", "FINDING")
	for _, f := range r.Findings {
		row(string(f.Status), f.Area, f.Subject, f.Summary)
		if ev := oneLine(f.Evidence); ev != "" {
			for _, l := range wrap("evidence: "+ev, room) {
				fmt.Fprintf(w, "%s%s\n", pad, l)
			}
		}
	}
	for _, u := range r.Unreached {
		fmt.Fprintf(w, "\nNot checked: %s", u)
	}
	_, err := fmt.Fprintf(w, "\nCost: %s\n", r.Cost)
	return err
}

// wrap breaks s into lines of at most n bytes at spaces (a word longer
// than n gets a line of its own); one empty line for an empty s.
func wrap(s string, n int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= n:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
	}
	return append(out, line)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
