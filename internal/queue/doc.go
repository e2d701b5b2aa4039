// Package queue is `spillway queue`: durable prompt and agent tasks with
// priorities, minimum tiers, run windows and multi-step tasks, worked a few
// at a time through the one policy engine.
//
// Storage is River: SQLite by default (one file, WAL, a single connection,
// as River on SQLite needs) or Postgres for teams. River runs the workers,
// orders by priority, holds scheduled tasks and retries failed attempts.
// spillway adds, in its own tables in the same database, what River cannot
// guarantee across a SIGKILL: each finished step's output (so a task
// resumes at the step that did not finish), each finished task's result (so
// a task whose completion River had not yet saved is never run twice), and
// the runners' heartbeats and their steps' process groups, so that a dead
// runner's tasks come back within a minute with its agents killed, while a
// live runner's long task is never taken (runner.go).
//
// Every step goes to the one driver (policy.Engine.Run): a prompt step
// through the library's transport (one per worker), a command step under
// spillway exec. Neither sleeps through a rung of the ladder inside a
// worker: the driver parks the request, and the task is snoozed until then,
// which uses no attempt (and no later than its models' breakers let a probe
// through). The engine, and so its breakers and pacer, is shared by every
// worker: an open breaker moves the whole queue down a tier together, and
// attempts to each model start queue.gap_min to queue.gap_max apart
// (River's scheduler has no start-rate control, and wakes only every 5 s).
// Within a priority, tasks start in the order they were added, whatever
// they waited for or however they were handed back, across runners and
// under a global limit (order.go).
// A failure no retry can fix (auth, quota, bad_request, content_filter, a
// model that is not configured) ends the task at once as failed, with its
// class, without River's retries; other failures (network, timeouts, an
// agent that failed on its own) are River's to retry.
// docs/queue-river-notes.md has what a prototype established about River on
// both databases.
package queue
