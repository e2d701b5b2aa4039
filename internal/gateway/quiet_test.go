package gateway

import (
	"testing"
	"time"

	"github.com/spillway/spillway/policy"
	"github.com/spillway/spillway/policy/policytest"
)

// Memory is given back once after 30 s with nothing in flight: not while a
// request is open however long it runs, not again while the gateway stays
// idle, and a request that comes before the 30 s are up starts them anew.
// Each step is a begin (+), an end (-) or a move of the fake clock; want is
// the give-backs so far after each step, and armed whether one is pending.
func TestQuietGivesMemoryBackOnce(t *testing.T) {
	type step struct {
		op    string // "+", "-", or a duration to advance
		want  int64
		armed bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"30 s after the last request", []step{{"+", 0, false}, {"-", 0, true}, {"29s", 0, true}, {"1s", 1, false}}},
		{"once, not again while idle", []step{{"+", 0, false}, {"-", 0, true}, {"30s", 1, false}, {"10m", 1, false}, {"+", 1, false}, {"-", 1, true}, {"30s", 2, false}}},
		{"never while a request is open", []step{{"+", 0, false}, {"10m", 0, false}, {"-", 0, true}, {"30s", 1, false}}},
		{"the last of several out arms it", []step{{"+", 0, false}, {"+", 0, false}, {"-", 0, false}, {"1m", 0, false}, {"-", 0, true}, {"30s", 1, false}}},
		{"a request before the 30 s starts them anew", []step{{"+", 0, false}, {"-", 0, true}, {"20s", 0, true}, {"+", 0, false}, {"-", 0, true}, {"20s", 0, true}, {"10s", 1, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := policytest.New(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
			freed := make(chan struct{}, 8)
			q := &quiet{clock: func() policy.Clock { return clk }, giveBack: func() { freed <- struct{}{} }, after: quietAfter}
			var got int64
			for i, s := range tc.steps {
				switch s.op {
				case "+":
					q.begin()
				case "-":
					q.end()
				default:
					d, _ := time.ParseDuration(s.op)
					clk.Advance(d)
				}
				for got < s.want { // the timer fires in its own goroutine
					select {
					case <-freed:
						got++
					case <-time.After(10 * time.Second):
						t.Fatalf("step %d (%s): memory given back %d times, want %d", i, s.op, got, s.want)
					}
				}
				if len(freed) > 0 {
					t.Fatalf("step %d (%s): memory given back more than %d times", i, s.op, s.want)
				}
				// what is pending says what can come: a give-back that is
				// not armed can never run
				if armed := clk.Timers() == 1; armed != s.armed || clk.Timers() > 1 {
					t.Fatalf("step %d (%s): %d timers pending, want armed %v", i, s.op, clk.Timers(), s.armed)
				}
			}
		})
	}
}
