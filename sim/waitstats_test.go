package sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/spillway/spillway/sim"
)

// WaitStats returns once its condition holds: at once when it holds
// already, on the change that makes it hold (a request served, stats
// reset) when it does not yet, and with ctx's error and the counters as
// they are when ctx ends first.
func TestWaitStats(t *testing.T) {
	srv, base := newSim(t, nil, nil)
	const model = "gpt-6-astra"
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	served := func(n int) func(sim.Stats) bool {
		return func(st sim.Stats) bool {
			if m := st.Models[model]; m != nil {
				return m.Served == n
			}
			return n == 0
		}
	}
	type result struct {
		st  sim.Stats
		err error
	}
	// wait starts WaitStats, and returns once it has checked the counters
	// a first time: a change from then on must wake it
	wait := func(ctx context.Context, cond func(sim.Stats) bool) <-chan result {
		out, checked := make(chan result, 1), make(chan struct{})
		first := true
		go func() {
			st, err := srv.WaitStats(ctx, func(st sim.Stats) bool {
				if first {
					first = false
					defer close(checked)
				}
				return cond(st)
			})
			out <- result{st, err}
		}()
		<-checked
		return out
	}
	tests := []struct {
		name   string
		cond   func(sim.Stats) bool
		cancel bool   // the context ends before the condition holds
		act    func() // what makes the condition hold, after the wait began
		served int    // the count the wait returns
	}{
		{"holds already", served(0), false, nil, 0},
		{"a request served", served(1), false, func() {
			if resp, b := post(t, base, reqSpec{"hi", "/v1/chat/completions", body, oaKey}); resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		}, 1},
		{"stats reset", served(0), false, srv.ResetStats, 0},
		{"context ends", served(5), true, nil, 0},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithCancel(t.Context())
		if tc.cancel {
			cancel()
		}
		res := wait(ctx, tc.cond)
		if tc.act != nil {
			tc.act()
		}
		r := <-res
		cancel()
		if tc.cancel != errors.Is(r.err, context.Canceled) || !tc.cancel && r.err != nil {
			t.Errorf("%s: error %v", tc.name, r.err)
		}
		if m := r.st.Models[model]; tc.served != 0 && (m == nil || m.Served != tc.served) || tc.served == 0 && m != nil && m.Served != 0 {
			t.Errorf("%s: stats %+v, want %d served", tc.name, m, tc.served)
		}
	}
}
