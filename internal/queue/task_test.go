package queue

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseSteps(t *testing.T) {
	t.Parallel()
	data, _ := os.ReadFile("../../testdata/queue/steps.yaml")
	steps, err := ParseSteps("steps.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || steps[0].Model != "gpt-6-astra" || steps[2].IsPrompt() || steps[2].Command[0] != "codex" {
		t.Fatalf("%+v", steps)
	}
	if got := steps[1].Expand("1. fixes").Prompt; !strings.Contains(got, "outline:\n1. fixes") {
		t.Fatalf("expand: %q", got)
	}
	bad, _ := os.ReadFile("../../testdata/queue/bad-steps.yaml")
	_, err = ParseSteps("bad-steps.yaml", bad)
	if err == nil {
		t.Fatal("bad file accepted")
	}
	for _, want := range []string{
		"bad-steps.yaml:1: steps[0]: the first step has no previous output to use",
		`bad-steps.yaml:3: steps[1].name: "outline" is also the name of steps[0]`,
		"bad-steps.yaml:3: steps[1]: system and model belong to prompt steps",
		"bad-steps.yaml:6: steps[2]: needs a prompt or a command",
		"bad-steps.yaml:7: steps[3].promt: unknown field; allowed: name, prompt, system, model, command",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"name: x\n", "must be a YAML list of steps"},
		{"", "no steps"},
		{"- [a, b\n", "YAML"},
	} {
		if _, err := ParseSteps("f.yaml", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v", c.in, err)
		}
	}
}

func TestWindow(t *testing.T) {
	t.Parallel()
	at := func(h, m int) time.Time { return time.Date(2026, 11, 25, h, m, 0, 0, time.UTC) }
	night, err := ParseWindow("22:00-07:00")
	if err != nil {
		t.Fatal(err)
	}
	day, _ := ParseWindow("09:30-17:00")
	cases := []struct {
		w    Window
		at   time.Time
		in   bool
		next time.Time
	}{
		{night, at(23, 0), true, at(23, 0)},
		{night, at(3, 0), true, at(3, 0)},
		{night, at(12, 0), false, at(22, 0)},
		{night, at(7, 0), false, at(22, 0)},
		{day, at(8, 0), false, at(9, 30)},
		{day, at(18, 0), false, at(9, 30).AddDate(0, 0, 1)},
		{day, at(10, 0), true, at(10, 0)},
		{Window{}, at(12, 0), true, at(12, 0)},
	}
	for _, c := range cases {
		if c.w.Contains(c.at) != c.in || !c.w.Next(c.at).Equal(c.next) {
			t.Errorf("%s at %s: contains %v next %v", c.w.Spec, c.at.Format("15:04"), c.w.Contains(c.at), c.w.Next(c.at))
		}
	}
	if q, _ := ParseWindow("quiet"); q.Spec != "quiet" || !q.Contains(at(23, 30)) {
		t.Fatal("quiet")
	}
	for _, bad := range []string{"22-07", "25:00-07:00", "night", "10:00"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A window starts at its wall-clock time on the days clocks change too.
func TestWindowAcrossDST(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata")
	}
	w, _ := ParseWindow("22:00-07:00")
	for _, day := range []int{1, 8} { // 2026-11-01 falls back; 2026-03-08 springs forward
		month := time.November
		if day == 8 {
			month = time.March
		}
		got := w.Next(time.Date(2026, month, day, 8, 0, 0, 0, ny))
		if got.Hour() != 22 || got.Day() != day {
			t.Errorf("%s %d: next start %v, want 22:00 that day", month, day, got)
		}
	}
}
