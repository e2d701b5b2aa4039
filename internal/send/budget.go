package send

import (
	"fmt"
	"sync/atomic"

	"github.com/spillway/spillway/classify"
)

// Budget is the memory one request may hold for its answers beyond its
// body: the text a continuation carries, a translated stream's state for
// its closing events, the output held back, a whole answer. A gateway's
// counts against gateway.max_inflight_mb as well; the library's is the
// request's own (Limit). Past it the request loses what needs the memory
// (a continuation, a hold window, a translation that can no longer be
// closed, a whole answer), never the process.
type Budget interface {
	// Take holds n more bytes for the request; false, holding nothing,
	// when a limit has no room for them.
	Take(n int64) bool
	// Give gives n bytes taken back.
	Give(n int64)
}

const (
	// MaxResume bounds the text a continuation carries: past it the
	// relay keeps no more, and a break ends the answer with the format's
	// error event.
	MaxResume = 4 << 20
	// DefaultPerRequest is what a request may hold when Options.Budget
	// is nil (gateway.max_body_mb's default).
	DefaultPerRequest = 32 << 20
	// step is what a stream takes of its budget at once: the budget's
	// lock is not taken per event.
	step = 64 << 10
)

// Limit is a Budget of n bytes for one request alone: the library's (no
// gateway-wide room).
func Limit(n int64) Budget { return &limit{max: n} }

type limit struct {
	max  int64
	used atomic.Int64
}

func (l *limit) Take(n int64) bool {
	if l.used.Add(n) > l.max {
		l.used.Add(-n)
		return false
	}
	return true
}

func (l *limit) Give(n int64) { l.used.Add(-n) }

// meter is what one stream holds of its request's budget: used, taken
// from the budget in steps.
type meter struct {
	b           Budget
	used, taken int64
}

// grow counts n more bytes used; false, counting nothing, when the budget
// has no room for them.
func (m *meter) grow(n int64) bool {
	if m.used+n <= m.taken {
		m.used += n
		return true
	}
	need := (m.used + n - m.taken + step - 1) / step * step
	if !m.b.Take(need) {
		if need = m.used + n - m.taken; !m.b.Take(need) { // the last bytes a limit has
			return false
		}
	}
	m.taken += need
	m.used += n
	return true
}

// shrink counts n bytes no longer used, and gives back what is taken
// beyond a step of what is used.
func (m *meter) shrink(n int64) {
	m.used -= n
	if give := m.taken - m.used - step; give > 0 {
		m.b.Give(give)
		m.taken -= give
	}
}

// release gives back all but keep bytes (a Resume's text, held on for the
// continuation: the request gives it back when it ends).
func (m *meter) release(keep int64) {
	if give := m.taken - keep; give > 0 {
		m.b.Give(give)
		m.taken -= give
	}
	m.used = min(m.used, m.taken)
}

// tooLarge is the verdict for an answer larger than the request may hold:
// what is the upstream's, as an event past the frame limit is (the
// driver does not send the request to that model again).
func tooLarge(what string) classify.Verdict {
	return classify.Verdict{Class: classify.ServerError, Code: classify.TooLarge, Message: fmt.Sprintf("%s: %s", what, classify.TooLargePhrase)}
}
