// Package queue is `spillway queue`: durable prompt and agent tasks with
// priorities, minimum tiers, run windows and multi-step tasks, worked a few
// at a time through the one policy engine.
//
// Storage is River: SQLite by default (one file, WAL, a single connection,
// as River on SQLite needs) or Postgres for teams. River runs the workers,
// orders by priority, holds scheduled tasks, retries failed attempts and
// rescues the tasks of a dead worker. spillway adds, in its own two tables in
// the same database, what River cannot guarantee across a SIGKILL: each
// finished step's output (so a task resumes at the step that did not finish)
// and each finished task's result (so a task whose completion River had not
// yet saved is never run twice).
//
// A task whose whole chain is at capacity is snoozed along the ladder, which
// uses no attempt; the policy engine (and so its breakers) is shared by every
// worker, so an open breaker moves the whole queue down a tier together.
// Task starts are spaced by a jittered gap of our own (River's scheduler has
// no start-rate control). docs/queue-river-notes.md has what a prototype
// established about River on both databases.
package queue
