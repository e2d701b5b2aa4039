package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
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

// Text writes the verdict, then the findings as a table.
func Text(w io.Writer, r Report) error {
	fmt.Fprintf(w, "%s\n\n", r.Verdict)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tAREA\tSUBJECT\tFINDING\tEVIDENCE")
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Status, f.Area, f.Subject, f.Summary, oneLine(f.Evidence))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range r.Unreached {
		fmt.Fprintf(w, "\nNot checked: %s", u)
	}
	_, err := fmt.Fprintf(w, "\nCost: %s\n", r.Cost)
	return err
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
