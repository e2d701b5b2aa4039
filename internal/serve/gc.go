package serve

import "runtime/debug"

// GatewayGC is the garbage collector's target (GOGC) for a gateway's
// process. A gateway's live heap is small (the requests in flight) and it
// allocates per request at a steady rate, so at Go's default of 100 it
// collects many times a second, and each cycle's assists land on the
// requests running then: at 1000 req/s the added time to first byte fell
// by about a fifth with 400 (BENCHMARKS.md). The price is a heap up to five
// times the live one, which for a gateway is megabytes, not hundreds.
const GatewayGC = 400

// TuneGC sets the collector's target to percent, unless the environment
// sets GOGC: the user's word wins (GOGC=100 restores Go's default, off
// turns the collector off). It reports whether it set it.
func TuneGC(getenv func(string) string, percent int) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}
