package policy

import (
	"strings"
	"time"

	"github.com/spillway/spillway/classify"
)

// WaitKind is what a request waited for.
type WaitKind int

// The kinds of wait, in the order Waits.String names them.
const (
	// WaitPace: a pacing slot and turn of a model under pressure.
	WaitPace WaitKind = iota
	// WaitRetry: before trying the same model again (a rate limit's
	// Retry-After, a network gap, a server error's short retry).
	WaitRetry
	// WaitBackoff: every model of the chain was full; before walking it
	// again.
	WaitBackoff
	// WaitRung: a rung of the long-wait ladder (exec, the queue).
	WaitRung
	// WaitReset: a usage limit's reset.
	WaitReset
	waitKinds
)

var waitNames = [waitKinds]string{"pace", "retry", "backoff", "rung", "reset"}

// Waits is how long a request waited, by what for (Outcome.Waited is their
// sum).
type Waits [waitKinds]time.Duration

// String names each kind waited for with its time, "pace 1.2s, backoff
// 2s"; "" when nothing was waited.
func (w Waits) String() string {
	var b strings.Builder
	for k, d := range w {
		if d <= 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(waitNames[k] + " " + classify.FormatWait(d))
	}
	return b.String()
}
