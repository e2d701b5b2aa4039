package policy

import (
	"fmt"

	"github.com/spillway/spillway/classify"
)

// maxContinuations bounds how often one answer is continued.
const maxContinuations = 3

// resume decides how an answer that broke after reaching the caller goes
// on, its front end able to continue it: on the same candidate (after a
// cut or a stall: the model is fine), or on the next that takes a partial
// assistant turn (after an overload, or when the same one does not), at
// once and while the budget lasts; else fail (the front end ends the
// answer). While resuming, every step is a continuation.
func (p *plan) resume(c Candidate, v classify.Verdict) step {
	p.at(c)
	p.resuming = true
	p.continuations++
	p.lastBad = v
	switch {
	case p.continuations > maxContinuations:
		return p.fail(v, fmt.Sprintf("the answer broke after output started and was continued %d times already", maxContinuations))
	case p.left() <= 0:
		return p.fail(v, fmt.Sprintf("the answer broke after output started, and the wait budget of %s is spent", p.budget))
	}
	if v.Class != classify.Capacity && p.e.prefills(c) {
		return step{Action: send, Candidate: c}
	}
	if next, ok := p.onward(nil); ok {
		return p.switchTo(next, c)
	}
	if p.e.prefills(c) {
		return step{Action: send, Candidate: c}
	}
	return p.fail(v, "the answer broke after output started, and no model that takes a partial answer to continue is left")
}

// delivered is the last committed answer of a run that continues a
// broken one, and its candidate (rare: kept apart from the run).
type delivered struct {
	res Result
	to  Candidate
}
