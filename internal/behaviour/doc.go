// Package behaviour holds spillway's behaviour suite (its tests are the
// package): one table of behaviours (capacity fallback, Retry-After, the
// wait budget, network retries, each fail-fast class, the watchdogs, broken
// streams, pacing, breakers, context length, …) run against every front end
// of the one driver: the gateway, the Go library and, where a behaviour
// applies to a CLI agent, spillway exec with a fake agent. The upstream is
// the simulator or a test server on loopback; time is a fake clock, so no
// wait is slept for real.
package behaviour
