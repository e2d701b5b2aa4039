package sim

import (
	"testing"
	"time"
)

func TestLowerBound(t *testing.T) {
	start := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	flat := func(heavyLoad float64) *Scenario {
		s := base("flat", "")
		s.Noise = 0
		s.TokenRate, s.AnswerTokens = 100, 10 // 10 tokens: 100 ms non-streaming, 90 ms streaming
		s.Tiers = map[string]Pool{
			"heavy": {Size: 4, PeakLoad: heavyLoad, QuietLoad: heavyLoad},
			"light": {Size: 10, PeakLoad: 0, QuietLoad: 0},
		}
		return s
	}
	heavy := []string{"gpt-6-astra"}
	any := []string{"gpt-6-astra", "gpt-6-luna"}
	prompt := "a b c" // Answer pads it to 10 tokens
	cases := []struct {
		name   string
		load   float64
		ds     []Demand
		limit  time.Duration
		want   time.Duration
		within time.Duration
		ok     bool
	}{
		{"one task: its own answer time", 0.5, []Demand{{Prompt: prompt, Models: heavy}}, time.Minute, 100 * time.Millisecond, time.Millisecond, true},
		{"streaming holds one token less", 0.5, []Demand{{Prompt: prompt, Models: heavy, Stream: true}}, time.Minute, 90 * time.Millisecond, time.Millisecond, true},
		// two free heavy slots (4 × (1-0.5)); 8 tasks × 0.1 s = 0.8 slot-s → 0.4 s
		{"heavy room limits heavy work", 0.5, repeat(Demand{Prompt: prompt, Models: heavy}, 8), time.Minute, 400 * time.Millisecond, 20 * time.Millisecond, true},
		// load 0.6: 2.4 slots busy, 1.6 free, of which one whole slot → 0.8 s
		{"only whole slots count", 0.6, repeat(Demand{Prompt: prompt, Models: heavy}, 8), time.Minute, 800 * time.Millisecond, 20 * time.Millisecond, true},
		// 8 heavy + 40 any: 4.8 slot-s over 2+10 slots → 0.4 s; heavy alone 0.4 s
		{"the union of pools takes the rest", 0.5, append(repeat(Demand{Prompt: prompt, Models: heavy}, 8), repeat(Demand{Prompt: prompt, Models: any}, 40)...), time.Minute, 400 * time.Millisecond, 20 * time.Millisecond, true},
		// fat: 20000 tokens cost 1+2 = 3 slots on light, capped at 2 on heavy; min work is heavy's 2×0.1
		{"fat demands cost more slots", 0.5, repeat(Demand{Prompt: prompt, InputTokens: 20000, Models: heavy}, 4), time.Minute, 400 * time.Millisecond, 20 * time.Millisecond, true},
		{"a full pool never serves", 1, []Demand{{Prompt: prompt, Models: heavy}}, 5 * time.Second, 5 * time.Second, 0, false},
		{"nothing to do", 0.5, nil, time.Minute, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(Options{Scenario: flat(c.load), Clock: &ManualClock{T: start}, TokenRate: -1})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := s.LowerBound(c.ds, start, c.limit)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v (bound %s)", ok, c.ok, got)
			}
			if d := got - c.want; d < -c.within || d > c.within {
				t.Fatalf("bound = %s, want %s ± %s", got, c.want, c.within)
			}
		})
	}
}

// The bound follows the clock's speed: at fast:60 a simulated minute of room
// passes in a real second.
func TestLowerBoundFollowsClockSpeed(t *testing.T) {
	start := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	s := base("outage-then-room", "")
	s.Noise, s.TokenRate, s.AnswerTokens = 0, 100, 10
	s.Outages = []Outage{{After: 0, For: d(10 * time.Minute)}}
	srv, err := New(Options{Scenario: s, Clock: &FastClock{Start: start, RealStart: time.Now(), Speed: 60}, TokenRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := srv.LowerBound([]Demand{{Prompt: "x", Models: []string{"gpt-6-astra"}}}, start, time.Minute)
	// ten simulated minutes of outage are ten real seconds, then 0.1 s of work
	if !ok || got < 10*time.Second || got > 10*time.Second+150*time.Millisecond {
		t.Fatalf("bound = %s (ok %v), want about 10.1s", got, ok)
	}
}

func repeat(d Demand, n int) []Demand {
	out := make([]Demand, n)
	for i := range out {
		out[i] = d
	}
	return out
}
