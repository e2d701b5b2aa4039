// Package queue is `spillway queue`: durable prompt and agent tasks with
// priorities, minimum tiers, run windows and multi-step tasks, worked a few
// at a time through the one policy engine.
//
// In progress: the task model, the step-file parser, run windows and the
// River-backed store (SQLite by default, Postgres for teams) with status
// mapping are here; the runner (workers on the policy engine, capacity
// snoozes, crash-safe steps) and the CLI come next. docs/queue-river-notes.md
// has what a prototype established about River on both databases.
package queue
