package sim

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Demand is one request of a batch, as LowerBound sees it.
type Demand struct {
	Prompt      string
	InputTokens int
	Stream      bool
	// Models are the models allowed to serve it (its minimum tier and up).
	Models []string
}

// LowerBound is how long serving every demand takes at the very least, in
// real time from the moment the simulator's clock shows start, given the
// room the background load leaves in each pool. No client, however clever
// its schedule, finishes sooner; it is a bound, not a schedule.
//
// Two limits make it. First, for every set of models, the work of the
// demands that may only use models of that set (slot-seconds: a request's
// pool cost times how long it holds it) must fit into the free room of
// those pools: the whole-slot room a request can actually take, summed over
// time. Second, no demand is served faster than its own answer streams.
// A bound that cannot be met within limit returns false.
func (s *Server) LowerBound(ds []Demand, start time.Time, limit time.Duration) (time.Duration, bool) {
	if len(ds) == 0 {
		return 0, true
	}
	type need struct {
		set  string
		work float64 // slot-seconds (real)
	}
	needs := make([]need, 0, len(ds))
	sets := map[string][]string{}
	var longest time.Duration
	for _, d := range ds {
		models := slices.Clone(d.Models)
		slices.Sort(models)
		key := strings.Join(models, ",")
		sets[key] = models
		work, fastest := math.Inf(1), time.Duration(math.MaxInt64)
		for _, m := range models {
			dur := s.holdTime(m, d)
			work = math.Min(work, s.cost(m, d.InputTokens)*dur.Seconds())
			fastest = min(fastest, dur)
		}
		longest = max(longest, fastest)
		needs = append(needs, need{set: key, work: work})
	}
	bound := longest
	for _, models := range sets {
		// the demands confined to this set of models
		var work float64
		for _, n := range needs {
			if subset(sets[n.set], models) {
				work += n.work
			}
		}
		t, ok := s.timeToServe(models, work, start, limit)
		if !ok {
			return limit, false
		}
		bound = max(bound, t)
	}
	return bound, true
}

// holdTime is how long a demand holds its slot on model m: the answer's
// tokens at the streaming rate (the first token of a stream comes at once).
func (s *Server) holdTime(m string, d Demand) time.Duration {
	n := len(Tokens(Answer(m, d.Prompt, s.scn.AnswerTokens)))
	if d.Stream && n > 0 {
		n--
	}
	return s.tokenDelay() * time.Duration(n)
}

// timeToServe is the real time until the free room of models, summed from
// start, reaches work slot-seconds. It steps one simulated second at a time
// (the load changes per simulated minute and with the hour).
func (s *Server) timeToServe(models []string, work float64, start time.Time, limit time.Duration) (time.Duration, bool) {
	if work <= 0 {
		return 0, true
	}
	f := s.clock.Factor()
	if f <= 0 {
		f = 1
	}
	step := time.Duration(float64(time.Second) / f) // real time per simulated second
	if step <= 0 {
		step = time.Nanosecond
	}
	var done float64
	for at := time.Duration(0); at < limit; at += step {
		simAt := start.Add(time.Duration(float64(at) * f))
		var room float64
		for _, m := range models {
			size := float64(s.poolSpec(m).Size)
			room += math.Max(0, math.Floor(size-s.Load(m, simAt)*size+1e-9))
		}
		gain := room * step.Seconds()
		if done+gain >= work {
			return at + time.Duration((work-done)/room*float64(time.Second)), true
		}
		done += gain
	}
	return limit, false
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
