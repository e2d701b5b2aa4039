package sim

import (
	"hash/fnv"
	"math"
	"time"
)

// DayShape is how busy the world is at t, from 0 (night) to 1 (weekday
// 10:00–16:00), in t's own time zone: ramps 08:00–10:00 and 16:00–19:00, and
// weekends at 30%.
func DayShape(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
	var s float64
	switch {
	case h >= 10 && h < 16:
		s = 1
	case h >= 8 && h < 10:
		s = (h - 8) / 2
	case h >= 16 && h < 19:
		s = 1 - (h-16)/3
	}
	if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
		s *= 0.3
	}
	return s
}

// noise is a deterministic value in [-1, 1] for (seed, model, minute).
func noise(seed int64, model string, t time.Time) float64 {
	h := fnv.New64a()
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(seed >> (8 * i))
		b[8+i] = byte(t.Unix() / 60 >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(model))
	return float64(h.Sum64()%20001)/10000 - 1
}

// Load is the background load of a pool at t, as a fraction of its size.
func (s *Server) Load(model string, t time.Time) float64 {
	p := s.poolSpec(model)
	if s.inOutage(model, t) {
		return 1
	}
	l := p.QuietLoad + (p.PeakLoad-p.QuietLoad)*DayShape(t) + s.scn.Noise*noise(s.seed, model, t)
	return math.Max(0, math.Min(1, l))
}

func (s *Server) inOutage(model string, t time.Time) bool {
	for _, o := range s.scn.Outages {
		from := s.start.Add(o.After.D())
		if t.Before(from) || !t.Before(from.Add(o.For.D())) {
			continue
		}
		if len(o.Models) == 0 {
			return true
		}
		for _, m := range o.Models {
			if m == model {
				return true
			}
		}
	}
	return false
}

func (s *Server) poolSpec(model string) Pool {
	if p, ok := s.scn.Models[model]; ok {
		return p
	}
	if m, ok := s.models[model]; ok {
		if p, ok := s.scn.Tiers[m.tier]; ok {
			return p
		}
	}
	return Pool{Size: 8}
}

// cost is how many pool slots a request of inputTokens takes: one, plus one
// per fat_tokens of input, but never more than half the pool, so that a
// request that fits the context window can always be served by a quiet pool.
func (s *Server) cost(model string, inputTokens int) float64 {
	c := 1 + float64(inputTokens/s.scn.FatTokens)
	return math.Min(c, math.Max(1, float64(s.poolSpec(model).Size)/2))
}

// admit takes room in the model's pool, or says it is full. The caller must
// release what it took.
func (s *Server) admit(model string, cost float64, now time.Time) (ok bool, load float64) {
	spec := s.poolSpec(model)
	load = s.Load(model, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stat(model)
	bg := load * float64(spec.Size)
	if st.inflightCost+bg+cost > float64(spec.Size)+1e-9 {
		return false, load
	}
	st.inflightCost += cost
	st.Inflight++
	if st.Inflight > st.PeakConcurrency {
		st.PeakConcurrency = st.Inflight
	}
	s.statsChanged()
	return true, load
}

func (s *Server) release(model string, cost float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stat(model)
	st.inflightCost -= cost
	st.Inflight--
	s.statsChanged()
}

// rateWindow is one key's recent requests to one model.
type rateWindow struct {
	stamps []stamp
}

type stamp struct {
	t      time.Time
	tokens int
}

// rateVerdict says whether a request fits the limits, and what the
// rate-limit headers should say.
type rateVerdict struct {
	ok                    bool
	which                 string        // "requests" or "tokens", when refused
	wait                  time.Duration // simulated time until it would fit
	limitReq, limitTok    int
	remainReq, remainTok  int
	resetReq, resetTok    time.Duration // simulated
	tooLargeForTPM        bool
	usedReq, usedTok, req int
}

// checkRate applies lim to key's window for model at now, recording the
// request when it fits.
func (s *Server) checkRate(key, model string, lim Limits, tokens int, now time.Time) rateVerdict {
	v := rateVerdict{ok: true, limitReq: lim.RPM, limitTok: lim.TPM, req: tokens}
	if lim.RPM <= 0 && lim.TPM <= 0 {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := key + "\x00" + model
	w := s.rates[id]
	if w == nil {
		w = &rateWindow{}
		s.rates[id] = w
	}
	cut := now.Add(-time.Minute)
	i := 0
	for i < len(w.stamps) && !w.stamps[i].t.After(cut) {
		i++
	}
	w.stamps = w.stamps[i:]
	used := 0
	for _, st := range w.stamps {
		used += st.tokens
	}
	v.usedReq, v.usedTok = len(w.stamps), used
	if lim.RPM > 0 && len(w.stamps) >= lim.RPM {
		v.ok, v.which = false, "requests"
		v.wait = w.stamps[len(w.stamps)-lim.RPM].t.Add(time.Minute).Sub(now)
	}
	if v.ok && lim.TPM > 0 {
		if tokens > lim.TPM {
			v.ok, v.which, v.tooLargeForTPM = false, "tokens", true
		} else if used+tokens > lim.TPM {
			v.ok, v.which = false, "tokens"
			free := used + tokens - lim.TPM
			for _, st := range w.stamps {
				free -= st.tokens
				if free <= 0 {
					v.wait = st.t.Add(time.Minute).Sub(now)
					break
				}
			}
		}
	}
	if v.ok {
		w.stamps = append(w.stamps, stamp{t: now, tokens: tokens})
		used += tokens
	}
	v.remainReq = max(lim.RPM-len(w.stamps), 0)
	v.remainTok = max(lim.TPM-used, 0)
	if len(w.stamps) > 0 { // back to the full limit once the newest request leaves the window
		v.resetReq = w.stamps[len(w.stamps)-1].t.Add(time.Minute).Sub(now)
		v.resetTok = v.resetReq
	}
	if v.wait < 0 {
		v.wait = 0
	}
	return v
}
