// Package proc ends what an agent started: process groups, descendants and
// the orphans spillway adopts as their subreaper, with the start time that
// tells a process from a later one with the same pid. Spillway exec and the
// queue's rescue of a dead runner's tasks use it.
package proc
