package dash

import (
	"math/bits"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/events"
	"github.com/spillway/spillway/policy"
)

func (b *Board) ring(key string) *ring {
	r := b.stats[key]
	if r == nil {
		r = &ring{}
		b.stats[key] = r
	}
	return r
}

// outcome is what an attempt says of the model's health.
type outcome uint8

const (
	okay    outcome = iota
	failed          // the model's or the provider's failure
	ignored         // the request's own fault, a lost hedge, the caller's end: says nothing of the model
)

// listed reports whether rec is one of the page's recent failures: every
// failure but the request's own fault (its body, its size, its content),
// a lost hedge and one the caller ended. A key refused, a quota, a usage
// window or a network failure is listed, though it says nothing of the
// model (outcomeOf).
func listed(rec events.Record) bool {
	switch rec.Class {
	case string(classify.OK), string(classify.BadRequest), string(classify.ContextLength), string(classify.ContentFilter), policy.HedgeLost:
		return false
	}
	return !rec.CallerEnded && !rec.HedgeLost
}

// outcomeOf is what an attempt of class says of its model: only what the
// breaker holds against a model (capacity, timeout) and a server error
// (which the plan treats as capacity after its retry) are its failures.
// The request's own fault, the caller's key or account (auth, quota, a
// plan's usage window, a rate limit), the network (a provider down is
// shown on its own) and what is not known say nothing of it.
func outcomeOf(class string) outcome {
	switch class {
	case string(classify.OK):
		return okay
	case string(classify.Capacity), string(classify.Timeout), string(classify.ServerError):
		return failed
	}
	return ignored
}

// A ring keeps a model's (or deployment's) outcomes in time slots over
// the window: counts and a latency histogram per slot, so that the page's
// numbers cover the last 15 minutes at any rate, in constant memory.
const (
	slot      = 10 * time.Second
	slots     = int(window / slot)
	perOctave = 4                // latency bins per doubling: a median within 12%
	bins      = 24*perOctave + 1 // up to 2^25 ms (9.3 hours); the last takes the rest
)

// bucket is one slot's outcomes.
type bucket struct {
	n      int64 // the slot's number (unix ms / slot); 0: unused
	ok, ko int32
	lat    [bins]uint32 // the answered attempts' latencies
}

type ring struct{ b [slots]bucket }

// binOf is the latency bin of ms: exact below 4 ms, then perOctave bins
// per doubling.
func binOf(ms int64) int {
	if ms < perOctave {
		return int(max(ms, 0))
	}
	k := bits.Len64(uint64(ms)) - 1 // 2^k ≤ ms < 2^(k+1), k ≥ 2
	sub := int(ms>>(k-2)) & (perOctave - 1)
	return min(perOctave*(k-1)+sub, bins-1)
}

// binMid is the middle of bin i's range, in ms.
func binMid(i int) int64 {
	if i < perOctave {
		return int64(i)
	}
	k, sub := i/perOctave+1, int64(i%perOctave)
	lo := (perOctave + sub) << (k - 2)
	hi := (perOctave+sub+1)<<(k-2) - 1
	return (lo + hi) / 2
}

// add counts one attempt that ended at (unix ms) as o, now being now.
func (r *ring) add(at, now, latency int64, o outcome) {
	if o == ignored {
		return
	}
	cur := max(now/slot.Milliseconds(), 1)
	n := min(max(at/slot.Milliseconds(), 1), cur) // an end ahead of now counts now
	bk := &r.b[int(n%int64(slots))]
	if bk.n != n {
		if bk.n > n && bk.n <= cur { // the slot holds a later one: this attempt is older than the window
			return
		}
		*bk = bucket{n: n} // a slot from before the clock stepped back is stale too
	}
	if o == okay {
		bk.ok++
		bk.lat[binOf(latency)]++
	} else {
		bk.ko++
	}
}

// Rolling is a model's or deployment's attempts over the last minutes.
type Rolling struct {
	OK       int     `json:"ok"`
	Failed   int     `json:"failed"`
	Rate     float64 `json:"success_rate"` // of OK+Failed; 0 with none
	P50MS    int64   `json:"p50_ms"`       // of the answered ones (within 12%); 0 with none
	RecentOK int     `json:"-"`
	RecentKO int     `json:"-"`
}

// rolling sums r's slots within the window before now (and within the
// recent span).
func (r *ring) rolling(now time.Time) Rolling {
	var out Rolling
	if r == nil {
		return out
	}
	cur := now.UnixMilli() / slot.Milliseconds()
	recent := cur - int64(recentSpan/slot)
	var lat [bins]uint32
	for i := range r.b {
		bk := &r.b[i]
		if bk.n == 0 || bk.n <= cur-int64(slots) || bk.n > cur {
			continue
		}
		out.OK += int(bk.ok)
		out.Failed += int(bk.ko)
		if bk.n > recent {
			out.RecentOK += int(bk.ok)
			out.RecentKO += int(bk.ko)
		}
		for j, c := range bk.lat {
			lat[j] += c
		}
	}
	if n := out.OK + out.Failed; n > 0 {
		out.Rate = float64(out.OK) / float64(n)
	}
	if out.OK > 0 {
		half, seen := uint32((out.OK+1)/2), uint32(0)
		for j, c := range lat {
			if seen += c; seen >= half {
				out.P50MS = binMid(j)
				break
			}
		}
	}
	return out
}

// status is a model's or deployment's word on the page: failing (breaker
// open, or most recent attempts failed), probing (half-open), degraded
// (some recent attempts failed), healthy, or idle (no recent attempts).
func status(breaker policy.BreakerState, down bool, r Rolling) string {
	switch {
	case breaker == policy.StateOpen || down:
		return "failing"
	case breaker == policy.StateHalfOpen:
		return "probing"
	case r.RecentKO > 0 && r.RecentKO >= r.RecentOK:
		return "failing"
	case r.RecentKO > 0:
		return "degraded"
	case r.RecentOK > 0:
		return "healthy"
	}
	return "idle"
}
