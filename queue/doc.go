// Package queue is `spillway queue`: durable prompt and agent tasks with
// priorities, minimum tiers, run windows and multi-step tasks, worked a few
// at a time through the one policy engine. (In progress: this file set has
// the task model and the step-file parser; the River-backed store and the
// runner come next.)
package queue
