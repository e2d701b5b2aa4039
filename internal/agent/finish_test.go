package agent

import (
	"testing"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/policy"
)

// exec --until-reset that stops at a usage limit says why it did not wait
// for the reset, never "use --until-reset".
func TestNotWaited(t *testing.T) {
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	limit := func(in time.Duration) classify.Verdict {
		v := classify.Verdict{Class: classify.UsageLimit}
		if in > 0 {
			v.ResetsAt = now.Add(in)
		}
		return v
	}
	cases := []struct {
		name    string
		v       classify.Verdict
		out     policy.Outcome
		maxWait time.Duration
		want    string
	}{
		{"the reset is beyond --max-wait", limit(2 * time.Minute), policy.Outcome{}, 5 * time.Second,
			"Your plan's usage window is used up; it resets at 2026-12-06 01:02 UTC (in 2m0s), beyond --max-wait 5s: give a longer --max-wait, or none, to wait for it."},
		{"beyond what is left of it", limit(4 * time.Second), policy.Outcome{Waited: 2 * time.Second}, 5 * time.Second,
			"Your plan's usage window is used up; it resets at 2026-12-06 01:00 UTC (in 4s), beyond --max-wait 5s: give a longer --max-wait, or none, to wait for it."},
		{"no time said", limit(0), policy.Outcome{}, 0,
			"Your plan's usage window is used up, and the agent did not say when it resets, so --until-reset has no time to wait for. Wait for the reset, or go on with another plan or provider."},
		{"said again after its reset: the plan's words", limit(time.Minute), policy.Outcome{Reason: "spillway: usage_limit: the plan's usage window is used up; it did not reset at the time it said, 3 times"}, 0,
			"usage_limit: the plan's usage window is used up; it did not reset at the time it said, 3 times"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := notWaited(c.v, c.out, c.maxWait, now); got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
