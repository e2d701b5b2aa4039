//go:build race

package formats

// raceOn: the race detector is on (its instrumentation makes a byte's work
// some ten times slower).
const raceOn = true
